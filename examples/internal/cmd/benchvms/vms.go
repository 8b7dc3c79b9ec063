package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/benchkit"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// settledWindow is how long a settled operator is watched for calls and
// writes.
const settledWindow = 20 * time.Second

// vms times 0→n VMs through the example operator on vcsim, reading vCenter
// through its watch; counts the settled set's vCenter calls (beyond the
// watch's long poll) and API writes over settledWindow, per minute; times
// sets sets of per VMs created at once, with the CPU of this process (the
// operator and the simulator both run in it); and sets the 0→n beside the
// same n clones made directly through the provider at its task
// concurrency, and beside the operator reading vCenter on every reconcile;
// and the 0→n beside the same through a watch of every field.
func (b *bench) vms(ctx context.Context, n, sets, per int) ([]row, error) {
	var nss []string
	for _, prefix := range []string{"vms", "vmsets", "vms-direct", "vms-all"} {
		ns, err := b.ns.New(ctx, prefix)
		if err != nil {
			return nil, err
		}
		nss = append(nss, ns)
	}
	ns, fleetNS, directNS, allNS := nss[0], nss[1], nss[2], nss[3]
	op, err := b.startOperator(ctx, true, controllers.WatchedFields, ns, fleetNS)
	if err != nil {
		return nil, err
	}
	defer op.close()
	took, err := op.createSets(ctx, ns, 1, n)
	if err != nil {
		return nil, err
	}

	time.Sleep(2 * time.Second)
	callsBefore := op.calls.Calls()
	writesBefore, err := benchkit.ScrapeWrites(ctx, b.cs)
	if err != nil {
		return nil, err
	}
	time.Sleep(settledWindow)
	callsAfter := op.calls.Calls()
	writesAfter, err := benchkit.ScrapeWrites(ctx, b.cs)
	if err != nil {
		return nil, err
	}
	var vc int64
	for m, k := range callsAfter {
		if m != "WaitForUpdatesEx" {
			vc += k - callsBefore[m]
		}
	}
	perMinute := float64(time.Minute) / float64(settledWindow)
	fmt.Printf("  settled %d VMs: %.0f vCenter calls per minute beyond the watch's long poll (%v), %.0f API writes per minute\n",
		n, float64(vc)*perMinute, callsAfter, writesAfter.Minus(writesBefore).Total()*perMinute)

	if err := b.c.DeleteAllOf(ctx, &vmv1.VirtualMachineReplicaSet{}, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	if err := settleVMs(ctx, b, op.sim, ns, 0, 0); err != nil {
		return nil, err
	}
	cpu0, err := benchkit.CPUOf(os.Getpid())
	if err != nil {
		return nil, err
	}
	fleetTook, err := op.createSets(ctx, fleetNS, sets, per)
	if err != nil {
		return nil, err
	}
	cpu1, err := benchkit.CPUOf(os.Getpid())
	if err != nil {
		return nil, err
	}
	fmt.Printf("  %d sets of %d VMs created at once: converged in %v; CPU of the operator and the simulator (one process) %v\n",
		sets, per, fleetTook.Round(time.Millisecond), (cpu1 - cpu0).Round(10*time.Millisecond))

	// One operator at a time, on namespaces of its own: two would compete
	// for the CPU, and reconcile each other's VirtualMachines into their
	// own simulators if they shared namespaces.
	op.close()
	raw, err := rawClones(ctx, n)
	if err != nil {
		return nil, err
	}
	direct, err := b.startOperator(ctx, false, 0, directNS)
	if err != nil {
		return nil, err
	}
	directTook, err := direct.createSets(ctx, directNS, 1, n)
	direct.close()
	if err != nil {
		return nil, err
	}
	// The same operator with a watch of every field (vsphere.AllFields,
	// 11 properties), as it was before it watched only what it reads.
	all, err := b.startOperator(ctx, true, vsphere.AllFields, allNS)
	if err != nil {
		return nil, err
	}
	defer all.close()
	allTook, err := all.createSets(ctx, allNS, 1, n)
	if err != nil {
		return nil, err
	}
	ref := fmt.Sprintf("%d provider clones, %d at a time", n, vsphere.DefaultMaxTasks)
	return []row{
		{what: fmt.Sprintf("0→%d VMs, reading a vCenter watch (%v per VM)", n, (took / time.Duration(n)).Round(time.Millisecond)),
			took: took, ref: raw, refName: ref, goal: "≤ 1.3"},
		{what: fmt.Sprintf("0→%d VMs, reading vCenter per reconcile (%v per VM)", n, (directTook / time.Duration(n)).Round(time.Millisecond)),
			took: directTook, ref: raw, refName: ref, goal: "-"},
		{what: fmt.Sprintf("0→%d VMs, watching the fields the operator reads (8 properties)", n),
			took: took, ref: allTook, refName: "the same watching every field (11)", goal: "< 1"},
	}, nil
}

// vmOperator is the example operator running in this process on a
// simulator of its own.
type vmOperator struct {
	b     *bench
	sim   *vcsim.Sim
	calls *vcsim.Faults // counts calls; injects nothing
	close func()        // idempotent
}

// startOperator starts a simulator serving one call at a time, as the
// tests and the example operator's embedded simulator serve it
// (concurrent, vcsim deadlocks a clone against a property collector's long
// poll; the raw loop gets the same), and the operator on it, reading
// vCenter through a watch keeping fields or on every reconcile, and seeing
// only namespaces.
func (b *bench) startOperator(ctx context.Context, watch bool, fields vsphere.Fields, namespaces ...string) (*vmOperator, error) {
	return b.startOperatorOn(ctx, &vcsim.Faults{}, watch, fields, namespaces...)
}

// startOperatorOn is startOperator with the simulator's gate set up by
// calls (its latency, say), which then counts its calls.
func (b *bench) startOperatorOn(ctx context.Context, calls *vcsim.Faults, watch bool, fields vsphere.Fields, namespaces ...string) (*vmOperator, error) {
	o := &vmOperator{b: b, calls: calls}
	sim, err := vcsim.New(o.calls.Serialized, vcsim.Hotplug)
	if err != nil {
		return nil, err
	}
	o.sim = sim
	p, err := vsphere.New(ctx, sim.Config())
	if err != nil {
		sim.Close()
		return nil, err
	}
	r := &controllers.VirtualMachineReconciler{Provider: p}
	if watch {
		r = controllers.NewVirtualMachineReconciler(p)
		r.Watch.SetFields(fields)
	}
	stop, err := benchkit.RunManager(b.env.Config, vmcheck.Scheme(), vsphere.DefaultMaxTasks, func(mgr ctrl.Manager) error {
		return controllers.Setup(mgr, r)
	}, namespaces...)
	if err != nil {
		_ = p.Close(context.Background())
		sim.Close()
		return nil, err
	}
	var once sync.Once
	o.close = func() {
		once.Do(func() {
			stop()
			_ = p.Close(context.Background())
			sim.Close()
		})
	}
	return o, nil
}

// createSets creates sets sets of per VMs at once in ns and returns how
// long until they settled.
func (o *vmOperator) createSets(ctx context.Context, ns string, sets, per int) (time.Duration, error) {
	start := time.Now()
	for i := range sets {
		if err := o.b.c.Create(ctx, vmSet(ns, fmt.Sprintf("set-%03d", i), per)); err != nil {
			return 0, err
		}
	}
	if err := settleVMs(ctx, o.b, o.sim, ns, sets, sets*per); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// vmSet is a VirtualMachineReplicaSet of n VMs.
func vmSet(ns, name string, n int) *vmv1.VirtualMachineReplicaSet {
	return &vmv1.VirtualMachineReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: vmv1.VirtualMachineReplicaSetSpec{
			Replicas: ptr.To(int32(n)),
			Selector: &vmv1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: vmv1.VirtualMachineTemplate{Metadata: vmv1.TemplateMetadata{Labels: map[string]string{"app": name}}},
		},
	}
}

// settleVMs waits until ns holds n live VirtualMachines, all powered on,
// the same VMs are in vCenter, and at least sets sets, each reporting all
// its replicas ready.
func settleVMs(ctx context.Context, b *bench, sim *vcsim.Sim, ns string, sets, n int) error {
	var st vmcheck.State
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		// Kubernetes first, from the API server alone: reading vCenter on
		// every poll would queue the harness at the simulator's gate with
		// the operator, which the raw loop it is compared with never does.
		if !kubernetesSettled(ctx, b, ns, sets, n) {
			return false, nil
		}
		var err error
		st, err = vmcheck.Observe(ctx, b.c, sim.Config(), ns, "")
		return err == nil && st.Settled(n), nil
	})
	if err != nil {
		return fmt.Errorf("%s: %d VMs: %v", ns, n, st)
	}
	return nil
}

