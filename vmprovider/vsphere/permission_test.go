package vsphere_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/vim25/types"

	simfaults "github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// TestPermission_PrivilegesInError: when vCenter refuses a call with
// NoPermission, whose message ("Permission to perform this operation was
// denied.") names nothing, the provider's error names the privileges the
// fault says are missing and on which object, and still carries the
// fault. The simulator's gate answers as vSphere 8 does
// (missingPrivileges).
func TestPermission_PrivilegesInError(t *testing.T) {
	faults, sim, p := startCounted(t)
	ctx := context.Background()
	tmpl, _ := templateVM(t, sim)

	lift := faults.Deny("CloneVM_Task", tmpl.Reference(), "VirtualMachine.Provisioning.Clone", "Resource.AssignVMToPool")
	_, err := p.Create(ctx, vmprovider.Spec{Name: "web-0", Owner: ownerA})
	want := "the account lacks VirtualMachine.Provisioning.Clone, Resource.AssignVMToPool on VirtualMachine " + tmpl.Reference().Value
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Create denied by vCenter: %v, want an error saying %q", err, want)
	}
	if !fault.Is(err, &types.NoPermission{}) {
		t.Errorf("Create denied by vCenter: %v, want it to carry the NoPermission fault", err)
	}
	if strings.Count(err.Error(), "the account lacks") != 1 {
		t.Errorf("Create denied by vCenter: %v, want the privileges said once", err)
	}
	lift()

	vm, err := p.Create(ctx, vmprovider.Spec{Name: "web-0", Owner: ownerA, PowerOn: true})
	if err != nil {
		t.Fatalf("Create once allowed: %v", err)
	}
	ref := mustRef(t, sim, vm.Name)
	faults.Deny("PowerOffVM_Task", ref, "VirtualMachine.Interact.PowerOff")
	err = p.SetPower(ctx, vm.Name, ownerA.UID, vmprovider.PoweredOff)
	want = "the account lacks VirtualMachine.Interact.PowerOff on VirtualMachine " + ref.Value
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("SetPower denied by vCenter: %v, want an error saying %q", err, want)
	}
}

// TestNew_ChecksPrivileges: New asks vCenter whether the account holds
// what the provider needs on its placement, and fails, naming each
// privilege and object it lacks, when it does not; the same account with
// them starts.
func TestNew_ChecksPrivileges(t *testing.T) {
	faults := &simfaults.Faults{}
	sim := vcsimtest.StartFaulty(t, faults)
	ctx := context.Background()
	cfg := sim.Config()
	pool, err := sim.ResourcePool(ctx, "/DC0/host/DC0_C1/Resources")
	if err != nil {
		t.Fatal(err)
	}
	liftClone := faults.Deny("CloneVM_Task", mustRef(t, sim, "DC0_H0_VM0"), "VirtualMachine.Provisioning.Clone")
	liftPool := faults.Deny("CloneVM_Task", pool, "Resource.AssignVMToPool")
	_, err = vsphere.New(ctx, cfg)
	if !errors.Is(err, vsphere.ErrPrivileges) {
		t.Fatalf("New with privileges denied = %v, want ErrPrivileges", err)
	}
	for _, want := range []string{"VirtualMachine.Provisioning.Clone on template DC0_H0_VM0", "Resource.AssignVMToPool on resource pool"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("New's error %q does not say %q", err, want)
		}
	}
	liftClone()
	liftPool()
	p, err := vsphere.New(ctx, cfg)
	if err != nil {
		t.Fatalf("New with every privilege: %v", err)
	}
	_ = p.Close(ctx)
}
