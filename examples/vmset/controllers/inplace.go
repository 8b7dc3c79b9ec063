package controllers

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
)

// Annotations of in-place updates and clones.
const (
	// AnnotationPowerCycle set to "allowed" on a VirtualMachine lets its
	// controller power the VM off to give it the CPUs or memory its spec
	// asks for, when that cannot be done while it runs (hot-add off, a
	// decrease). A set puts it on a VM its strategy power-cycles (after
	// the pre-delete hooks' drain); the controller removes it once the VM
	// runs with its spec's size. Without it such a change waits, and the
	// Resized condition says why.
	AnnotationPowerCycle = "vm.replicakit.io/power-cycle"
	// AnnotationCloneMode set to CloneLinked on a VirtualMachine makes
	// its VM a linked clone of its template's snapshot
	// vsphere.LinkedCloneSnapshot
	// (vmprovider.Spec.LinkedClone). It matters only when the VM is
	// cloned. A set puts it on the VMs it makes when its spec.cloneMode is
	// Linked.
	AnnotationCloneMode = "vm.replicakit.io/clone-mode"
	// CloneLinked is AnnotationCloneMode's value, and spec.cloneMode's,
	// for linked clones.
	CloneLinked = "Linked"
)

// The Resized condition and its reasons: where a change of a VM's CPUs or
// memory stands.
const (
	// ConditionResized is True once the VM runs with its spec's CPUs and
	// memory after a change of them, False while it does not.
	ConditionResized = "Resized"
	// ReasonResized: the VM runs with its spec's size.
	ReasonResized = "Resized"
	// ReasonResizeNeedsPowerCycle: the change needs the VM off, and the
	// VirtualMachine does not allow a power cycle (AnnotationPowerCycle).
	ReasonResizeNeedsPowerCycle = "ResizeNeedsPowerCycle"
	// ReasonResizeRetrying: vCenter did not answer the reconfigure; it is
	// tried again.
	ReasonResizeRetrying = "ResizeRetrying"
	// ReasonResizeFailed: vCenter refused the reconfigure; nothing
	// changed, and the VM runs as it was. A set falls back as its
	// strategy's method says (replaced, or held and named).
	ReasonResizeFailed = "ResizeFailed"
)

// ReasonPowerCycling is the Ready condition's reason, with the status
// False, from when the controller begins a power cycle to resize a VM
// that runs until the VM runs again: it is off, or about to be, and
// serves nothing meanwhile.
const ReasonPowerCycling = "PowerCycling"

// InPlace implements kube.InPlaceRollout: a VirtualMachine made from an
// older template takes the current one where it runs when only its CPUs,
// memory or readiness changed; how (live, or by a power cycle) is what
// its hardware in vCenter allows (vmprovider.SizeChange). A change of
// anything else, or a reconfigure vCenter refused for the size asked
// (ResizeFailed, recorded for the VirtualMachine's current generation),
// needs a new VM.
func (ReplicaSetAdapter) InPlace(vm, want *vmv1.VirtualMachine) (replicaset.InPlace, string) {
	if fields := fixedChanges(vm.Spec, want.Spec); len(fields) > 0 {
		return replicaset.InPlaceNone, strings.Join(fields, ", ") + " changed, which needs a new VM"
	}
	// A refusal is of the spec it was recorded for (its generation), as
	// the VM's controller reads it: a spec changed since is tried anew.
	c := meta.FindStatusCondition(vm.Status.Conditions, ConditionResized)
	if c != nil && c.Reason == ReasonResizeFailed && c.ObservedGeneration == vm.Generation &&
		vm.Spec.CPUs == want.Spec.CPUs && vm.Spec.MemoryMiB == want.Spec.MemoryMiB {
		return replicaset.InPlaceNone, "vCenter refused the reconfigure: " + c.Message
	}
	hw := vm.Status.Hardware
	if hw == nil {
		return replicaset.InPlacePowerCycle, "vCenter has not reported the VM's hardware yet"
	}
	return vmprovider.SizeChange(hardwareVM(vm), want.Spec.CPUs, want.Spec.MemoryMiB)
}

