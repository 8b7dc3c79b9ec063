package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube/kubetest"
)

// TestReplicaSetAdapter_Remediation: spec.remediation reads as the
// planner's Remediation: absent is none, {} restarts first with the
// planner's defaults, each field as given; a set asking for restarts is
// refused by an adapter that cannot reset VMs.
func TestReplicaSetAdapter_Remediation(t *testing.T) {
	reset := func(context.Context, *vmv1.VirtualMachine) error { return nil }
	for _, tc := range []struct {
		desc    string
		rm      *vmv1.Remediation
		noReset bool
		want    *replicaset.Remediation
		wantErr string
	}{
		{desc: "absent", want: nil},
		{desc: "empty", rm: &vmv1.Remediation{}, want: &replicaset.Remediation{Restart: true}},
		{desc: "every field", rm: &vmv1.Remediation{
			StartupWindow: &metav1.Duration{Duration: time.Minute}, UnhealthyWindow: &metav1.Duration{Duration: 30 * time.Second},
			Backoff: &metav1.Duration{Duration: 2 * time.Minute}, Restart: ptr.To(false),
			MaxUnhealthy: ptr.To(intstr.FromString("50%")), MaxInFlight: ptr.To(intstr.FromInt32(2)), MaxFailures: ptr.To[int32](5),
		}, want: &replicaset.Remediation{StartupWindow: time.Minute, UnhealthyWindow: 30 * time.Second, Backoff: 2 * time.Minute,
			MaxUnhealthy: replicaset.Percent(50), MaxInFlight: replicaset.Count(2), MaxFailures: 5}},
		{desc: "replacing only, without resets", rm: &vmv1.Remediation{Restart: ptr.To(false)}, noReset: true,
			want: &replicaset.Remediation{}},
		{desc: "restarting without resets", rm: &vmv1.Remediation{}, noReset: true, wantErr: "this operator cannot reset VMs"},
		{desc: "a zero window", rm: &vmv1.Remediation{UnhealthyWindow: &metav1.Duration{}}, wantErr: "spec.remediation: unhealthyWindow 0s is not a positive duration"},
		{desc: "a negative amount", rm: &vmv1.Remediation{MaxInFlight: ptr.To(intstr.FromInt32(-1))}, wantErr: "spec.remediation: maxInFlight"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			a := controllers.ReplicaSetAdapter{Reset: reset}
			if tc.noReset {
				a.Reset = nil
			}
			set := &vmv1.VirtualMachineReplicaSet{Spec: vmv1.VirtualMachineReplicaSetSpec{
				Selector: &vmv1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}, Remediation: tc.rm}}
			spec, err := a.Spec(set)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %v, want %q", err, tc.wantErr)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, spec.Remediation, cmp.Comparer(func(a, b replicaset.Amount) bool { return a == b })); diff != "" {
				t.Errorf("Remediation (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReplicaSetAdapter_CheckHealth: a VirtualMachine's health is its
// Healthy condition; before it has one, its Ready condition.
func TestReplicaSetAdapter_CheckHealth(t *testing.T) {
	cond := func(typ string, st metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, Reason: reason}
	}
	for _, tc := range []struct {
		desc       string
		uuid       string
		conds      []metav1.Condition
		wantOK     bool
		wantReason string
	}{
		{"healthy", "u", []metav1.Condition{cond("Ready", "True", "PoweredOn"), cond("Healthy", "True", "Healthy")}, true, ""},
		{"heartbeat red, yet ready", "u", []metav1.Condition{cond("Ready", "True", "PoweredOn"), cond("Healthy", "False", "HeartbeatRed")}, false, "HeartbeatRed"},
		{"not judged yet, ready", "u", []metav1.Condition{cond("Ready", "True", "PoweredOn")}, true, ""},
		{"not judged yet, not ready", "u", []metav1.Condition{cond("Ready", "False", "WaitingForIPAddress")}, false, "NotReady"},
		{"its clone failed", "", []metav1.Condition{cond("Ready", "False", controllers.ReasonCreateFailed)}, false, controllers.ReasonCreateFailed},
		{"not created yet", "", nil, false, "NotCreated"},
	} {
		vm := &vmv1.VirtualMachine{Status: vmv1.VirtualMachineStatus{InstanceUUID: tc.uuid, Conditions: tc.conds}}
		ok, reason := controllers.ReplicaSetAdapter{}.CheckHealth(vm)
		if ok != tc.wantOK || reason != tc.wantReason {
			t.Errorf("%s: CheckHealth = %v, %q; want %v, %q", tc.desc, ok, reason, tc.wantOK, tc.wantReason)
		}
	}
}

// A set heals with spec.remediation: {} asks for the safe defaults, a
// reset first (through the adapter's Reset, which Setup sets to the
// VirtualMachine controller's), and a VirtualMachine's health is its
// Healthy condition.
func ExampleReplicaSetAdapter_CheckHealth() {
	a := controllers.ReplicaSetAdapter{Reset: func(_ context.Context, vm *vmv1.VirtualMachine) error {
		fmt.Println("reset", controllers.VSphereName(vm))
		return nil
	}}
	set := &vmv1.VirtualMachineReplicaSet{Spec: vmv1.VirtualMachineReplicaSetSpec{
		Selector:    &vmv1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Remediation: &vmv1.Remediation{},
	}}
	// A window left out is zero here: the planner's default applies
	// (replicaset.DefaultUnhealthyWindow, 5m).
	spec, err := a.Spec(set)
	fmt.Println(spec.Remediation.Restart, spec.Remediation.UnhealthyWindow, err)

	vm := &vmv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "web-x2bkp"},
		Status: vmv1.VirtualMachineStatus{InstanceUUID: "fake-00000001", Conditions: []metav1.Condition{
			{Type: "Ready", Status: metav1.ConditionFalse, Reason: "HeartbeatRed"},
			{Type: controllers.ConditionHealthy, Status: metav1.ConditionFalse, Reason: "HeartbeatRed"},
		}},
	}
	fmt.Println(a.CheckHealth(vm))
	fmt.Println(a.Restart(context.Background(), set, vm))
	// Output:
	// true 0s <nil>
	// false HeartbeatRed
	// reset prod-web-x2bkp
	// <nil>
}

