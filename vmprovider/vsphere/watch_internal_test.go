package vsphere

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
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

// TestCached_WriteThatFindsNoVMCorrectsTheCache: a VM the watch still holds
// but vCenter no longer has (govmomi's simulator can drop a Leave when its
// container view changes in the same batch) is forgotten as soon as a
// write through Cached finds it gone, so the next read says not found and
// the caller creates it again, instead of failing on the phantom forever.
func TestCached_WriteThatFindsNoVMCorrectsTheCache(t *testing.T) {
	onSyncedWatch(t, func(ctx context.Context, p *Provider, w *Watch) {
		w.apply([]types.ObjectUpdate{{Kind: types.ObjectUpdateKindEnter, Obj: types.ManagedObjectReference{Type: "VirtualMachine", Value: "vm-gone"},
			ChangeSet: []types.PropertyChange{
				{Name: "name", Val: "ghost"},
				{Name: "config.extraConfig", Val: []types.BaseOptionValue{&types.OptionValue{Key: KeyOwnerUID, Value: "uid-1"}}},
				{Name: "runtime.powerState", Val: types.VirtualMachinePowerStatePoweredOff},
			}}})
		cached := Cached{Provider: p, Watch: w}
		if _, err := cached.Get(ctx, "ghost"); err != nil {
			t.Fatalf("the phantom is not in the cache to begin with: %v", err)
		}
		if err := cached.SetPower(ctx, "ghost", "uid-1", vmprovider.PoweredOn); !errors.Is(err, vmprovider.ErrNotFound) {
			t.Fatalf("SetPower on a VM vCenter lacks: %v; want ErrNotFound", err)
		}
		if vm, err := cached.Get(ctx, "ghost"); !errors.Is(err, vmprovider.ErrNotFound) {
			t.Fatalf("after the write found it gone: Get = %+v, %v; want ErrNotFound", vm, err)
		}
		if l, _ := cached.List(ctx, "uid-1"); len(l) != 0 {
			t.Fatalf("after the write found it gone: List = %v; want none", l)
		}
		// A destroy of a VM vCenter no longer has succeeds, and drops the
		// copy for good, not only while the destroy's pin lasts.
		w.apply([]types.ObjectUpdate{{Kind: types.ObjectUpdateKindModify, Obj: types.ManagedObjectReference{Type: "VirtualMachine", Value: "vm-gone"},
			ChangeSet: []types.PropertyChange{{Name: "runtime.powerState", Val: types.VirtualMachinePowerStatePoweredOff}}}})
		delete(w.written, "ghost")
		if err := cached.Delete(ctx, "ghost", "uid-1"); err != nil {
			t.Fatalf("Delete of a VM vCenter lacks: %v", err)
		}
		delete(w.written, "ghost") // as when the pin expires
		if vm, ok := w.Get("ghost"); ok {
			t.Fatalf("after the destroy's pin: Get = %+v; want it gone", vm)
		}
	})
}

// onSyncedWatch runs f on govmomi's simulator with a provider in cluster
// DC0_C1 and a watch of it that has synced and holds no VM.
func onSyncedWatch(t *testing.T, f func(ctx context.Context, p *Provider, w *Watch)) {
	t.Helper()
	model := simulator.VPX()
	model.Cluster = 2
	err := model.Run(func(ctx context.Context, c *vim25.Client) error {
		p, err := NewWithClient(ctx, c, Config{ResourcePool: "/DC0/host/DC0_C1", Datastore: "LocalDS_0"})
		if err != nil {
			return err
		}
		w := NewWatch(p)
		w.replace(map[types.ManagedObjectReference]*mo.VirtualMachine{}) // synced, empty
		f(ctx, p, w)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWatch_MaskedUpdateReportedAfterPin: an update that disagrees with a
// write in force (the VM powered off in vCenter right after the provider
// powered it on) is reported again once the write's pin ends, so that a
// controller that read the write learns that reads now answer otherwise;
// one that agrees by then is not.
func TestWatch_MaskedUpdateReportedAfterPin(t *testing.T) {
	w := NewWatch(nil)
	w.pin = 50 * time.Millisecond
	events := make(chan vmprovider.VM, 16)
	w.OnChange(func(vm vmprovider.VM, gone bool) { events <- vm })
	w.apply([]types.ObjectUpdate{enter("vm-1", "web-0", "uuid-1", types.VirtualMachinePowerStatePoweredOff)})
	<-events
	w.put(vmprovider.VM{Name: "web-0", InstanceUUID: "uuid-1", Power: vmprovider.PoweredOn})
	w.apply([]types.ObjectUpdate{modify("vm-1", types.VirtualMachinePowerStatePoweredOn)}) // agrees: the pin ends
	<-events
	w.put(vmprovider.VM{Name: "web-0", InstanceUUID: "uuid-1", Power: vmprovider.PoweredOn})
	w.apply([]types.ObjectUpdate{modify("vm-1", types.VirtualMachinePowerStatePoweredOff)}) // masked
	<-events
	if vm, _ := w.Get("web-0"); vm.Power != vmprovider.PoweredOn {
		t.Fatalf("under the pin: Get = %+v, want the write's PoweredOn", vm)
	}
	select {
	case vm := <-events:
		if vm.Power != vmprovider.PoweredOff {
			t.Fatalf("reported again as %+v, want PoweredOff", vm)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the masked PoweredOff was never reported again once the pin ended")
	}
	if vm, _ := w.Get("web-0"); vm.Power != vmprovider.PoweredOff {
		t.Errorf("after the pin: Get = %+v, want PoweredOff", vm)
	}
}
