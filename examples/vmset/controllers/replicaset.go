package controllers

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// ReplicaSetAdapter tells replicakit's binding about VirtualMachineReplicaSet
// (the owner) and VirtualMachine (the child). A VirtualMachine's zone is
// its spec.zone (kube.Zoner).
type ReplicaSetAdapter struct {
	// Zones are the zones the operator has placements for; a set listing
	// another is refused (InvalidSpec, naming it).
	Zones []string
	// Reachable, when set, says whether the vCenter holding a zone
	// answers (a nil error), and when it last did: a set's zones whose
	// vCenter does not answer are unreachable (kube.Spec.Unreachable),
	// and status says so with that time. Nil: every zone answers.
	Reachable func(zone string) (lastSeen time.Time, err error)
}

var (
	_ kube.Adapter[*vmv1.VirtualMachineReplicaSet, *vmv1.VirtualMachine]         = ReplicaSetAdapter{}
	_ kube.Zoner[*vmv1.VirtualMachine]                                           = ReplicaSetAdapter{}
	_ kube.TemplateMatcher[*vmv1.VirtualMachineReplicaSet, *vmv1.VirtualMachine] = ReplicaSetAdapter{}
)

// Spec implements kube.Adapter.
func (a ReplicaSetAdapter) Spec(s *vmv1.VirtualMachineReplicaSet) (kube.Spec, error) {
	replicas := 1
	if s.Spec.Replicas != nil {
		replicas = int(*s.Spec.Replicas)
	}
	spec := kube.Spec{
		Replicas:     replicas,
		Selector:     s.Spec.Selector.ToMeta(),
		DeletePolicy: s.Spec.DeletePolicy,
		MinReady:     time.Duration(s.Spec.MinReadySeconds) * time.Second,
		Paused:       s.Spec.Paused,
		Zones:        s.Spec.Zones,
		Rebalance:    s.Spec.Rebalance,
		// Rollouts are on for every set; a set made before they existed
		// has its VMs labelled with the current revision, not replaced,
		// unless they differ from its template (MatchesTemplate).
		ProgressDeadline: DefaultProgressDeadline,
	}
	if d := s.Spec.ProgressDeadlineSeconds; d != nil {
		spec.ProgressDeadline = time.Duration(*d) * time.Second
	}
	strategy, err := rollout(s.Spec.Strategy)
	if err != nil {
		return spec, fmt.Errorf("spec.strategy: %w", err)
	}
	spec.Rollout = &strategy
	if a.Reachable != nil {
		for _, z := range s.Spec.Zones {
			if _, err := a.Reachable(z); err != nil {
				spec.Unreachable = append(spec.Unreachable, z)
			}
		}
	}
	for _, z := range s.Spec.Zones {
		if !slices.Contains(a.Zones, z) {
			// The spec goes with the error: status still says what
			// was asked for.
			return spec, fmt.Errorf("spec.zones: zone %q has no placement in the operator's configuration (%s)", z, known(a.Zones))
		}
	}
	return spec, nil
}

// DefaultProgressDeadline is how long a rollout may go without moving
// before RolledOut says so, when spec.progressDeadlineSeconds is not set:
// a Deployment's default.
const DefaultProgressDeadline = 600 * time.Second

// rollout reads spec.strategy as the planner's Strategy.
func rollout(u vmv1.UpdateStrategy) (replicaset.Strategy, error) {
	s := replicaset.Strategy{Paused: u.Paused, ZoneByZone: u.ZoneByZone}
	switch u.Type {
	case "", "RollingUpdate":
	case "OnDelete":
		s.Type = replicaset.OnDelete
	default:
		return s, fmt.Errorf("type %q is neither RollingUpdate nor OnDelete", u.Type)
	}
	for _, a := range []struct {
		name string
		from *intstr.IntOrString
		to   *replicaset.Amount
	}{{"maxSurge", u.MaxSurge, &s.MaxSurge}, {"maxUnavailable", u.MaxUnavailable, &s.MaxUnavailable}, {"partition", u.Partition, &s.Partition}} {
		amount, err := kube.AmountFromPtr(a.from)
		if err != nil {
			return s, fmt.Errorf("%s: %w", a.name, err)
		}
		*a.to = amount
	}
	return s, nil
}