// TestReplicaSetAdapter_InPlaceRefusal: a VirtualMachine whose resize
// vCenter refused for its current spec (Resized False, ResizeFailed, of
// its generation) cannot take the template in place; one refused for an
// earlier spec, since changed to the template's size, can: its
// controller tries the new spec, so the refusal says nothing of it.
func TestReplicaSetAdapter_InPlaceRefusal(t *testing.T) {
	want := &vmv1.VirtualMachine{Spec: vmv1.VirtualMachineSpec{CPUs: 1, MemoryMiB: 384, MemoryHotAdd: true}}
	vm := func(refusedAt int64) *vmv1.VirtualMachine {
		return &vmv1.VirtualMachine{
			ObjectMeta: metav1.ObjectMeta{Generation: 3},
			Spec:       vmv1.VirtualMachineSpec{CPUs: 1, MemoryMiB: 384, MemoryHotAdd: true}, // changed to the template's by the set
			Status: vmv1.VirtualMachineStatus{
				PowerState: string(vmv1.PoweredOn),
				Hardware:   &vmv1.VirtualMachineHardware{CPUs: 1, MemoryMiB: 512, MemoryHotAdd: true},
				Conditions: []metav1.Condition{{Type: controllers.ConditionResized, Status: metav1.ConditionFalse,
					Reason: controllers.ReasonResizeFailed, Message: "refused", ObservedGeneration: refusedAt}},
			},
		}
	}
	for _, tc := range []struct {
		desc      string
		refusedAt int64
		want      replicaset.InPlace
	}{
		{"refused for its current spec", 3, replicaset.InPlaceNone},
		{"refused for an earlier spec (768 MiB, say)", 2, replicaset.InPlacePowerCycle},
	} {
		if got, why := (controllers.ReplicaSetAdapter{}).InPlace(vm(tc.refusedAt), want); got != tc.want {
			t.Errorf("%s: InPlace %v (%s), want %v", tc.desc, got, why, tc.want)
		}
	}
}

// TestReplicaSetAdapter_UnknownVMs: a VirtualMachine whose state is
// unknown is described as replicaset.Replica.Unreachable, never as a known
// VM that is not ready (which a rollout deletes first and healing
// replaces): its vCenter cannot read its VM (VMUnreadable), or does not
// answer, or the operator's watch of it is being built again after its
// session ended (VCenterUnreachable), with or without zones.
func TestReplicaSetAdapter_UnknownVMs(t *testing.T) {
	for reason, want := range map[string]bool{
		controllers.ReasonVMUnreadable:       true,
		controllers.ReasonVCenterUnreachable: true,
		controllers.ReasonCreateRetrying:     false,
		"GetFailed":                          false,
	} {
		vm := &vmv1.VirtualMachine{Status: vmv1.VirtualMachineStatus{InstanceUUID: "4217-0001", PowerState: string(vmv1.PoweredOn),
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionUnknown, Reason: reason}}}}
		var r replicaset.Replica
		controllers.ReplicaSetAdapter{}.Describe(vm, &r)
		if r.Unreachable != want || r.Ready {
			t.Errorf("Ready Unknown %s: described Unreachable %v, Ready %v; want Unreachable %v, not ready", reason, r.Unreachable, r.Ready, want)
		}
	}
}

// TestStatus_KeepsWhatTheBindingReports: every field of kube.Status the
// binding reports reaches the VirtualMachineReplicaSet's status through
// SetStatus and the generated CRD, but UpdatedReadyReplicas, which the
// set leaves out on purpose (updatedAvailableReplicas says more). No
// manager runs for the namespace, so the made-up status stays put.
func TestStatus_KeepsWhatTheBindingReports(t *testing.T) {
	e := env.Require(t)
	ns := "status-kept"
	createSet(t, e, ns, 1)
	set := &vmv1.VirtualMachineReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "test-rs"}}
	if err := kubetest.CheckStatus(t.Context(), e.Client, controllers.ReplicaSetAdapter{}, set,
		kubetest.StatusFields{Omit: []string{"UpdatedReadyReplicas"}}); err != nil {
		t.Error(err)
	}
}
