package vcsim_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/internal/vcsim"
)

// TestRecord_KeepsOneMethodsRequests: a recording keeps every call of its
// method in order, a failed one too, decodes each into its request type
// with what the client sent, keeps no other method's calls, and keeps
// nothing once stopped.
func TestRecord_KeepsOneMethodsRequests(t *testing.T) {
	f := &vcsim.Faults{Methods: []string{"CloneVM_Task"}}
	_, c := start(t, f.Serialized)
	ctx := context.Background()
	vm, folder := template(t, c)
	rec := f.Record("CloneVM_Task")

	clone := func(name string, spec types.VirtualMachineCloneSpec) {
		t.Helper()
		task, err := vm.Clone(ctx, folder, name, spec)
		if err == nil {
			err = task.Wait(ctx)
		}
		if (err != nil) != (name == "clone-failed") {
			t.Fatalf("clone %s: %v", name, err)
		}
	}
	linked := string(types.VirtualMachineRelocateDiskMoveOptionsCreateNewChildDiskBacking)
	clone("clone-full", types.VirtualMachineCloneSpec{})
	clone("clone-linked", types.VirtualMachineCloneSpec{Location: types.VirtualMachineRelocateSpec{DiskMoveType: linked}})
	f.SetProbability(1)
	clone("clone-failed", types.VirtualMachineCloneSpec{})
	f.SetProbability(0)
	powerOff(t, vm)
	rec.Stop()
	clone("clone-after", types.VirtualMachineCloneSpec{})

	reqs, err := rec.Requests()
	if err != nil {
		t.Fatalf("Requests: %v", err)
	}
	type call struct{ Name, DiskMoveType string }
	var got []call
	for _, r := range reqs {
		c, ok := r.(*types.CloneVM_Task)
		if !ok {
			t.Fatalf("recorded a %T, want only *types.CloneVM_Task", r)
		}
		got = append(got, call{c.Name, c.Spec.Location.DiskMoveType})
	}
	want := []call{{"clone-full", ""}, {"clone-linked", linked}, {"clone-failed", ""}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded clones (-want +got):\n%s", diff)
	}
	if n := len(rec.Bodies()); n != len(want) {
		t.Errorf("len(Bodies()) = %d, want %d", n, len(want))
	}
}

// TestRecord_LaterReplaces: a second Record of a method takes the calls
// after it; the first keeps what it had.
func TestRecord_LaterReplaces(t *testing.T) {
	f := &vcsim.Faults{}
	_, c := start(t, f.Serialized)
	ctx := context.Background()
	vm, _ := template(t, c)
	first := f.Record("PowerOffVM_Task")
	powerOff(t, vm)
	second := f.Record("PowerOffVM_Task")
	first.Stop() // no longer the method's recording: changes nothing
	if _, err := vm.PowerOn(ctx); err != nil {
		t.Fatal(err)
	}
	powerOff(t, vm)
	if got := []int{len(first.Bodies()), len(second.Bodies())}; !cmp.Equal(got, []int{1, 1}) {
		t.Errorf("calls kept by the first and second recordings = %v, want [1 1]", got)
	}
}

// powerOff powers vm off and waits for it.
func powerOff(t *testing.T, vm *object.VirtualMachine) {
	t.Helper()
	ctx := context.Background()
	task, err := vm.PowerOff(ctx)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatalf("power off: %v", err)
	}
}