// known lists zones for an error message.
func known(zones []string) string {
	if len(zones) == 0 {
		return "it has none: give -zone or $VSPHERE_ZONES"
	}
	return "it has " + strings.Join(zones, ", ")
}

// Zone implements kube.Zoner: a VirtualMachine's zone is its spec.zone.
func (ReplicaSetAdapter) Zone(vm *vmv1.VirtualMachine) string { return vm.Spec.Zone }

// SetZone implements kube.Zoner.
func (ReplicaSetAdapter) SetZone(vm *vmv1.VirtualMachine, zone string) { vm.Spec.Zone = zone }

// MatchesTemplate implements kube.TemplateMatcher: a VirtualMachine with
// no revision label (made by an operator before rollouts, or adopted)
// was made from its set's template when its spec is the template's, but
// for the zone the set put it in when the set lists zones. One that
// differs is replaced under the set's strategy; one that matches is
// labelled with the template's revision and kept.
func (ReplicaSetAdapter) MatchesTemplate(s *vmv1.VirtualMachineReplicaSet, vm *vmv1.VirtualMachine) bool {
	got := vm.Spec
	if len(s.Spec.Zones) > 0 {
		got.Zone = s.Spec.Template.Spec.Zone
	}
	return equality.Semantic.DeepEqual(got, s.Spec.Template.Spec)
}

// NewChild implements kube.Adapter.
func (ReplicaSetAdapter) NewChild(s *vmv1.VirtualMachineReplicaSet) (*vmv1.VirtualMachine, error) {
	return &vmv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      copyMap(s.Spec.Template.Metadata.Labels),
			Annotations: copyMap(s.Spec.Template.Metadata.Annotations),
		},
		Spec: *s.Spec.Template.Spec.DeepCopy(),
	}, nil
}

// Describe implements kube.Adapter: a VirtualMachine is pending until vCenter
// has it, and while vCenter reports it powered off though its spec wants
// it on (it serves nothing: a rollout does not count it among the VMs that
// may serve); failed while vCenter refuses to clone it or its zone's
// placement is gone (Ready False with the reason CreateFailed or
// ZoneUnavailable: with zones, the set replaces it in another zone);
// ready while its Ready condition is true.
func (ReplicaSetAdapter) Describe(vm *vmv1.VirtualMachine, r *replicaset.Replica) {
	ready := meta.FindStatusCondition(vm.Status.Conditions, "Ready")
	switch {
	case vm.Status.InstanceUUID == "" && ready != nil && (ready.Reason == ReasonCreateFailed || ready.Reason == ReasonZoneUnavailable):
		r.Phase = replicaset.PhaseFailed
	case vm.Status.InstanceUUID == "":
		r.Phase = replicaset.PhasePending
	case vm.Status.PowerState != "" && vm.Status.PowerState != string(vmv1.PoweredOn) && vm.Spec.PowerState != vmv1.PoweredOff:
		r.Phase = replicaset.PhasePending
	default:
		r.Phase = replicaset.PhaseRunning
	}
	if ready != nil && ready.Status == metav1.ConditionTrue {
		r.Ready, r.ReadySince = true, ready.LastTransitionTime.Time
	}
}

