package controllers_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// drainHook is the pre-delete hook the tests' sets name, as it appears on
// a VirtualMachine.
var drainHook = kube.PreDeleteHookAnnotation(controllers.HookDomain, "drain")

// preparingVMs returns the VirtualMachines of ns that prepare to leave.
func preparingVMs(ctx context.Context, e *testenv.Env, ns string) ([]vmv1.VirtualMachine, error) {
	var l vmv1.VirtualMachineList
	if err := e.Client.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(l.Items, func(vm vmv1.VirtualMachine) bool {
		return vm.Annotations[kube.AnnotationPreparing] == "" || vm.DeletionTimestamp != nil
	}), nil
}

// releaseDrain removes the drain hook from the VirtualMachine ns/name, as
// a drainer does when it is done.
func releaseDrain(t *testing.T, e *testenv.Env, ns, name string) {
	t.Helper()
	vm := &vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	patch := []byte(`{"metadata":{"annotations":{"` + drainHook + `":null}}}`)
	if err := e.Client.Patch(context.Background(), vm, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
}

// createDrainedSet creates the set test-rs of n in ns with a drain hook
// that never times out in a test, and returns its VMs once settled.
func createDrainedSet(t *testing.T, e *testenv.Env, sim *vcsimtest.Sim, ns string, n int32) []string {
	t.Helper()
	createSetWith(t, e, ns, n, func(s *vmv1.VirtualMachineReplicaSet) {
		s.Spec.Lifecycle = &vmv1.Lifecycle{PreDelete: []string{"drain"}, Timeout: &metav1.Duration{Duration: time.Hour}}
	})
	return settle(t, e, sim, ns, int(n))
}

// TestHooks_ScaleDownDrainsFirst: a set of 3 VMs whose spec.lifecycle
// names a drain hook, scaled to 2. The VM chosen prepares (kubectl's
// PREPARING shows it) and stays in vCenter, powered on, while the hook
// holds it; the set says PREPARING 1. Once the hook is released the VM
// is destroyed in vCenter and the set settles on 2.
func TestHooks_ScaleDownDrainsFirst(t *testing.T) {
	const ns = "hooks-scale"
	e, sim := start(t, ns)
	live := createDrainedSet(t, e, sim, ns, 3)

	set := &vmv1.VirtualMachineReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "test-rs"}}
	if err := e.Client.Patch(context.Background(), set, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":2}}`))); err != nil {
		t.Fatal(err)
	}
	var leaving []vmv1.VirtualMachine
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		leaving, err = preparingVMs(ctx, e, ns)
		return err == nil && len(leaving) == 1 && leaving[0].Annotations[drainHook] != "", err
	})
	if err != nil {
		t.Fatalf("no VM prepares to leave with its drain hook after a scale-down: %v", err)
	}
	name := leaving[0].Name
	if got := kubectlColumn(t, e, "PREPARING", name, "vm", "-n", ns); got == "<none>" || got == "" {
		t.Errorf("kubectl get vm shows PREPARING %q for %s, want its age", got, name)
	}
	waitSet(t, e, ns, "preparing 1", func(s *vmv1.VirtualMachineReplicaSet) bool {
		return ptr.Deref(s.Status.PreparingReplicas, -1) == 1
	})
	// Held: still in vCenter and powered on a while later, the others too.
	time.Sleep(2 * time.Second)
	st, err := vmcheck.Observe(t.Context(), e.Client, sim.Config(), ns, "test-rs")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.VCenter) != 3 || len(st.LiveOn) != 3 || len(st.Deleting) != 0 {
		t.Fatalf("while the hook holds %s: %v; want all 3 live and on, in vCenter", name, st)
	}

	releaseDrain(t, e, ns, name)
	after := settle(t, e, sim, ns, 2)
	if slices.Contains(after, name) || !isSubset(after, live) {
		t.Errorf("settled on %v after releasing %s (started with %v)", after, name, live)
	}
}

