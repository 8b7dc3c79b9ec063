package controllers_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/vim25/mo"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/rollwatch"
	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// uuids maps the set's live VirtualMachines to their VMs' instance UUIDs.
func uuids(t *testing.T, e *testenv.Env, ns string) map[string]string {
	t.Helper()
	var l vmv1.VirtualMachineList
	if err := e.Client.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, vm := range l.Items {
		if vm.DeletionTimestamp == nil {
			out[vm.Name] = vm.Status.InstanceUUID
		}
	}
	return out
}

// patchTemplate changes the set's template with edit.
func patchTemplate(t *testing.T, e *testenv.Env, ns string, edit func(*vmv1.VirtualMachineSpec)) {
	t.Helper()
	var set vmv1.VirtualMachineReplicaSet
	if err := e.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "test-rs"}, &set); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(set.DeepCopy())
	edit(&set.Spec.Template.Spec)
	if err := e.Client.Patch(context.Background(), &set, patch); err != nil {
		t.Fatal(err)
	}
}

// inPlaceRolled waits until the set is rolled out on a revision other
// than rev with the same VirtualMachines, each annotated as updated in
// place, and checks that their VMs kept their instance UUIDs and have
// want in vCenter.
func inPlaceRolled(t *testing.T, e *testenv.Env, sim *vcsimtest.Sim, ns, rev string, before map[string]string, want rollwatch.Hardware) {
	t.Helper()
	waitState(t, e, sim, ns, "rolled out in place", func(st vmcheck.State) bool {
		if !st.Settled(len(before)) || st.Set.Status.UpdateRevision == rev || st.Set.Status.UpdatedReplicas != int32(len(before)) {
			return false
		}
		c := meta.FindStatusCondition(st.Set.Status.Conditions, kube.ConditionRolledOut)
		return c != nil && c.Reason == kube.ReasonRolloutComplete
	})
	if got := uuids(t, e, ns); !maps.Equal(got, before) {
		t.Fatalf("VMs replaced: %v, were %v", got, before)
	}
	var l vmv1.VirtualMachineList
	if err := e.Client.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, vm := range l.Items {
		if vm.Annotations[kube.AnnotationUpdatedInPlace] == "" {
			t.Errorf("%s is not annotated %s", vm.Name, kube.AnnotationUpdatedInPlace)
		}
	}
	hw, err := rollwatch.ReadHardware(context.Background(), sim.Config(), ns+"-")
	if err != nil {
		t.Fatal(err)
	}
	for name, h := range hw {
		if h != want {
			t.Errorf("vCenter: %s has %+v, want %+v", name, h, want)
		}
	}
	if len(hw) != len(before) {
		t.Errorf("vCenter holds %d VMs, want %d", len(hw), len(before))
	}
}

// checkPowerOffs checks that vCenter recorded want power-offs (through
// the guest or hard) of the VM of each of names.
func checkPowerOffs(t *testing.T, sim *vcsimtest.Sim, ns string, names []string, want int) {
	t.Helper()
	for _, n := range names {
		guest, hard, err := vcsim.PowerOffs(context.Background(), sim.Config(), ns+"-"+n)
		if err != nil {
			t.Fatal(err)
		}
		if guest+hard != want {
			t.Errorf("%s was powered off %d times, want %d", n, guest+hard, want)
		}
	}
}

// revisionOf returns the set's current revision once it reports one for
// all n replicas.
func revisionOf(t *testing.T, e *testenv.Env, sim *vcsimtest.Sim, ns string, n int32) string {
	t.Helper()
	st := waitState(t, e, sim, ns, "labelled with a revision", func(st vmcheck.State) bool {
		return st.Set != nil && st.Set.Status.UpdateRevision != "" && st.Set.Status.UpdatedReplicas == n
	})
	return st.Set.Status.UpdateRevision
}

