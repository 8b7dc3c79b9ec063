package controllers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apitypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// simVM finds the VM called name in the simulator's datacenter DC0, over
// a session of its own, which logout ends.
func simVM(ctx context.Context, sim *vcsimtest.Sim, name string) (vm *object.VirtualMachine, logout func(), err error) {
	vc, end, err := vsphere.Connect(ctx, sim.Config())
	if err != nil {
		return nil, nil, err
	}
	logout = func() { _ = end(context.WithoutCancel(ctx)) }
	f := find.NewFinder(vc)
	dc, err := f.Datacenter(ctx, "DC0")
	if err == nil {
		f.SetDatacenter(dc)
		vm, err = f.VirtualMachine(ctx, name)
	}
	if err != nil {
		logout()
		return nil, nil, err
	}
	return vm, logout, nil
}

// powerOffOutside powers the VMs of ns called names off in vCenter, as
// someone with govc would.
func powerOffOutside(t *testing.T, sim *vcsimtest.Sim, ns string, names ...string) {
	t.Helper()
	ctx := context.Background()
	for _, name := range names {
		vm, logout, err := simVM(ctx, sim, ns+"-"+name)
		if err == nil {
			var task *object.Task
			if task, err = vm.PowerOff(ctx); err == nil {
				err = task.Wait(ctx)
			}
			logout()
		}
		if err != nil {
			t.Fatalf("power %s off: %v", name, err)
		}
	}
}

// vcenterPower returns the power state vCenter shows for the VM of ns
// called name.
func vcenterPower(ctx context.Context, sim *vcsimtest.Sim, ns, name string) (types.VirtualMachinePowerState, error) {
	vm, logout, err := simVM(ctx, sim, ns+"-"+name)
	if err != nil {
		return "", err
	}
	defer logout()
	return vm.PowerState(ctx)
}

// TestPowerOffOutside_HealedBySet: a VM of a healing set powered off in
// vCenter by someone else is said so (an event PoweredOffOutside on its
// VirtualMachine, Ready False with that reason, Healthy False PoweredOff)
// and left off until the set powers it on by its rules (event Restarting,
// after the unhealthy window); two of three powered off are a storm the
// set's guard holds: both stay off.
func TestPowerOffOutside_HealedBySet(t *testing.T) {
	const ns = "poweroff"
	e, sim, faults := startCounting(t, ns)
	ctx := context.Background()
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
	// The set's restart powered it on (a restart retried, as any call may
	// be, asks again); the VirtualMachine's controller never did.
	if n := faults.Calls()["PowerOnVM_Task"] - powerOns; n < 1 || strings.Contains(eventNotes(ctx, e, ns), "powered on again") {
		t.Errorf("%d power-ons for one VM powered off, want the set's; events:\n%s", n, eventNotes(ctx, e, ns))
	}
	waitHealthy(t, e, ns, live)

	// Two of three: a storm (maxUnhealthy 1), which holds both off. The
	// operator may learn of a power-off up to 10 s late (a write's pin in
	// the watch: a VM made in the last 10 s, say); an unhealthy window of
	// 15 s has both unhealthy at once before either is due, however late.
	window := []byte(`{"spec":{"remediation":{"unhealthyWindow":"15s"}}}`)
	if err := e.Client.Patch(ctx, &vmv1.VirtualMachineReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "test-rs"}},
		client.RawPatch(apitypes.MergePatchType, window)); err != nil {
		t.Fatal(err)
	}
	waitSet(t, e, ns, "seeing the 15s window", func(s *vmv1.VirtualMachineReplicaSet) bool {
		return s.Status.ObservedGeneration == s.Generation
	})
	ons := faults.Record("PowerOnVM_Task")
	defer ons.Stop()
	powerOffOutside(t, sim, ns, live[1], live[2])
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var s vmv1.VirtualMachineReplicaSet
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "test-rs"}, &s); err != nil {
			return false, err
		}
		st, reason, unhealthy := remediation(&s)
		return st == metav1.ConditionFalse && reason == replicaset.HoldTooManyUnhealthy.String() && unhealthy == 2, nil
	})
	if err != nil {
		t.Fatalf("two of three powered off: not in a storm: %v; events:\n%s", err, eventNotes(ctx, e, ns))
	}
	stormed := map[string]types.ManagedObjectReference{}
	for _, name := range live[1:] {
		stormed[name] = mustSimRef(t, sim, ns+"-"+name)
	}
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		for _, body := range ons.Bodies() {
			for name, ref := range stormed {
				if strings.Contains(string(body), ">"+ref.Value+"<") {
					t.Fatalf("%s powered on in the storm; events:\n%s", name, eventNotes(ctx, e, ns))
				}
			}
		}
	}
	for _, name := range live[1:] {
		if p, err := vcenterPower(ctx, sim, ns, name); err != nil || p != types.VirtualMachinePowerStatePoweredOff {
			t.Errorf("%s is %s (%v) in the storm, want it left off", name, p, err)
		}
	}
}

// eventNotes lists the events of ns, one a line, for a failure's message.
func eventNotes(ctx context.Context, e *testenv.Env, ns string) string {
	var l eventsv1.EventList
	if err := e.Client.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	var seen []string
	for _, ev := range l.Items {
		seen = append(seen, ev.EventTime.Format("15:04:05.000")+" "+ev.Regarding.Name+"/"+ev.Reason+": "+ev.Note)
	}
	return strings.Join(seen, "\n")
}

// mustSimRef returns the reference of the simulator's VM called name.
func mustSimRef(t *testing.T, sim *vcsimtest.Sim, name string) types.ManagedObjectReference {
	t.Helper()
	vm, logout, err := simVM(context.Background(), sim, name)
	if err != nil {
		t.Fatal(err)
	}
	defer logout()
	return vm.Reference()
}
