package controllers

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/vmprovider"
)

// resize gives the VM got the CPUs and memory vm's spec asks for, when they
// differ: live when its hardware allows (vmprovider.SizeChange), else by a
// power cycle when vm allows one (AnnotationPowerCycle), else not at all,
// saying why. It returns got as vCenter shows it after, the Resized
// condition when a resize is or was under way (nil when there is none to
// report), and an error to retry with (vCenter did not answer).
func (r *VirtualMachineReconciler) resize(ctx context.Context, vm *vmv1.VirtualMachine, p vmprovider.Provider, name string, got vmprovider.VM) (vmprovider.VM, *metav1.Condition, error) {
	cond := func(status metav1.ConditionStatus, reason, msg string) *metav1.Condition {
		return &metav1.Condition{Type: ConditionResized, Status: status, Reason: reason, Message: msg}
	}
	want := vm.Spec
	if (want.CPUs == 0 || want.CPUs == got.CPUs) && (want.MemoryMiB == 0 || want.MemoryMiB == got.MemoryMiB) {
		if err := r.clearPowerCycle(ctx, vm); err != nil {
			return got, nil, err
		}
		if meta.FindStatusCondition(vm.Status.Conditions, ConditionResized) == nil {
			return got, nil, nil
		}
		return got, cond(metav1.ConditionTrue, ReasonResized, fmt.Sprintf("the VM has %d CPUs and %d MiB", got.CPUs, got.MemoryMiB)), nil
	}
	if c := meta.FindStatusCondition(vm.Status.Conditions, ConditionResized); c != nil && c.Reason == ReasonResizeFailed && c.ObservedGeneration == vm.Generation {
		return got, c, nil // refused for this spec: a new spec is tried, not this one again
	}
	rs, ok := p.(vmprovider.Resizer)
	if !ok {
		return got, cond(metav1.ConditionFalse, ReasonResizeFailed, "this operator's provider cannot change a VM's size"), nil
	}
	kind, why := vmprovider.SizeChange(got, want.CPUs, want.MemoryMiB)
	if kind == replicaset.InPlaceNone {
		// vCenter would refuse it whatever the power state: not tried.
		return got, cond(metav1.ConditionFalse, ReasonResizeFailed, why), nil
	}
	cycle := kind == replicaset.InPlacePowerCycle
	if cycle && vm.Annotations[AnnotationPowerCycle] != "allowed" {
		return got, cond(metav1.ConditionFalse, ReasonResizeNeedsPowerCycle, why+
			"; annotate the VirtualMachine "+AnnotationPowerCycle+"=allowed to let it be powered off for it"), nil
	}
	if cycle && got.Power == vmprovider.PoweredOn {
		// The VM stops serving for the cycle: say so before it goes off,
		// not once it is back (the cycle takes the guest's shutdown, the
		// reconfigure and a boot).
		off := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: ReasonPowerCycling,
			Message: fmt.Sprintf("vSphere VM %s is powered off and on again to resize it to %d CPUs and %d MiB: %s", name, want.CPUs, want.MemoryMiB, why)}
		if err := r.setStatus(ctx, vm, got, off); err != nil {
			return got, nil, err
		}
	}
	to := vmprovider.Resize{CPUs: want.CPUs, MemoryMiB: want.MemoryMiB, PowerCycle: cycle,
		Revision: cmp.Or(vm.Annotations[kube.AnnotationInPlaceRevision], vm.Labels[kube.RevisionLabel])}
	owner := string(vm.UID)
	if err := rs.Resize(ctx, name, owner, to); err != nil {
		// What vCenter holds now, not what it held before: a power cycle
		// may have left the VM resized but off (its power-on failed).
		if now, gerr := p.Get(ctx, name); gerr == nil {
			got = now
		}
		if transient(err) || errors.Is(err, vmprovider.ErrUnreachable) ||
			hardwareOf(got) != nil && sized(hardwareOf(got), want.CPUs, want.MemoryMiB) && got.Power != vmprovider.PoweredOn {
			return got, cond(metav1.ConditionFalse, ReasonResizeRetrying, err.Error()), err
		}
		r.event(vm, corev1.EventTypeWarning, ReasonResizeFailed, "Resize", "vCenter refused to resize VM %s: %v", name, err)
		return got, cond(metav1.ConditionFalse, ReasonResizeFailed, err.Error()), nil
	}
	how := "live"
	if cycle {
		how = "by a power cycle"
	}
	r.event(vm, corev1.EventTypeNormal, ReasonResized, "Resize", "Resized VM %s %s to %d CPUs and %d MiB", name, how, want.CPUs, want.MemoryMiB)
	after, err := p.Get(ctx, name)
	if err != nil {
		return got, cond(metav1.ConditionFalse, ReasonResizeRetrying, err.Error()), err
	}
	if err := r.clearPowerCycle(ctx, vm); err != nil {
		return after, nil, err
	}
	return after, cond(metav1.ConditionTrue, ReasonResized, fmt.Sprintf("resized %s to %d CPUs and %d MiB", how, after.CPUs, after.MemoryMiB)), nil
}

// clearPowerCycle removes AnnotationPowerCycle from vm, if it has it:
// the VM runs with its spec's size, so no power cycle is pending.
func (r *VirtualMachineReconciler) clearPowerCycle(ctx context.Context, vm *vmv1.VirtualMachine) error {
	if vm.Annotations[AnnotationPowerCycle] == "" {
		return nil
	}
	patch := client.MergeFrom(vm.DeepCopy())
	delete(vm.Annotations, AnnotationPowerCycle)
	return client.IgnoreNotFound(r.Client.Patch(ctx, vm, patch))
}

// hardwareOf is the status's hardware for got.
func hardwareOf(got vmprovider.VM) *vmv1.VirtualMachineHardware {
	if got.CPUs == 0 && got.MemoryMiB == 0 {
		return nil // not reported
	}
	return &vmv1.VirtualMachineHardware{CPUs: got.CPUs, MemoryMiB: got.MemoryMiB,
		CPUHotAdd: got.CPUHotAdd, CPUHotRemove: got.CPUHotRemove, MemoryHotAdd: got.MemoryHotAdd}
}
