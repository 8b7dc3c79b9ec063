package vsphere

import (
	"testing"

	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/vmprovider"
)

// TestWatch_WriteOutlivesOlderUpdates: an update from before a write (the
// clone's powered-off VM, still on its way) does not take reads back in
// time; the update that agrees with the write ends the override; a destroy
// holds until the watch reports the VM gone.
func TestWatch_WriteOutlivesOlderUpdates(t *testing.T) {
	w := NewWatch(nil)
	ref := types.ManagedObjectReference{Type: "VirtualMachine", Value: "vm-1"}
	change := func(kind types.ObjectUpdateKind, power types.VirtualMachinePowerState) types.ObjectUpdate {
		return types.ObjectUpdate{Kind: kind, Obj: ref, ChangeSet: []types.PropertyChange{
			{Name: "name", Val: "web-0"},
			{Name: "config.instanceUuid", Val: "uuid-1"},
			{Name: "runtime.powerState", Val: power},
		}}
	}
	w.put(vmprovider.VM{Name: "web-0", InstanceUUID: "uuid-1", Power: vmprovider.PoweredOn})
	w.apply([]types.ObjectUpdate{change(types.ObjectUpdateKindEnter, types.VirtualMachinePowerStatePoweredOff)})
	if vm, ok := w.Get("web-0"); !ok || vm.Power != vmprovider.PoweredOn {
		t.Fatalf("after an older update: Get = %+v, %v; want the written PoweredOn", vm, ok)
	}
	w.apply([]types.ObjectUpdate{change(types.ObjectUpdateKindModify, types.VirtualMachinePowerStatePoweredOn)})
	if _, pinned := w.written["web-0"]; pinned {
		t.Errorf("the agreeing update left the write's override in place")
	}
	w.apply([]types.ObjectUpdate{change(types.ObjectUpdateKindModify, types.VirtualMachinePowerStatePoweredOff)})
	if vm, _ := w.Get("web-0"); vm.Power != vmprovider.PoweredOff {
		t.Errorf("after a later change: Get = %+v, want the watch's PoweredOff", vm)
	}

	w.forget("web-0")
	w.apply([]types.ObjectUpdate{change(types.ObjectUpdateKindModify, types.VirtualMachinePowerStatePoweredOff)})
	if vm, ok := w.Get("web-0"); ok {
		t.Fatalf("after Delete and an older update: Get = %+v, want it gone", vm)
	}
	w.apply([]types.ObjectUpdate{{Kind: types.ObjectUpdateKindLeave, Obj: ref}})
	if _, pinned := w.written["web-0"]; pinned {
		t.Errorf("the leave left the destroy's override in place")
	}
}
