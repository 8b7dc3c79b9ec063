package vcsim_test

import (
	"context"
	"testing"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// TestPowerOffs: a guest shutdown and a hard power-off are told apart
// from vCenter's events, also once the VM is destroyed; under the gate a
// guest shutdown has powered the VM off by the time the next call is
// served; an ignored shutdown is answered and leaves the VM on.
func TestPowerOffs(t *testing.T) {
	f := &vcsim.Faults{}
	s, err := vcsim.New(f.Serialized)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ctx := context.Background()
	cfg := s.Config()
	p, err := vsphere.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	vc, logout, err := vsphere.Connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logout(context.Background()) })
	finder := find.NewFinder(vc, true)
	vmOf := func(name string) *object.VirtualMachine {
		t.Helper()
		if _, err := p.Create(ctx, vmprovider.Spec{Name: name, Owner: vmprovider.Owner{UID: "uid-p"}, PowerOn: true}); err != nil {
			t.Fatal(err)
		}
		vm, err := finder.VirtualMachine(ctx, "/DC0/vm/"+name)
		if err != nil {
			t.Fatal(err)
		}
		return vm
	}
	power := func(vm *object.VirtualMachine) types.VirtualMachinePowerState {
		t.Helper()
		var m mo.VirtualMachine
		if err := vm.Properties(ctx, vm.Reference(), []string{"runtime.powerState"}, &m); err != nil {
			t.Fatal(err)
		}
		return m.Runtime.PowerState
	}
	destroy := func(vm *object.VirtualMachine) {
		t.Helper()
		task, err := vm.Destroy(ctx)
		if err == nil {
			err = task.Wait(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	want := func(name string, guest, hard int) {
		t.Helper()
		g, h, err := vcsim.PowerOffs(ctx, cfg, name)
		if err != nil || g != guest || h != hard {
			t.Errorf("PowerOffs(%s) = %d guest, %d hard, %v; want %d, %d", name, g, h, err, guest, hard)
		}
	}

	// The simulator's clones report tools not running, and its
	// ShutdownGuest does not mind.
	soft := vmOf("soft")
	if err := soft.ShutdownGuest(ctx); err != nil {
		t.Fatalf("ShutdownGuest: %v", err)
	}
	if got := power(soft); got != types.VirtualMachinePowerStatePoweredOff {
		t.Errorf("the call after ShutdownGuest reads power %s, want poweredOff", got)
	}
	destroy(soft)
	want("soft", 1, 0)

	hard := vmOf("hard")
	task, err := hard.PowerOff(ctx)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	destroy(hard)
	want("hard", 0, 1)

	deaf := vmOf("deaf")
	lift := f.Ignore("ShutdownGuest", deaf.Reference())
	if err := deaf.ShutdownGuest(ctx); err != nil {
		t.Fatalf("ignored ShutdownGuest: %v, want it answered", err)
	}
	if got := power(deaf); got != types.VirtualMachinePowerStatePoweredOn {
		t.Errorf("after an ignored ShutdownGuest: power %s, want poweredOn", got)
	}
	want("deaf", 0, 0)
	if got := f.Calls()["ShutdownGuest"]; got != 2 {
		t.Errorf("ShutdownGuest calls counted: %d, want 2", got)
	}
	lift()
	if err := deaf.ShutdownGuest(ctx); err != nil {
		t.Fatalf("ShutdownGuest after lifting: %v", err)
	}
	if got := power(deaf); got != types.VirtualMachinePowerStatePoweredOff {
		t.Errorf("after ShutdownGuest, the ignoring lifted: power %s, want poweredOff", got)
	}
	want("deaf", 1, 0)
	want("never-made", 0, 0)
}
