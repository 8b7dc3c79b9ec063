package vmcheck

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// State is what one namespace holds at a moment.
type State struct {
	// Live are the names of the VirtualMachines not being deleted, sorted;
	// LiveOn those of them powered on.
	Live, LiveOn []string
	// Deleting are the names of the VirtualMachines being deleted, sorted.
	Deleting []string
	// Foreign are the names of the VirtualMachines that the set, when it
	// exists, does not control; they count in none of the lists above.
	Foreign []string
	// Want are the vSphere names of all the VirtualMachines, sorted.
	Want []string
	// VCenter are the names of the namespace's VMs in vCenter (in every
	// vCenter observed, a name held in two appearing twice), sorted.
	VCenter []string
	// Set is the replica set asked for, nil when it does not exist.
	Set *vmv1.VirtualMachineReplicaSet
}

// Observe reads the VirtualMachines of ns, the set named set (if not
// empty) and the VMs in vCenter whose names start with ns and '-'.
func Observe(ctx context.Context, c client.Client, vc vsphere.Config, ns, set string) (State, error) {
	return ObserveAll(ctx, c, []vsphere.Config{vc}, ns, set)
}

// ObserveAll is Observe over several vCenters: State.VCenter holds the
// namespace's VMs of all of them.
func ObserveAll(ctx context.Context, c client.Client, vcs []vsphere.Config, ns, set string) (State, error) {
	var s State
	var l vmv1.VirtualMachineList
	if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return s, err
	}
	if set != "" {
		s.Set = &vmv1.VirtualMachineReplicaSet{}
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: set}, s.Set)
		if apierrors.IsNotFound(err) {
			s.Set = nil
		} else if err != nil {
			return s, err
		}
	}
	for _, vm := range l.Items {
		s.Want = append(s.Want, controllers.VSphereName(&vm))
		ref := metav1.GetControllerOfNoCopy(&vm)
		switch {
		case s.Set != nil && (ref == nil || ref.UID != s.Set.UID):
			s.Foreign = append(s.Foreign, vm.Name)
		case vm.DeletionTimestamp != nil:
			s.Deleting = append(s.Deleting, vm.Name)
		case vm.Status.PowerState == string(vmv1.PoweredOn):
			s.LiveOn = append(s.LiveOn, vm.Name)
			fallthrough
		default:
			s.Live = append(s.Live, vm.Name)
		}
	}
	for _, vc := range vcs {
		all, err := vcsim.VMNames(ctx, vc)
		if err != nil {
			return s, fmt.Errorf("list vCenter VMs at %s: %w", vc.URL, err)
		}
		s.VCenter = append(s.VCenter, slices.DeleteFunc(all, func(n string) bool { return !strings.HasPrefix(n, ns+"-") })...)
	}
	for _, l := range [][]string{s.Live, s.LiveOn, s.Deleting, s.Foreign, s.Want, s.VCenter} {
		slices.Sort(l)
	}
	return s, nil
}

// Settled reports whether the set (or, without one, the namespace) has
// exactly n VirtualMachines, all powered on and none being deleted, vCenter
// holds exactly the VMs of the namespace's VirtualMachines, and the set
// (when observed) reports n replicas, all ready.
func (s State) Settled(n int) bool {
	if len(s.Deleting) > 0 || len(s.LiveOn) != n || len(s.Live) != n || !slices.Equal(s.Want, s.VCenter) {
		return false
	}
	if s.Set == nil {
		return true
	}
	st := s.Set.Status
	return st.ObservedGeneration == s.Set.Generation && st.Replicas == int32(n) && st.ReadyReplicas == int32(n)
}

// String describes the state for a failure message.
func (s State) String() string {
	out := fmt.Sprintf("Kubernetes: live %v (powered on %v), deleting %v, foreign %v; vCenter: %v (want %v)", s.Live, s.LiveOn, s.Deleting, s.Foreign, s.VCenter, s.Want)
	if s.Set != nil {
		st := s.Set.Status
		out += fmt.Sprintf("; set: replicas %d, ready %d, terminating %d, observed generation %d of %d",
			st.Replicas, st.ReadyReplicas, st.TerminatingReplicas, st.ObservedGeneration, s.Set.Generation)
	}
	return out
}

// Scheme returns a scheme with client-go's types and the example operator's
// API, for clients and managers in its tests and tools.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(vmv1.AddToScheme(s))
	return s
}

// Spread counts the VMs in vCenter whose names start with ns and '-' per
// cluster they run in, read over the API.
func Spread(ctx context.Context, vc vsphere.Config, ns string) (map[string]int, error) {
	where, err := vcsim.VMClusters(ctx, vc)
	if err != nil {
		return nil, fmt.Errorf("read where vCenter VMs run: %w", err)
	}
	out := map[string]int{}
	for name, cluster := range where {
		if strings.HasPrefix(name, ns+"-") {
			out[cluster]++
		}
	}
	return out, nil
}
