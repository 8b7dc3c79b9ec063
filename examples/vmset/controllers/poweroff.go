package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/vmprovider"
)

// ReasonPoweredOffOutside is the reason of the event, and of the Ready
// condition, of a VirtualMachine whose VM was powered off in vCenter by
// someone else (govc, the vSphere Client, an HA restart that failed)
// while its spec asks for it on. A VirtualMachine of a set that heals
// (spec.remediation) is left off, Ready False and Healthy False with the
// reason PoweredOff, for the set to power it on again by its rules and
// under its guards (the unhealthy window, the storm guard, maxInFlight);
// any other is powered on again at once.
const ReasonPoweredOffOutside = "PoweredOffOutside"

// poweredOffOutside reports whether got, off, was powered off by someone
// else: vm asks for it on and last saw it on, or said so already (its
// Ready reason, or its Healthy condition, which only this says PoweredOff
// of a VM left off, and which a failed read leaves as it was).
func poweredOffOutside(vm *vmv1.VirtualMachine, want vmv1.PowerState, got vmprovider.VM) bool {
	if want != vmv1.PoweredOn || got.Power != vmprovider.PoweredOff {
		return false
	}
	ready := meta.FindStatusCondition(vm.Status.Conditions, "Ready")
	healthy := meta.FindStatusCondition(vm.Status.Conditions, ConditionHealthy)
	return vm.Status.PowerState == string(vmv1.PoweredOn) || ready != nil && ready.Reason == ReasonPoweredOffOutside ||
		healthy != nil && healthy.Reason == vmprovider.ReasonPoweredOff
}

// setHeals reports whether vm belongs to a set that heals its VMs
// (spec.remediation). A set that is gone does not; one that cannot be
// read now is an error, so that the VM is not powered on behind its
// guards meanwhile.
func (r *VirtualMachineReconciler) setHeals(ctx context.Context, vm *vmv1.VirtualMachine) (bool, error) {
	ref := metav1.GetControllerOf(vm)
	if ref == nil || ref.Kind != "VirtualMachineReplicaSet" || ref.APIVersion != vmv1.GroupVersion.String() {
		return false, nil
	}
	var set vmv1.VirtualMachineReplicaSet
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: vm.Namespace, Name: ref.Name}, &set)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read the set of VirtualMachine %s/%s: %w", vm.Namespace, vm.Name, err)
	}
	return set.UID == ref.UID && set.Spec.Remediation != nil, nil
}

// offOutside handles a VM powered off by someone else: it says so once (an
// event and a log line) and reports whether the VM is to stay off for its
// set to heal, with the Ready condition that says so.
func (r *VirtualMachineReconciler) offOutside(ctx context.Context, vm *vmv1.VirtualMachine, name string) (stay bool, ready metav1.Condition, err error) {
	if stay, err = r.setHeals(ctx, vm); err != nil {
		return false, ready, err
	}
	how := "powered on again"
	if stay {
		how = "left off for its set to heal by its remediation rules"
	}
	if vm.Status.PowerState == string(vmv1.PoweredOn) { // first seen off
		r.event(vm, corev1.EventTypeWarning, ReasonPoweredOffOutside, "Power", "vSphere VM %s was powered off outside the operator; %s", name, how)
		log.FromContext(ctx).Info("VM powered off outside the operator", "vm", name, "action", how)
	}
	return stay, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: ReasonPoweredOffOutside,
		Message: fmt.Sprintf("vSphere VM %s was powered off outside the operator, and is %s", name, how)}, nil
}