// TestInPlace_HotAddMemory: raising the memory of a set whose VMs have
// memory hot-add on changes each VM where it runs: an independent watch
// never sees fewer than 3 Ready nor more than 3 live VirtualMachines, no
// VM is powered off, and each keeps its instance UUID and has the new
// memory in vCenter.
func TestInPlace_HotAddMemory(t *testing.T) {
	const ns = "hotadd"
	e, sim := start(t, ns)
	createSetWith(t, e, ns, 3, func(s *vmv1.VirtualMachineReplicaSet) {
		s.Spec.Template.Spec.MemoryHotAdd = true
		s.Spec.Strategy.Method = "InPlaceIfPossible"
	})
	names := settle(t, e, sim, ns, 3)
	rev := revisionOf(t, e, sim, ns, 3)
	before := uuids(t, e, ns)
	x := watchReady(t, ns, names)
	patchTemplate(t, e, ns, func(s *vmv1.VirtualMachineSpec) { s.MemoryMiB = 1024 })
	inPlaceRolled(t, e, sim, ns, rev, before, rollwatch.Hardware{CPUs: 1, MemoryMiB: 1024})
	x.mu.Lock()
	fewest, most := x.fewest, x.mostAll
	x.mu.Unlock()
	if fewest != 3 || most != 3 {
		t.Errorf("the watch saw %d Ready at the fewest and %d live at the most, want 3 and 3", fewest, most)
	}
	checkPowerOffs(t, sim, ns, names, 0)
}

// TestInPlace_PowerCycle: lowering the memory needs each VM off; with
// maxUnavailable 1 the VMs are power-cycled one at a time (a watch sees
// exactly 2 Ready at the fewest), and each keeps its instance UUID.
func TestInPlace_PowerCycle(t *testing.T) {
	const ns = "powercycle"
	e, sim := start(t, ns)
	one := intstr.FromInt32(1)
	createSetWith(t, e, ns, 3, func(s *vmv1.VirtualMachineReplicaSet) {
		s.Spec.Template.Spec.MemoryMiB = 1024
		s.Spec.Strategy.Method = "InPlaceIfPossible"
		s.Spec.Strategy.MaxUnavailable = &one
	})
	names := settle(t, e, sim, ns, 3)
	rev := revisionOf(t, e, sim, ns, 3)
	before := uuids(t, e, ns)
	x := watchReady(t, ns, names)
	patchTemplate(t, e, ns, func(s *vmv1.VirtualMachineSpec) { s.MemoryMiB = 512 })
	inPlaceRolled(t, e, sim, ns, rev, before, rollwatch.Hardware{CPUs: 1, MemoryMiB: 512})
	x.mu.Lock()
	fewest := x.fewest
	x.mu.Unlock()
	if fewest != 2 {
		t.Errorf("the watch saw %d Ready VirtualMachines at the fewest, want 2: 3 − maxUnavailable 1, each VM not Ready while it is power-cycled", fewest)
	}
	checkPowerOffs(t, sim, ns, names, 1)
}

// TestInPlace_OnlyHolds: under InPlaceOnly, lowering the CPUs (which
// needs the VMs off) with maxUnavailable 0 holds the rollout: RolledOut
// names the VM and why, and no VM is replaced or changed.
func TestInPlace_OnlyHolds(t *testing.T) {
	const ns = "inplaceonly"
	e, sim := start(t, ns)
	createSetWith(t, e, ns, 2, func(s *vmv1.VirtualMachineReplicaSet) {
		s.Spec.Template.Spec.CPUs = 2
		s.Spec.Strategy.Method = "InPlaceOnly"
	})
	settle(t, e, sim, ns, 2)
	revisionOf(t, e, sim, ns, 2)
	before := uuids(t, e, ns)
	patchTemplate(t, e, ns, func(s *vmv1.VirtualMachineSpec) { s.CPUs = 1 })
	st := waitState(t, e, sim, ns, "held, saying why", func(st vmcheck.State) bool {
		c := meta.FindStatusCondition(st.Set.Status.Conditions, kube.ConditionRolledOut)
		return c != nil && st.Set.Status.ObservedGeneration == st.Set.Generation &&
			strings.Contains(c.Message, "InPlaceOnly") && strings.Contains(c.Message, "CPUs lowered from 2 to 1")
	})
	if got := uuids(t, e, ns); !maps.Equal(got, before) {
		t.Errorf("InPlaceOnly replaced VMs: %v, were %v", got, before)
	}
	hw, err := rollwatch.ReadHardware(context.Background(), sim.Config(), ns+"-")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(hw)) {
		if hw[name].CPUs != 2 {
			t.Errorf("vCenter: %s has %d CPUs, want 2 as before", name, hw[name].CPUs)
		}
	}
	t.Log(meta.FindStatusCondition(st.Set.Status.Conditions, kube.ConditionRolledOut).Message)
}