// TestHooks_DirectDeleteWaits: a VirtualMachine deleted with kubectl, not
// by its set (openkruise/kruise#2161's path around the gate), still waits
// for its set's hooks: it is prepared (the drain hook put on it), its VM
// stays in vCenter, powered on, while the hook holds it, and is shut down
// and destroyed once the hook is released; the set then replaces it.
func TestHooks_DirectDeleteWaits(t *testing.T) {
	const ns = "hooks-direct"
	e, sim := start(t, ns)
	live := createDrainedSet(t, e, sim, ns, 2)
	victim := live[0]
	if _, err := e.Kubectl(t.Context(), "delete", "vm", "-n", ns, victim, "--wait=false"); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var vm vmv1.VirtualMachine
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: victim}, &vm); err != nil {
			return false, err
		}
		return vm.DeletionTimestamp != nil && vm.Annotations[kube.AnnotationPreparing] != "" && vm.Annotations[drainHook] != "", nil
	})
	if err != nil {
		t.Fatalf("%s, deleted with kubectl, was not prepared with its drain hook: %v", victim, err)
	}
	time.Sleep(2 * time.Second)
	st, err := vmcheck.Observe(t.Context(), e.Client, sim.Config(), ns, "test-rs")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(st.VCenter, ns+"-"+victim) {
		t.Fatalf("the VM of %s was destroyed while its hook held it: vCenter holds %v", victim, st.VCenter)
	}
	releaseDrain(t, e, ns, victim)
	after := settle(t, e, sim, ns, 2)
	if slices.Contains(after, victim) {
		t.Errorf("%s is still there once released: %v", victim, after)
	}
}

// TestHooks_NeverRanGoesAtOnce: a VirtualMachine whose clone has not
// finished (vCenter runs it, held) has nothing to drain: deleted with
// kubectl, it goes without being prepared, as the set's rules delete a
// replica that never ran, instead of waiting out its set's hook timeout;
// its clone is cancelled, and vCenter is left with no VM of the set.
//
// The clone's task is held, not its call: vCenter answers CloneVM_Task
// with its task at once. Holding the call, as this test once did, plays a
// vCenter that does not answer, and a delete then waits for the answer
// rather than leave a VM no one knows of; the test passed that way only
// while its manager reconciled earlier tests' objects too, whose clones
// took every clone slot, so that its own clone was never called.
func TestHooks_NeverRanGoesAtOnce(t *testing.T) {
	const ns = "hooks-never-ran"
	faults := &vcsim.Faults{Latency: &vcsim.Latency{Tasks: map[string]time.Duration{"CloneVM_Task": time.Millisecond}}}
	e, sim := startFaulty(t, ns, faults)
	clones := faults.HoldTasks("CloneVM_Task")
	defer clones.Release() // released below; again, should the test stop first
	createSetWith(t, e, ns, 1, func(s *vmv1.VirtualMachineReplicaSet) {
		s.Spec.Lifecycle = &vmv1.Lifecycle{PreDelete: []string{"drain"}, Timeout: &metav1.Duration{Duration: time.Hour}}
	})
	select {
	case <-clones.Caught():
	case <-time.After(30 * time.Second):
		t.Fatal("no clone reached vCenter")
	}
	var l vmv1.VirtualMachineList
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := e.Client.List(ctx, &l, client.InNamespace(ns))
		return err == nil && len(l.Items) == 1, err
	}); err != nil {
		t.Fatalf("VirtualMachines %v, %v; want the one cloning", l.Items, err)
	}
	name := l.Items[0].Name
	// Its reconcile gave up waiting (CreateWait) and says so.
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var vm vmv1.VirtualMachine
		err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &vm)
		c := meta.FindStatusCondition(vm.Status.Conditions, "Ready")
		return err == nil && c != nil && c.Status == metav1.ConditionFalse && c.Reason == controllers.ReasonCreating, nil
	}); err != nil {
		t.Fatalf("%s, its clone held past CreateWait: not Ready False %s: %v", name, controllers.ReasonCreating, err)
	}
	if _, err := e.Kubectl(t.Context(), "delete", "vm", "-n", ns, name, "--wait=false"); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var vm vmv1.VirtualMachine
		err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &vm)
		if err == nil && vm.Annotations[kube.AnnotationPreparing] != "" {
			return false, fmt.Errorf("%s, never cloned, was prepared to leave", name)
		}
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		var vm vmv1.VirtualMachine
		_ = e.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &vm)
		t.Fatalf("%s, deleted while its clone was in flight: %v (finalizers %v, annotations %v, conditions %+v)",
			name, err, vm.Finalizers, vm.Annotations, vm.Status.Conditions)
	}
	// Let vCenter end the held clones: the cancelled one made nothing,
	// so the set settles on its replacement alone, vCenter holding its VM
	// only (a clone that went on would be a VM too many).
	clones.Release()
	live := settle(t, e, sim, ns, 1)
	if slices.Contains(live, name) {
		t.Errorf("%s, deleted, is live again: %v", name, live)
	}
}
