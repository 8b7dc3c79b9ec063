package controllers_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/vim25/mo"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/rollwatch"
	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/replicaset/kube"
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
	e, sim := start(t)
	const ns = "hotadd"
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
	for _, n := range names {
		guest, hard, err := vcsim.PowerOffs(context.Background(), sim.Config(), ns+"-"+n)
		if err != nil {
			t.Fatal(err)
		}
		if guest+hard != 0 {
			t.Errorf("%s was powered off %d times", n, guest+hard)
		}
	}
}

// TestInPlace_PowerCycle: lowering the memory needs each VM off; with
// maxUnavailable 1 the VMs are power-cycled one at a time, and each
// keeps its instance UUID.
func TestInPlace_PowerCycle(t *testing.T) {
	e, sim := start(t)
	const ns = "powercycle"
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
	if fewest < 2 {
		t.Errorf("the watch saw %d Ready VirtualMachines, below 3 − maxUnavailable 1", fewest)
	}
	for _, n := range names {
		guest, hard, err := vcsim.PowerOffs(context.Background(), sim.Config(), ns+"-"+n)
		if err != nil {
			t.Fatal(err)
		}
		if guest+hard != 1 {
			t.Errorf("%s was powered off %d times, want once", n, guest+hard)
		}
	}
}

// TestInPlace_OnlyHolds: under InPlaceOnly, lowering the CPUs (which
// needs the VMs off) with maxUnavailable 0 holds the rollout: RolledOut
// names the VM and why, and no VM is replaced or changed.
func TestInPlace_OnlyHolds(t *testing.T) {
	e, sim := start(t)
	const ns = "inplaceonly"
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
	e, sim := start(t)
	const ns = "linked"
	createSetWith(t, e, ns, 3, func(s *vmv1.VirtualMachineReplicaSet) { s.Spec.CloneMode = controllers.CloneLinked })
	settle(t, e, sim, ns, 3)
	ctx := context.Background()
	vc, logout, err := vsphere.Connect(ctx, sim.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logout(ctx) }()
	f := find.NewFinder(vc)
	dc, err := f.Datacenter(ctx, "DC0")
	if err != nil {
		t.Fatal(err)
	}
	f.SetDatacenter(dc)
	tmpl, err := f.VirtualMachine(ctx, sim.Config().Template)
	if err != nil {
		t.Fatal(err)
	}
	var m mo.VirtualMachine
	if err := tmpl.Properties(ctx, tmpl.Reference(), []string{"snapshot"}, &m); err != nil {
		t.Fatal(err)
	}
	if m.Snapshot == nil || len(m.Snapshot.RootSnapshotList) != 1 || m.Snapshot.RootSnapshotList[0].Name != vsphere.LinkedCloneSnapshot {
		t.Fatalf("the template's snapshots are %+v, want one, %s", m.Snapshot, vsphere.LinkedCloneSnapshot)
	}
}