// TestCloneMode_Linked: a set with spec.cloneMode Linked clones its VMs
// from the template's snapshot, which the provider takes once: vCenter
// shows the template with exactly that snapshot, and the set's VMs up.
func TestCloneMode_Linked(t *testing.T) {
	const ns = "linked"
	e, sim := start(t, ns)
	createSetWith(t, e, ns, 3, func(s *vmv1.VirtualMachineReplicaSet) { s.Spec.CloneMode = controllers.CloneLinked })
	settle(t, e, sim, ns, 3)
	ctx := context.Background()
	tmpl, logout, err := simVM(ctx, sim, sim.Config().Template)
	if err != nil {
		t.Fatal(err)
	}
	defer logout()
	var m mo.VirtualMachine
	if err := tmpl.Properties(ctx, tmpl.Reference(), []string{"snapshot"}, &m); err != nil {
		t.Fatal(err)
	}
	if m.Snapshot == nil || len(m.Snapshot.RootSnapshotList) != 1 || m.Snapshot.RootSnapshotList[0].Name != vsphere.LinkedCloneSnapshot {
		t.Fatalf("the template's snapshots are %+v, want one, %s", m.Snapshot, vsphere.LinkedCloneSnapshot)
	}
}

// TestInPlace_PowerCycleNotReady: while a power cycle resizes a VM (vCenter
// holds its reconfigure, the VM off), its VirtualMachine is not Ready and
// says why; once the VM runs again with its new memory, it is Ready.
func TestInPlace_PowerCycleNotReady(t *testing.T) {
	const ns = "cyclenotready"
	e, sim, faults := startCounting(t, ns)
	ctx := context.Background()
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	vm := &vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vm"}, Spec: vmv1.VirtualMachineSpec{CPUs: 1, MemoryMiB: 1024}}
	if err := e.Client.Create(ctx, vm); err != nil {
		t.Fatal(err)
	}
	ready := func(what string, ok func(*vmv1.VirtualMachine, *metav1.Condition) bool) *metav1.Condition {
		t.Helper()
		var c *metav1.Condition
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			if err := e.Client.Get(ctx, client.ObjectKeyFromObject(vm), vm); err != nil {
				return false, nil
			}
			c = meta.FindStatusCondition(vm.Status.Conditions, "Ready")
			return c != nil && ok(vm, c), nil
		})
		if err != nil {
			t.Errorf("the VirtualMachine was not %s in 30 s: Ready %+v, status %+v", what, c, vm.Status)
		}
		return c
	}
	ready("Ready", func(_ *vmv1.VirtualMachine, c *metav1.Condition) bool { return c.Status == metav1.ConditionTrue })

	held := faults.Hold("ReconfigVM_Task")
	defer held.Release()
	patch := client.MergeFrom(vm.DeepCopy())
	vm.Spec.MemoryMiB = 512
	vm.Annotations = map[string]string{controllers.AnnotationPowerCycle: "allowed"}
	if err := e.Client.Patch(ctx, vm, patch); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.Caught():
	case <-time.After(30 * time.Second):
		t.Fatal("no reconfigure reached vCenter in 30 s")
	}
	p, err := vsphere.New(ctx, sim.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close(ctx) }()
	if got, err := p.Get(ctx, controllers.VSphereName(vm)); err != nil || got.Power != vmprovider.PoweredOff {
		t.Fatalf("with the power cycle's reconfigure held, vCenter has the VM %s (%v); want it off", got.Power, err)
	}
	c := ready("not Ready while its VM is off for the power cycle", func(_ *vmv1.VirtualMachine, c *metav1.Condition) bool {
		return c.Status == metav1.ConditionFalse
	})
	t.Logf("while powered off for the resize: Ready %s %s: %s", c.Status, c.Reason, c.Message)

	held.Release()
	ready("Ready again with 512 MiB", func(vm *vmv1.VirtualMachine, c *metav1.Condition) bool {
		return c.Status == metav1.ConditionTrue && vm.Status.Hardware != nil && vm.Status.Hardware.MemoryMiB == 512
	})
}

