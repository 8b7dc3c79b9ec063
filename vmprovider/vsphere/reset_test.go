package vsphere_test

import (
	"context"
	"errors"
	"testing"

	"github.com/replicakit/replicakit/vmprovider"
)

// TestReset: a reset restarts the owner's VM in vCenter (a boot time
// after the one before), powers on one that is off, and refuses a VM
// without the owner's mark and one that is gone.
func TestReset(t *testing.T) {
	faults, _, p := startCounted(t)
	ctx := context.Background()
	for _, on := range []bool{true, false} {
		name := map[bool]string{true: "r-on", false: "r-off"}[on]
		if _, err := p.Create(ctx, vmprovider.Spec{Name: name, Owner: ownerA, PowerOn: on}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Reset(ctx, "r-on", ownerA.UID); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if n := faults.Calls()["ResetVM_Task"]; n != 1 {
		t.Errorf("vCenter saw %d resets, want 1", n)
	}
	if vm, err := p.Get(ctx, "r-on"); err != nil || vm.Power != vmprovider.PoweredOn {
		t.Errorf("after Reset the VM is %+v, %v; want it on", vm, err)
	}
	if err := p.Reset(ctx, "r-off", ownerA.UID); err != nil {
		t.Fatalf("Reset of a VM that is off: %v", err)
	}
	if vm, err := p.Get(ctx, "r-off"); err != nil || vm.Power != vmprovider.PoweredOn {
		t.Errorf("after Reset the VM that was off is %+v, %v; want it on", vm, err)
	}
	if err := p.Reset(ctx, "r-on", "someone-else"); !errors.Is(err, vmprovider.ErrNotOwned) {
		t.Errorf("Reset by another owner: %v, want ErrNotOwned", err)
	}
	if err := p.Reset(ctx, "gone", ownerA.UID); !errors.Is(err, vmprovider.ErrNotFound) {
		t.Errorf("Reset of a VM that does not exist: %v, want ErrNotFound", err)
	}
}
