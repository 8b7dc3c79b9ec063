package vsphere

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vmware/govmomi/vim25/types"
	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/vmprovider"
)

// pinned returns the names the watch holds a write for, sorted, whether or
// not the write's pin has passed.
func pinned(w *Watch) []string {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return slices.Sorted(maps.Keys(w.written))
}

// passPins ends the pins of the writes the watch holds for names (of every
// write, without names) as pinFor passing would, without waiting for it.
func passPins(w *Watch, names ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	past := time.Now().Add(-time.Nanosecond)
	for name, wr := range w.written {
		if len(names) == 0 || slices.Contains(names, name) {
			wr.until = past
			w.written[name] = wr
		}
	}
}

// enter is the update that brings the VM ref, called name, into the watch.
func enter(ref, name, uuid string, power types.VirtualMachinePowerState) types.ObjectUpdate {
	return types.ObjectUpdate{Kind: types.ObjectUpdateKindEnter, Obj: vmRef(ref), ChangeSet: []types.PropertyChange{
		{Name: "name", Val: name},
		{Name: "config.instanceUuid", Val: uuid},
		{Name: "runtime.powerState", Val: power},
	}}
}

// modify is the update that reports the VM ref's power.
func modify(ref string, power types.VirtualMachinePowerState) types.ObjectUpdate {
	return types.ObjectUpdate{Kind: types.ObjectUpdateKindModify, Obj: vmRef(ref), ChangeSet: []types.PropertyChange{
		{Name: "runtime.powerState", Val: power},
	}}
}

// leave is the update that reports the VM ref gone.
func leave(ref string) types.ObjectUpdate {
	return types.ObjectUpdate{Kind: types.ObjectUpdateKindLeave, Obj: vmRef(ref)}
}

func vmRef(value string) types.ManagedObjectReference {
	return types.ManagedObjectReference{Type: "VirtualMachine", Value: value}
}

// TestCached_WriteToAbsentVMIsNotKeptForever: a destroy of a VM vCenter
// does not have (which succeeds) and a power change of one (which fails
// with ErrNotFound) pin the VM as gone, and no update will ever settle
// those pins; once they pass, the watch's next update, or the next write
// through Cached, drops them.
func TestCached_WriteToAbsentVMIsNotKeptForever(t *testing.T) {
	onSyncedWatch(t, func(ctx context.Context, p *Provider, w *Watch) {
		cached := Cached{Provider: p, Watch: w}

		if err := cached.Delete(ctx, "never-0", "uid-1"); err != nil {
			t.Fatalf("Delete of a VM vCenter lacks: %v; want success", err)
		}
		if err := cached.SetPower(ctx, "never-1", "uid-1", vmprovider.PoweredOn); !errors.Is(err, vmprovider.ErrNotFound) {
			t.Fatalf("SetPower of a VM vCenter lacks: %v; want ErrNotFound", err)
		}
		if diff := cmp.Diff([]string{"never-0", "never-1"}, pinned(w)); diff != "" {
			t.Fatalf("the writes' pins (-want +got):\n%s", diff)
		}
		for _, name := range []string{"never-0", "never-1"} {
			if vm, err := cached.Get(ctx, name); !errors.Is(err, vmprovider.ErrNotFound) {
				t.Errorf("Get(%q) while its pin lasts = %+v, %v; want ErrNotFound", name, vm, err)
			}
		}

		passPins(w)
		w.apply([]types.ObjectUpdate{enter("vm-other", "other", "uuid-other", types.VirtualMachinePowerStatePoweredOn)})
		if diff := cmp.Diff([]string(nil), pinned(w)); diff != "" {
			t.Errorf("after the pins passed and an update came (-want +got):\n%s", diff)
		}

		if err := cached.Delete(ctx, "never-2", "uid-1"); err != nil {
			t.Fatalf("Delete of a VM vCenter lacks: %v; want success", err)
		}
		passPins(w)
		if err := cached.Delete(ctx, "never-3", "uid-1"); err != nil {
			t.Fatalf("Delete of a VM vCenter lacks: %v; want success", err)
		}
		if diff := cmp.Diff([]string{"never-3"}, pinned(w)); diff != "" {
			t.Errorf("after a pin passed and another write came (-want +got):\n%s", diff)
		}
	})
}

