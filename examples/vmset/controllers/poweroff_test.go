package controllers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/vim25/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// powerOffOutside powers the VMs of ns called names off in vCenter, as
// someone with govc would.
func powerOffOutside(t *testing.T, sim *vcsimtest.Sim, ns string, names ...string) {
	t.Helper()
	ctx := context.Background()
	vc, logout, err := vsphere.Connect(ctx, sim.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logout(ctx) }()
	f := find.NewFinder(vc)
	dc, err := f.Datacenter(ctx, "DC0")
	if err != nil {
		t.Fatal(err)
	}
	f.SetDatacenter(dc)
	for _, name := range names {
		vm, err := f.VirtualMachine(ctx, ns+"-"+name)
		if err == nil {
			var task interface{ Wait(context.Context) error }
			if task, err = vm.PowerOff(ctx); err == nil {
				err = task.Wait(ctx)
			}
		}
		if err != nil {
			t.Fatalf("power %s off: %v", name, err)
		}
	}
}

// vcenterPower returns the power state vCenter shows for the VM of ns
// called name.
func vcenterPower(ctx context.Context, sim *vcsimtest.Sim, ns, name string) (types.VirtualMachinePowerState, error) {
	vc, logout, err := vsphere.Connect(ctx, sim.Config())
	if err != nil {
		return "", err
	}
	defer func() { _ = logout(ctx) }()
	f := find.NewFinder(vc)
	dc, err := f.Datacenter(ctx, "DC0")
	if err != nil {
		return "", err
	}
	f.SetDatacenter(dc)
	vm, err := f.VirtualMachine(ctx, ns+"-"+name)
	if err != nil {
		return "", err
	}
	return vm.PowerState(ctx)
}

// TestPowerOffOutside_HealedBySet: a VM of a healing set powered off in
// vCenter by someone else is said so (an event PoweredOffOutside on its
// VirtualMachine, Ready False with that reason, Healthy False PoweredOff)
// and left off until the set powers it on by its rules (event Restarting,
// after the unhealthy window); two of three powered off are a storm the
// set's guard holds: both stay off.
func TestPowerOffOutside_HealedBySet(t *testing.T) {
	e, sim, faults := startCounting(t)
	ctx := context.Background()
	const ns = "poweroff"
	createHealingSet(t, e, ns, 3, &vmv1.Remediation{StartupWindow: &metav1.Duration{Duration: time.Hour},
		UnhealthyWindow: &metav1.Duration{Duration: time.Second}, MaxUnhealthy: ptr.To(intstr.FromInt32(1))})
	live := settle(t, e, sim, ns, 3)
	waitHealthy(t, e, ns, live)

	// One powered off: reported, left off, then healed by the set.
	off := live[0]
	powerOns := faults.Calls()["PowerOnVM_Task"]
	powerOffOutside(t, sim, ns, off)
	if note := waitEvent(t, e, ns, off, controllers.ReasonPoweredOffOutside, ns+"-"+off); !strings.Contains(note, "left off for its set") {
		t.Errorf("event PoweredOffOutside %q, want it to say the set heals it", note)
	}
	var cond *metav1.Condition
	var gone bool
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		vm, c, _, err := vmHealth(ctx, e, ns, off)
		cond, gone = c, vm == nil
		return err == nil && (gone || c != nil && c.Reason == "PoweredOff"), err
	})
	if err != nil || gone {
		t.Fatalf("%s: Healthy %+v, gone %t: %v; want Healthy False PoweredOff", off, cond, gone, err)
	}
	if note := waitEvent(t, e, ns, "test-rs", "Restarting", off); !strings.Contains(note, "PoweredOff") {
		t.Errorf("event Restarting %q, want it to say PoweredOff", note)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := vcenterPower(ctx, sim, ns, off)
		return err == nil && p == types.VirtualMachinePowerStatePoweredOn, nil
	})
	if err != nil {
		t.Fatalf("%s was not powered on again by its set", off)
	}
	if n := faults.Calls()["PowerOnVM_Task"] - powerOns; n != 1 {
		t.Errorf("%d power-ons for one VM powered off, want 1, the set's", n)
	}
	waitHealthy(t, e, ns, live)

	// Two of three: a storm (maxUnhealthy 1), which holds both off.
	powerOns = faults.Calls()["PowerOnVM_Task"]
	powerOffOutside(t, sim, ns, live[1], live[2])
	waitSet(t, e, ns, "in a storm", func(s *vmv1.VirtualMachineReplicaSet) bool {
		st, reason, unhealthy := remediation(s)
		return st == metav1.ConditionFalse && reason == replicaset.HoldTooManyUnhealthy.String() && unhealthy == 2
	})
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if n := faults.Calls()["PowerOnVM_Task"] - powerOns; n != 0 {
			t.Fatalf("%d power-ons in the storm, want none", n)
		}
	}
	for _, name := range live[1:] {
		if p, err := vcenterPower(ctx, sim, ns, name); err != nil || p != types.VirtualMachinePowerStatePoweredOff {
			t.Errorf("%s is %s (%v) in the storm, want it left off", name, p, err)
		}
	}
}
