package vsphere_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
)

// failCustomization makes the simulator report the guest customization of
// the VM called name failed, as vCenter reports it (vSphere API reference,
// GuestInfoCustomizationInfo: TOOLSDEPLOYPKG_FAILED with its error).
func failCustomization(t *testing.T, sim interface{ Map() *simulator.Registry }, ref types.ManagedObjectReference, msg string) {
	t.Helper()
	m := sim.Map()
	vm := m.Get(ref).(*simulator.VirtualMachine)
	now := time.Now()
	sc := &simulator.Context{Context: context.Background(), Map: m}
	m.WithLock(sc, vm, func() {
		m.Update(sc, vm, []types.PropertyChange{{Name: "guest.customizationInfo", Val: &types.GuestInfoCustomizationInfo{
			CustomizationStatus: string(types.GuestInfoCustomizationStatusTOOLSDEPLOYPKG_FAILED),
			StartTime:           &now, EndTime: &now, ErrorMsg: msg,
		}}})
	})
}

// TestCustomizationFailed: a VM whose guest customization failed (its
// cloud-init never applied) is reported failed with vCenter's reason, and
// a Set that heals replaces it at once rather than wait out its start-up
// window.
func TestCustomizationFailed(t *testing.T) {
	sim, p := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := &vmprovider.Set{Provider: p, Template: vmprovider.Spec{Owner: ownerA, PowerOn: true},
		Policy: deletionpolicy.Oldest{}, Names: naming.Indexed{Base: "web"},
		Spec: replicaset.Spec{Remediation: &replicaset.Remediation{StartupWindow: time.Hour, UnhealthyWindow: time.Hour}}}
	now := time.Now()
	if _, _, err := s.Scale(ctx, 1, now); err != nil {
		t.Fatal(err)
	}
	failCustomization(t, sim.Model, mustRef(t, sim, "web-0"), "NicSettingMismatch")
	vm, err := p.Get(ctx, "web-0")
	if err != nil || !strings.Contains(vm.Failed, "customization failed: NicSettingMismatch") {
		t.Fatalf("Get(web-0) = Failed %q, %v; want the customization's failure and reason", vm.Failed, err)
	}
	plan, _, err := s.Scale(ctx, 1, now.Add(time.Minute))
	if err != nil || len(plan.Replace) != 1 || plan.Replace[0].Name != "web-0" || plan.Replace[0].Phase != replicaset.PhaseFailed {
		t.Fatalf("the pass after the failure: plan %v, %v; want web-0 replaced as failed", plan, err)
	}
	if n := count(t, sim, "web-0"); n != 0 {
		t.Errorf("%d VMs called web-0 after its replacement, want 0", n)
	}
}