// TestWatch_UnsettledWritesDoNotOutliveTheirPin: each way a write's pin is
// left with no update to come that settles it keeps it while it lasts,
// and drops it once it has passed, at the watch's next update or the next
// write, whichever comes first.
func TestWatch_UnsettledWritesDoNotOutliveTheirPin(t *testing.T) {
	on, off := types.VirtualMachinePowerStatePoweredOn, types.VirtualMachinePowerStatePoweredOff
	cases := []struct {
		name  string
		leave func(w *Watch) // leaves a pin for web-0 that no update settles
	}{{
		name: "destroy of a VM the watch never saw",
		leave: func(w *Watch) {
			w.forget("web-0")
		},
	}, {
		name: "destroy whose leave came before it returned",
		leave: func(w *Watch) {
			w.apply([]types.ObjectUpdate{enter("vm-1", "web-0", "uuid-1", on)})
			w.apply([]types.ObjectUpdate{leave("vm-1")})
			w.forget("web-0")
		},
	}, {
		name: "create whose agreeing update came first, of a VM that then left",
		leave: func(w *Watch) {
			w.apply([]types.ObjectUpdate{enter("vm-1", "web-0", "uuid-1", off)})
			w.apply([]types.ObjectUpdate{modify("vm-1", on)})
			w.put(vmprovider.VM{Name: "web-0", InstanceUUID: "uuid-1", Power: vmprovider.PoweredOn})
			w.apply([]types.ObjectUpdate{leave("vm-1")})
		},
	}, {
		name: "power change of a VM that left before the watch saw the change",
		leave: func(w *Watch) {
			w.apply([]types.ObjectUpdate{enter("vm-1", "web-0", "uuid-1", off)})
			w.powered("web-0", vmprovider.PoweredOn)
			w.apply([]types.ObjectUpdate{leave("vm-1")})
		},
	}}
	triggers := []struct {
		name string
		next func(w *Watch)
		want []string
	}{{
		name: "then an update",
		next: func(w *Watch) {
			w.apply([]types.ObjectUpdate{enter("vm-2", "other", "uuid-2", on)})
		},
	}, {
		name: "then a write",
		next: func(w *Watch) {
			w.put(vmprovider.VM{Name: "other", InstanceUUID: "uuid-2", Power: vmprovider.PoweredOn})
		},
		want: []string{"other"},
	}}
	for _, c := range cases {
		for _, tr := range triggers {
			t.Run(c.name+"/"+tr.name, func(t *testing.T) {
				w := NewWatch(nil)
				c.leave(w)
				if diff := cmp.Diff([]string{"web-0"}, pinned(w)); diff != "" {
					t.Fatalf("before the pin passed (-want +got):\n%s", diff)
				}
				// Another update, while the pin lasts, keeps it.
				w.apply([]types.ObjectUpdate{enter("vm-3", "bystander", "uuid-3", on)})
				if diff := cmp.Diff([]string{"web-0"}, pinned(w)); diff != "" {
					t.Fatalf("after an update while the pin lasts (-want +got):\n%s", diff)
				}
				passPins(w)
				tr.next(w)
				if diff := cmp.Diff(tr.want, pinned(w)); diff != "" {
					t.Errorf("after the pin passed (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestWatch_LateLeaveOfEarlierVMKeepsFreshCreate: with names reused (as
// naming.Indexed reuses web-0 once it is gone), the removal of the VM a
// name used to be, reported after that name's VM was created again, is an
// update from before the create: it neither ends the create's pin nor
// hides the new VM.
func TestWatch_LateLeaveOfEarlierVMKeepsFreshCreate(t *testing.T) {
	w := NewWatch(nil)
	w.apply([]types.ObjectUpdate{enter("vm-1", "web-0", "uuid-1", types.VirtualMachinePowerStatePoweredOn)})
	w.forget("web-0")
	fresh := vmprovider.VM{Name: "web-0", InstanceUUID: "uuid-2", Power: vmprovider.PoweredOn}
	w.put(fresh)
	w.apply([]types.ObjectUpdate{leave("vm-1")})
	vm, ok := w.Get("web-0")
	if !ok {
		t.Fatalf("after the earlier VM's late leave: Get says gone; want the created VM")
	}
	if diff := cmp.Diff(fresh, vm); diff != "" {
		t.Errorf("after the earlier VM's late leave: Get (-want +got):\n%s", diff)
	}
}

// The model of TestWatch_Written_Properties: what the watch has been told,
// and which writes' pins are in force.
type (
	// seenVM is the part of a VM the model follows.
	seenVM struct {
		UUID  string
		Power vmprovider.PowerState
	}
	// read is what Get returns, as far as the model follows it.
	read struct {
		Exists bool
		VM     seenVM
	}
	// pinModel holds, like the watch, what the updates said (by reference
	// and by name) and the writes whose pin is in force.
	pinModel struct {
		refs  map[string]namedVM
		names map[string]seenVM
		pins  map[string]read
	}
	namedVM struct {
		name string
		vm   seenVM
	}
)

// TestWatch_Written_Properties: over any sequence of updates (VMs entering,
// changing power and leaving, in any order, with names reused), writes
// (creates, destroys, power changes) and pins passing, reads return a
// write's state until an update agrees with it, or reports gone the VM a
// destroy was pinned for, or the pin passes, and the watch's state after;
// and after every update or write the watch holds no write whose pin has
// passed or been settled.
func TestWatch_Written_Properties(t *testing.T) {
	names := []string{"a", "b"}
	powers := []vmprovider.PowerState{vmprovider.PoweredOn, vmprovider.PoweredOff}
	vimPower := map[vmprovider.PowerState]types.VirtualMachinePowerState{
		vmprovider.PoweredOn:  types.VirtualMachinePowerStatePoweredOn,
		vmprovider.PoweredOff: types.VirtualMachinePowerStatePoweredOff,
	}
	rapid.Check(t, func(t *rapid.T) {
		w := NewWatch(nil)
		m := pinModel{refs: map[string]namedVM{}, names: map[string]seenVM{}, pins: map[string]read{}}
		passed := false // whether the last step only passed a pin

		// settle ends a write's pin for name that agrees with vm, as an
		// update reporting vm does.
		settle := func(name string, vm seenVM) {
			if p, ok := m.pins[name]; ok && p.Exists && p.VM == vm {
				delete(m.pins, name)
			}
		}
		knownRef := func(t *rapid.T) string {
			if len(m.refs) == 0 {
				t.Skip("no VM in the watch")
			}
			return rapid.SampledFrom(slices.Sorted(maps.Keys(m.refs))).Draw(t, "ref")
		}
		t.Repeat(map[string]func(*rapid.T){
			"enter": func(t *rapid.T) {
				name := rapid.SampledFrom(names).Draw(t, "name")
				gen := rapid.IntRange(0, 2).Draw(t, "gen")
				ref, uuid := "vm-"+name+"-"+string(rune('0'+gen)), name+"-"+string(rune('0'+gen))
				if _, ok := m.refs[ref]; ok {
					t.Skip("already in the watch")
				}
				vm := seenVM{UUID: uuid, Power: rapid.SampledFrom(powers).Draw(t, "power")}
				w.apply([]types.ObjectUpdate{enter(ref, name, uuid, vimPower[vm.Power])})
				m.refs[ref] = namedVM{name, vm}
				m.names[name] = vm
				settle(name, vm)
				passed = false
			},
			"modify": func(t *rapid.T) {
				ref := knownRef(t)
				r := m.refs[ref]
				r.vm.Power = rapid.SampledFrom(powers).Draw(t, "power")
				w.apply([]types.ObjectUpdate{modify(ref, vimPower[r.vm.Power])})
				m.refs[ref] = r
				m.names[r.name] = r.vm
				settle(r.name, r.vm)
				passed = false
			},
			"leave": func(t *rapid.T) {
				ref := knownRef(t)
				r := m.refs[ref]
				w.apply([]types.ObjectUpdate{leave(ref)})
				delete(m.refs, ref)
				if cur, ok := m.names[r.name]; ok && cur.UUID == r.vm.UUID {
					delete(m.names, r.name)
				}
				if p, ok := m.pins[r.name]; ok && !p.Exists {
					delete(m.pins, r.name)
				}
				passed = false
			},
			"create": func(t *rapid.T) {
				name := rapid.SampledFrom(names).Draw(t, "name")
				gen := rapid.IntRange(0, 2).Draw(t, "gen")
				vm := seenVM{UUID: name + "-" + string(rune('0'+gen)), Power: rapid.SampledFrom(powers).Draw(t, "power")}
				w.put(vmprovider.VM{Name: name, InstanceUUID: vm.UUID, Power: vm.Power})
				m.pins[name] = read{Exists: true, VM: vm}
				passed = false
			},
			"destroy": func(t *rapid.T) {
				name := rapid.SampledFrom(names).Draw(t, "name")
				w.forget(name)
				delete(m.names, name)
				m.pins[name] = read{}
				passed = false
			},
			"power": func(t *rapid.T) {
				name := rapid.SampledFrom(names).Draw(t, "name")
				power := rapid.SampledFrom(powers).Draw(t, "power")
				w.powered(name, power)
				vm, ok := m.names[name]
				if p, pin := m.pins[name]; pin && p.Exists {
					vm, ok = p.VM, true
				}
				if ok && vm.Power != power {
					vm.Power = power
					m.pins[name] = read{Exists: true, VM: vm}
				}
				passed = false
			},
			"pass": func(t *rapid.T) {
				if len(m.pins) == 0 {
					t.Skip("no pin in force")
				}
				name := rapid.SampledFrom(slices.Sorted(maps.Keys(m.pins))).Draw(t, "name")
				passPins(w, name)
				delete(m.pins, name)
				passed = true
			},
			"": func(t *rapid.T) {
				for _, name := range names {
					want, ok := m.pins[name]
					if !ok {
						vm, seen := m.names[name]
						want = read{Exists: seen, VM: vm}
					}
					vm, exists := w.Get(name)
					got := read{Exists: exists}
					if exists {
						got.VM = seenVM{UUID: vm.InstanceUUID, Power: vm.Power}
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Fatalf("Get(%q) (-want +got):\n%s", name, diff)
					}
				}
				if passed {
					return // the pin that passed goes at the next update or write
				}
				if diff := cmp.Diff(slices.Sorted(maps.Keys(m.pins)), pinned(w)); diff != "" {
					t.Fatalf("the writes the watch holds (-want +got):\n%s", diff)
				}
			},
		})
	})
}