// SetStatus implements kube.Adapter.
func (a ReplicaSetAdapter) SetStatus(s *vmv1.VirtualMachineReplicaSet, st kube.Status) {
	s.Status.Replicas = st.Replicas
	s.Status.FullyLabeledReplicas = st.FullyLabeledReplicas
	s.Status.ReadyReplicas = st.ReadyReplicas
	s.Status.AvailableReplicas = st.AvailableReplicas
	s.Status.TerminatingReplicas = st.TerminatingReplicas
	s.Status.ObservedGeneration = st.ObservedGeneration
	s.Status.Selector = st.Selector
	s.Status.UpdatedReplicas = st.UpdatedReplicas
	s.Status.UpdatedAvailableReplicas = st.UpdatedAvailableReplicas
	s.Status.UpdateRevision, s.Status.CurrentRevision = st.UpdateRevision, st.CurrentRevision
	s.Status.Zones, s.Status.Spread = nil, ""
	for _, z := range st.Zones {
		zs := vmv1.ZoneStatus{Zone: z.Zone, Replicas: int32(z.Replicas),
			ReadyReplicas: int32(z.Ready), AvailableReplicas: int32(z.Available)}
		if !z.BackoffUntil.IsZero() {
			zs.BackoffUntil = &metav1.Time{Time: z.BackoffUntil.Truncate(time.Second)}
		}
		if z.Unreachable {
			zs.Unreachable = true
			if a.Reachable != nil {
				if seen, _ := a.Reachable(z.Zone); !seen.IsZero() {
					zs.LastSeen = &metav1.Time{Time: seen.Truncate(time.Second)}
				}
			}
		}
		s.Status.Zones = append(s.Status.Zones, zs)
	}
	if len(st.Zones) > 0 {
		s.Status.Spread = kube.Spread(st.Zones)
	}
	st.MergeConditions(&s.Status.Conditions)
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// The replica-set controller's permissions: it reads sets and writes their
// status, and creates, adopts, releases and deletes their VirtualMachines.
// Setting blockOwnerDeletion on a VirtualMachine needs update on its owner's
// finalizers.
//
// +kubebuilder:rbac:groups=vm.replicakit.io,resources=virtualmachinereplicasets,verbs=get;list;watch
// +kubebuilder:rbac:groups=vm.replicakit.io,resources=virtualmachinereplicasets/status,verbs=patch
// +kubebuilder:rbac:groups=vm.replicakit.io,resources=virtualmachinereplicasets/finalizers,verbs=update
// +kubebuilder:rbac:groups=vm.replicakit.io,resources=virtualmachines,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// NewReplicaSetReconciler returns the VirtualMachineReplicaSet reconciler
// for an operator with placements for zones.
func NewReplicaSetReconciler(zones []string) *kube.Reconciler[*vmv1.VirtualMachineReplicaSet, *vmv1.VirtualMachine] {
	return &kube.Reconciler[*vmv1.VirtualMachineReplicaSet, *vmv1.VirtualMachine]{
		Adapter:        ReplicaSetAdapter{Zones: zones},
		EmptyOwner:     func() *vmv1.VirtualMachineReplicaSet { return &vmv1.VirtualMachineReplicaSet{} },
		EmptyChild:     func() *vmv1.VirtualMachine { return &vmv1.VirtualMachine{} },
		EmptyChildList: func() client.ObjectList { return &vmv1.VirtualMachineList{} },
		EmptyOwnerList: func() client.ObjectList { return &vmv1.VirtualMachineReplicaSetList{} },
		// Each child becomes a clone: one read of the set per creating
		// pass is cheap beside cloning a VM for a set being deleted.
		ConfirmOwnerBeforeCreate: true,
	}
}

// Setup registers both controllers with mgr, the VirtualMachine one using p;
// each of configure may change the replica-set reconciler (its
// ZoneBackoff, say) before it is set up.
func Setup(mgr ctrl.Manager, p *VirtualMachineReconciler, configure ...func(*kube.Reconciler[*vmv1.VirtualMachineReplicaSet, *vmv1.VirtualMachine])) error {
	if err := p.SetupWithManager(mgr); err != nil {
		return err
	}
	rs := NewReplicaSetReconciler(slices.Sorted(maps.Keys(p.Zones)))
	if a, ok := rs.Adapter.(ReplicaSetAdapter); ok && p.watched() {
		a.Reachable = p.Reachable // zones are unreachable while their vCenter's watch is
		rs.Adapter = a
	}
	for _, f := range configure {
		f(rs)
	}
	return rs.SetupWithManager(mgr, "virtualmachinereplicaset")
}
