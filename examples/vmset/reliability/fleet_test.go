package reliability

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/procs"
	"github.com/replicakit/replicakit/examples/internal/rollwatch"
	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/internal/testenv"
)

// Controller-runtime's leader election defaults, which vmset-manager
// keeps: a standby takes the Lease once LeaseDuration has passed since it
// last saw the leader renew it, trying every RetryPeriod.
const (
	leaseDuration = 15 * time.Second
	retryPeriod   = 2 * time.Second
)

// The goal is a take-over within leaseDuration + retryPeriod, 17
// s. client-go's elector cannot promise it: a standby polls the Lease
// every retryPeriod stretched by up to JitterFactor (1.2), so 2 to 4.4 s
// apart; it counts the lease duration from when it first saw the last
// renewal (up to one poll after it), and takes the Lease at its first poll
// after that. From the kill, at most 4.4 + 15 + 4.4 = 23.8 s, and at
// least 13 s (the leader renews every 2 s). The tests hold take-overs to
// that bound, plus 3 s for the Lease's write, the new leader's controllers
// starting on their synced caches and its first reconcile on a loaded
// machine, and report how many met 17 s.
const (
	goalTakeover  = leaseDuration + retryPeriod
	jitterFactor  = 1.2 // leaderelection.JitterFactor
	boundTakeover = leaseDuration + 2*time.Duration((1+jitterFactor)*float64(retryPeriod)) + 3*time.Second
)

var (
	templateA = vmv1.VirtualMachineSpec{CPUs: 1, MemoryMiB: 256}
	templateB = vmv1.VirtualMachineSpec{CPUs: 2, MemoryMiB: 512}
)

// onB reports whether spec is templateB's. A spec read back from the API
// server never equals templateA or templateB as a whole: the server fills
// in the defaults they leave out (powerState, readiness). They differ in
// their CPUs.
func onB(spec vmv1.VirtualMachineSpec) bool { return spec.CPUs == templateB.CPUs }

// fleet is the operator as deployed: vcsimd and two vmset-manager
// replicas, a and b.
type fleet struct {
	t  *testing.T
	e  *testenv.Env
	vc *procs.VCenter
	ms []*procs.Manager
	// watcher watches the VirtualMachines for the moments the tests act
	// at, which last a few hundred milliseconds.
	watcher client.WithWatch
}

// startFleet starts vcsimd (with vcArgs) and two replicas and waits for
// one to lead. Everything stops when the test ends; the logs of the
// replicas are printed should it fail.
func startFleet(t *testing.T, vcArgs ...string) *fleet {
	t.Helper()
	return startFleetOn(t, env.Require(t).Kubeconfig, vcArgs...)
}

// startFleetOn is startFleet with the replicas reaching the API server
// through kubeconfig (a fault proxy's, say).
func startFleetOn(t *testing.T, kubeconfig string, vcArgs ...string) *fleet {
	t.Helper()
	e := env.Require(t)
	b := binaries(t)
	dir := t.TempDir()
	ctx := context.Background()
	f := &fleet{t: t, e: e}
	var err error
	if f.watcher, err = client.NewWithWatch(e.Config, client.Options{Scheme: e.Client.Scheme()}); err != nil {
		t.Fatal(err)
	}
	deleteLease(t, e) // a replica killed by an earlier test holds it until it expires
	// Registered first, so run last: once every replica has stopped.
	t.Cleanup(func() { deleteLease(t, e) })
	if f.vc, err = procs.StartVCenter(ctx, b.VCenter, filepath.Join(dir, "vcenter"), vcArgs...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.vc.Stop(); err != nil {
			t.Error(err)
		}
	})
	for _, name := range []string{"a", "b"} {
		m, err := procs.StartManager(b.Manager, name, dir, kubeconfig, f.vc)
		if err != nil {
			t.Fatal(err)
		}
		f.ms = append(f.ms, m)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("manager %s's log, last lines:\n%s", m.Name, m.Tail(4000))
			}
			// Close, whatever the process's state: a supervised replica
			// that exited a moment ago would otherwise be started again.
			if err := m.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	if _, err := procs.Leader(ctx, leaseDuration+2*retryPeriod, f.ms...); err != nil {
		t.Fatal(err)
	}
	return f
}

