package controllers_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
)

// TestCustomizationFailed_Replaced: when vCenter reports a VM's guest
// customization failed (its cloud-init never applied), its VirtualMachine
// says so (Ready False CustomizationFailed, with vCenter's reason) and the
// healing set replaces it at once, though its windows are an hour long.
func TestCustomizationFailed_Replaced(t *testing.T) {
	const ns = "custfail"
	e, sim := start(t, ns)
	ctx := context.Background()
	createHealingSet(t, e, ns, 1, &vmv1.Remediation{
		StartupWindow: &metav1.Duration{Duration: time.Hour}, UnhealthyWindow: &metav1.Duration{Duration: time.Hour}})
	live := settle(t, e, sim, ns, 1)
	failed := live[0]
	m := sim.Model.Map()
	var target *simulator.VirtualMachine
	for _, o := range m.All("VirtualMachine") {
		if vm := o.(*simulator.VirtualMachine); vm.Name == ns+"-"+failed {
			target = vm
		}
	}
	if target == nil {
		t.Fatalf("no vSphere VM %s-%s", ns, failed)
	}
	now := time.Now()
	sc := &simulator.Context{Context: ctx, Map: m}
	m.WithLock(sc, target, func() {
		m.Update(sc, target, []types.PropertyChange{{Name: "guest.customizationInfo", Val: &types.GuestInfoCustomizationInfo{
			CustomizationStatus: string(types.GuestInfoCustomizationStatusTOOLSDEPLOYPKG_FAILED),
			StartTime:           &now, EndTime: &now, ErrorMsg: "NicSettingMismatch",
		}}})
	})
	var reason string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var vm vmv1.VirtualMachine
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: failed}, &vm); err != nil {
			return true, nil // gone already: replaced
		}
		if c := meta.FindStatusCondition(vm.Status.Conditions, "Ready"); c != nil && c.Reason == controllers.ReasonCustomizationFailed {
			reason = c.Message
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%s not replaced within a minute: %v", failed, err)
	}
	st := waitState(t, e, sim, ns, "settled on 1 again", func(st vmcheck.State) bool { return st.Settled(1) })
	if slices.Contains(st.Live, failed) {
		t.Errorf("live VMs %v still hold %s", st.Live, failed)
	}
	t.Logf("%s said %q before it went", failed, reason)
}
