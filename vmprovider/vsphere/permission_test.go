package vsphere_test

import (
	"context"
	"strings"
	"testing"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/vmprovider"
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