// deleteLease removes the managers' Lease, if any.
func deleteLease(t *testing.T, e *testenv.Env) {
	t.Helper()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: procs.LeaseNamespace, Name: procs.LeaseName}}
	if err := e.Client.Delete(context.Background(), lease); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// leader returns the replica that leads now.
func (f *fleet) leader() *procs.Manager {
	f.t.Helper()
	m, err := procs.Leader(context.Background(), leaseDuration+2*retryPeriod, f.ms...)
	if err != nil {
		f.t.Fatal(err)
	}
	return m
}

// namespace makes a namespace for one case.
func (f *fleet) namespace(name string) string {
	f.t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := f.e.Client.Create(context.Background(), ns); err != nil {
		f.t.Fatal(err)
	}
	// Deleted while the replicas still run (cleanups run last first):
	// the tests share one API server, and a later test's replicas, which
	// see every namespace, would otherwise make the VMs of this one's sets
	// again in their own vCenter. What is left being deleted when they
	// stop costs those only a finalizer each.
	f.t.Cleanup(func() {
		if err := f.e.Client.Delete(context.Background(), ns); err != nil && !apierrors.IsNotFound(err) {
			f.t.Logf("delete namespace %s: %v", name, err)
		}
	})
	return name
}

// newSet returns a set of n VMs on template A over the three zones, one
// VM of surge and one unavailable during a rollout.
func newSet(ns, name string, n int32) *vmv1.VirtualMachineReplicaSet {
	return &vmv1.VirtualMachineReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: vmv1.VirtualMachineReplicaSetSpec{
			Replicas: ptr.To(n),
			Selector: &vmv1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Zones:    []string{"zone-a", "zone-b", "zone-c"},
			Strategy: vmv1.UpdateStrategy{MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(1))},
			Template: vmv1.VirtualMachineTemplate{
				Metadata: vmv1.TemplateMetadata{Labels: map[string]string{"app": name}},
				Spec:     templateA,
			},
		},
	}
}

// observe reads the namespace's VirtualMachines, the set and vCenter.
func (f *fleet) observe(ns, set string) (vmcheck.State, error) {
	return vmcheck.Observe(context.Background(), f.e.Client, f.vc.Config, ns, set)
}

// converge waits until the set has n VMs, all powered on, matching vCenter
// exactly, and reports n ready; it returns when that first held.
func (f *fleet) converge(ns, set string, n int, within time.Duration) time.Time {
	f.t.Helper()
	var st vmcheck.State
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, within, true, func(context.Context) (bool, error) {
		st, last = f.observe(ns, set)
		return last == nil && st.Settled(n), nil
	})
	if err != nil {
		f.t.Fatalf("%s/%s not converged on %d within %v: %v (last read error: %v)", ns, set, n, within, st, last)
	}
	return time.Now()
}

// leaksAndDuplicates checks that every VM of the namespace in vCenter
// belongs to one of its VirtualMachines and that no name is held twice.
func (f *fleet) leaksAndDuplicates(ns, set string) (leaked, dups []string) {
	f.t.Helper()
	st, err := f.observe(ns, set)
	if err != nil {
		f.t.Fatal(err)
	}
	for i, name := range st.VCenter {
		if i > 0 && st.VCenter[i-1] == name {
			dups = append(dups, name)
		}
		if !slices.Contains(st.Want, name) {
			leaked = append(leaked, name)
		}
	}
	return leaked, dups
}

// watchSet starts a watch of the set's VirtualMachines against b
// (rollwatch) and returns what stops it and reports; a test that fails
// first stops it on its way out, so that no watch stays open to hold the
// API server's shutdown.
func (f *fleet) watchSet(t *testing.T, set *vmv1.VirtualMachineReplicaSet, b rollwatch.Bounds) (stop func() rollwatch.Report) {
	t.Helper()
	w, err := rollwatch.Start(context.Background(), f.e.Config, set, b)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var rep rollwatch.Report
	stop = func() rollwatch.Report {
		once.Do(func() { rep = w.Stop() })
		return rep
	}
	t.Cleanup(func() { stop() })
	return stop
}

// setPatch applies change to the set and writes it.
func (f *fleet) setPatch(set *vmv1.VirtualMachineReplicaSet, change func(*vmv1.VirtualMachineReplicaSet)) {
	f.t.Helper()
	patch := client.MergeFrom(set.DeepCopy())
	change(set)
	if err := f.e.Client.Patch(context.Background(), set, patch); err != nil {
		f.t.Fatal(err)
	}
}
