package controllers

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/vmprovider"
)

// ConditionHealthy is the VirtualMachine condition that says whether its
// VM passes the health check self-healing applies
// (vmprovider.Readiness.CheckHealth with the VM's spec.readiness): True
// with the reason ReasonHealthy, or False with the reason naming what
// fails, one of vmprovider's ReasonPoweredOff, ReasonHeartbeatRed,
// ReasonHeartbeatGray, ReasonHeartbeatYellow and ReasonNoAddress. The
// VirtualMachine controller writes it from what it reads of vCenter,
// whether or not a set heals the VM; it is left as it was while vCenter
// cannot be read. A set with spec.remediation remediates the VMs whose
// condition stays False (ReplicaSetAdapter.CheckHealth).
const ConditionHealthy = "Healthy"

// ReasonHealthy is ConditionHealthy's reason when the VM passes its
// health check.
const ReasonHealthy = "Healthy"

// healthMessages says, for each reason CheckHealth gives, what fails.
var healthMessages = map[string]string{
	vmprovider.ReasonPoweredOff:      "is not powered on, though its spec asks for it on",
	vmprovider.ReasonHeartbeatRed:    "is powered on, but its guest's heartbeat is red: VMware Tools stopped answering (a hung or crashed guest)",
	vmprovider.ReasonHeartbeatGray:   "is powered on, but its guest's tools do not run, and spec.readiness GuestHeartbeat needs their heartbeat",
	vmprovider.ReasonHeartbeatYellow: "is powered on, but its guest's heartbeat is intermittent, and spec.readiness GuestHeartbeat needs it green",
	vmprovider.ReasonNoAddress:       "is powered on, but its guest reports no IP address, and spec.readiness IPAddress needs one",
}

// healthCondition is ConditionHealthy of a VM in got's state. Its message
// depends only on the reason and the VM's name, so that the condition
// (and the status) changes only when the health does.
func healthCondition(vm *vmv1.VirtualMachine, name string, want vmv1.PowerState, got vmprovider.VM) metav1.Condition {
	rd := vmprovider.Readiness(vm.Spec.Readiness)
	if rd == "" {
		rd = vmprovider.ReadyWhenPoweredOn
	}
	ok, reason := rd.CheckHealth(got, want == vmv1.PoweredOn)
	if ok {
		return metav1.Condition{Type: ConditionHealthy, Status: metav1.ConditionTrue, Reason: ReasonHealthy,
			Message: fmt.Sprintf("vSphere VM %s passes its health check", name)}
	}
	msg, known := healthMessages[reason]
	if !known {
		msg = "fails its health check"
	}
	return metav1.Condition{Type: ConditionHealthy, Status: metav1.ConditionFalse, Reason: reason,
		Message: fmt.Sprintf("vSphere VM %s %s", name, msg)}
}

// ErrPoweredOff is what Reset returns for a VirtualMachine whose spec
// asks for its VM off.
var ErrPoweredOff = errors.New("the VirtualMachine asks for its VM powered off")

// Reset resets vm's VM in the vCenter that holds it, as the reconciler
// reaches it (a vCenter reset, ResetVM_Task, through vmprovider.Resetter;
// a VM that is off is powered on), after checking that the VM carries
// vm's mark, and records the event Reset on vm, with the reason of its
// Healthy condition. A VirtualMachine whose spec asks for its VM off is
// refused (an error wrapping ErrPoweredOff): nothing runs to restart, and
// a reset would power it on. It is how the replica-set controller
// restarts an unhealthy VM (ReplicaSetAdapter.Reset, which Setup sets to
// it); vm is read, never modified.
func (r *VirtualMachineReconciler) Reset(ctx context.Context, vm *vmv1.VirtualMachine) error {
	name := VSphereName(vm)
	if vm.Spec.PowerState == vmv1.PoweredOff {
		return fmt.Errorf("reset VM %q: its spec asks for it powered off: %w", name, ErrPoweredOff)
	}
	p := r.providerOf(vm.Spec.Zone)
	if p == nil {
		return fmt.Errorf("reset VM %q: zone %q names vCenter %q, which the operator is not configured with: %w",
			name, vm.Spec.Zone, r.Zones[vm.Spec.Zone].Endpoint, ErrUnknownZone)
	}
	rs, ok := p.(vmprovider.Resetter)
	if !ok {
		return fmt.Errorf("reset VM %q: %w", name, errNoReset)
	}
	if err := rs.Reset(ctx, name, string(vm.UID)); err != nil {
		return err
	}
	why := "asked for"
	if c := meta.FindStatusCondition(vm.Status.Conditions, ConditionHealthy); c != nil && c.Status == metav1.ConditionFalse {
		why = c.Reason
	}
	r.event(vm, corev1.EventTypeWarning, "Reset", "Reset", "Reset vSphere VM %s to remediate it: %s", name, why)
	return nil
}

// errNoReset means the provider cannot reset VMs (it is no
// vmprovider.Resetter).
var errNoReset = errors.New("the operator's provider cannot reset VMs")