// ApplyInPlace implements kube.InPlaceRollout: the VirtualMachine takes
// the template's CPUs, memory and readiness, and AnnotationPowerCycle
// exactly when the plan allows a power cycle.
func (ReplicaSetAdapter) ApplyInPlace(vm, want *vmv1.VirtualMachine, powerCycle bool) bool {
	before := vm.Spec
	vm.Spec.CPUs, vm.Spec.MemoryMiB, vm.Spec.Readiness = want.Spec.CPUs, want.Spec.MemoryMiB, want.Spec.Readiness
	changed := before != vm.Spec
	switch _, allowed := vm.Annotations[AnnotationPowerCycle]; {
	case powerCycle && vm.Annotations[AnnotationPowerCycle] != "allowed":
		if vm.Annotations == nil {
			vm.Annotations = map[string]string{}
		}
		vm.Annotations[AnnotationPowerCycle] = "allowed"
		changed = true
	case !powerCycle && allowed:
		// A live update: an allowance left from an earlier plan would
		// let the controller power-cycle the VM outside the budget.
		delete(vm.Annotations, AnnotationPowerCycle)
		changed = true
	}
	return changed
}

// ShowsInPlace implements kube.InPlaceRollout: the VirtualMachine's
// status describes its current spec, vCenter reports the template's
// CPUs and memory, and no power cycle is pending.
func (ReplicaSetAdapter) ShowsInPlace(vm, want *vmv1.VirtualMachine) bool {
	hw := vm.Status.Hardware
	return hw != nil && vm.Status.ObservedGeneration == vm.Generation &&
		vm.Spec.Readiness == want.Spec.Readiness && sized(hw, want.Spec.CPUs, want.Spec.MemoryMiB) &&
		vm.Annotations[AnnotationPowerCycle] == ""
}

// sized reports whether hw has cpus and memoryMiB, a zero meaning any
// (the template's).
func sized(hw *vmv1.VirtualMachineHardware, cpus int32, memoryMiB int64) bool {
	return (cpus == 0 || hw.CPUs == cpus) && (memoryMiB == 0 || hw.MemoryMiB == memoryMiB)
}

// hardwareVM is what vmprovider.SizeChange reads of a VirtualMachine's VM:
// its power state and hardware as its status reports them.
func hardwareVM(vm *vmv1.VirtualMachine) vmprovider.VM {
	out := vmprovider.VM{Power: vmprovider.PowerState(vm.Status.PowerState)}
	if hw := vm.Status.Hardware; hw != nil {
		out.CPUs, out.MemoryMiB = hw.CPUs, hw.MemoryMiB
		out.CPUHotAdd, out.CPUHotRemove, out.MemoryHotAdd = hw.CPUHotAdd, hw.CPUHotRemove, hw.MemoryHotAdd
	}
	return out
}

// fixedChanges names the fields of a VirtualMachine's spec that differ
// between got and want and that a VM takes only when it is cloned: all
// but CPUs, memory and readiness, and the zone a set puts each VM in.
func fixedChanges(got, want vmv1.VirtualMachineSpec) []string {
	var out []string
	for _, f := range []struct {
		name string
		same bool
	}{
		{fmt.Sprintf("spec.template (%q to %q)", got.Template, want.Template), got.Template == want.Template},
		{"spec.cpuHotAdd", got.CPUHotAdd == want.CPUHotAdd},
		{"spec.memoryHotAdd", got.MemoryHotAdd == want.MemoryHotAdd},
		{"spec.powerState", got.PowerState == want.PowerState},
		{"spec.network", equality.Semantic.DeepEqual(got.Network, want.Network)},
		{"spec.bootstrap", equality.Semantic.DeepEqual(got.Bootstrap, want.Bootstrap)},
	} {
		if !f.same {
			out = append(out, f.name)
		}
	}
	return out
}