// kubernetesSettled reports whether ns holds n live VirtualMachines, all
// powered on, and at least sets sets, each reporting all its replicas ready.
func kubernetesSettled(ctx context.Context, b *bench, ns string, sets, n int) bool {
	var vms vmv1.VirtualMachineList
	if err := b.c.List(ctx, &vms, client.InNamespace(ns)); err != nil || len(vms.Items) != n {
		return false
	}
	for _, vm := range vms.Items {
		if vm.DeletionTimestamp != nil || vm.Status.PowerState != string(vmv1.PoweredOn) {
			return false
		}
	}
	var l vmv1.VirtualMachineReplicaSetList
	if err := b.c.List(ctx, &l, client.InNamespace(ns)); err != nil || len(l.Items) < sets {
		return false
	}
	for _, s := range l.Items {
		if s.Status.ReadyReplicas != *s.Spec.Replicas || s.Status.Replicas != *s.Spec.Replicas || s.Status.ObservedGeneration != s.Generation {
			return false
		}
	}
	return true
}

// rawClones creates n powered-on VMs straight through the provider on a
// fresh simulator (serialized, as the operator's), DefaultMaxTasks at a
// time.
func rawClones(ctx context.Context, n int) (time.Duration, error) {
	r, err := raw(ctx, scenario{replicas: n}, nil)
	return r.took, err
}