// TestDescribe_PowerCycleOrdered: a VirtualMachine that the set allowed a
// power cycle and that does not yet run with its spec's size is not ready
// for the set, though its own Ready condition still says so (its
// controller has not taken it down yet): the next pass must not spend
// MaxUnavailable's budget on another VM (found in review).
func TestDescribe_PowerCycleOrdered(t *testing.T) {
	vm := &vmv1.VirtualMachine{
		Spec: vmv1.VirtualMachineSpec{CPUs: 1, MemoryMiB: 512},
		Status: vmv1.VirtualMachineStatus{InstanceUUID: "u", PowerState: "PoweredOn",
			Hardware:   &vmv1.VirtualMachineHardware{CPUs: 1, MemoryMiB: 1024},
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}},
	}
	var r replicaset.Replica
	controllers.ReplicaSetAdapter{}.Describe(vm, &r)
	if !r.Ready {
		t.Fatalf("without the annotation: not ready; want ready")
	}
	vm.Annotations = map[string]string{controllers.AnnotationPowerCycle: "allowed"}
	r = replicaset.Replica{}
	controllers.ReplicaSetAdapter{}.Describe(vm, &r)
	if r.Ready {
		t.Errorf("a power cycle ordered and not yet made: ready; want not ready")
	}
	vm.Status.Hardware.MemoryMiB = 512
	r = replicaset.Replica{}
	controllers.ReplicaSetAdapter{}.Describe(vm, &r)
	if !r.Ready {
		t.Errorf("the power cycle made (512 MiB): not ready; want ready")
	}
}

// TestApplyInPlace_PowerCycleAllowance: the set allows a power cycle
// exactly when its plan makes one: a live update removes an allowance an
// earlier plan left, so that the controller does not power-cycle the VM
// outside MaxUnavailable's budget (found in review).
func TestApplyInPlace_PowerCycleAllowance(t *testing.T) {
	want := &vmv1.VirtualMachine{Spec: vmv1.VirtualMachineSpec{CPUs: 1, MemoryMiB: 2048}}
	vm := &vmv1.VirtualMachine{Spec: vmv1.VirtualMachineSpec{CPUs: 1, MemoryMiB: 1024}}
	a := controllers.ReplicaSetAdapter{}
	if !a.ApplyInPlace(vm, want, true) || vm.Annotations[controllers.AnnotationPowerCycle] != "allowed" || vm.Spec.MemoryMiB != 2048 {
		t.Fatalf("a power cycle: %v, %+v; want 2048 MiB and the allowance", vm.Annotations, vm.Spec)
	}
	if !a.ApplyInPlace(vm, want, false) {
		t.Fatalf("a live update after it changed nothing; want the allowance removed")
	}
	if _, ok := vm.Annotations[controllers.AnnotationPowerCycle]; ok {
		t.Errorf("a live update left %s", controllers.AnnotationPowerCycle)
	}
	if a.ApplyInPlace(vm, want, false) {
		t.Errorf("a live update repeated changed the VirtualMachine again")
	}
}
