package vmprovider

import (
	"fmt"
	"strings"

	"github.com/replicakit/replicakit/replicaset"
)

// BaseRevision returns the revision of everything in t that a running VM
// cannot take in place: TemplateRevision's hash of the template, power,
// networks, cloud-init data, placement and hot-add settings, without the
// VM's size (CPUs, MemoryMiB). Two specs with the same base revision make
// VMs that differ at most in size, so a VM made from one can reach the
// other's revision by a resize (InPlaceFor, Resizer); any other change
// replaces it.
//
// The hot-add settings are part of it, though a VM can have them changed:
// vSphere changes them only while the VM is off, they decide which later
// resizes can be made live, and turning them on is a rare, deliberate
// change, which a replacement makes as well as a power cycle would. Unlike
// TemplateRevision, BaseRevision is new, so it encodes them always.
func BaseRevision(t Spec) string {
	shape := struct {
		Base         bool // never the encoding of a TemplateRevision
		Template     string
		PowerOn      bool
		Networks     []string
		CloudInit    *CloudInit
		Placement    Placement
		CPUHotAdd    bool
		MemoryHotAdd bool
		Snapshot     string `json:",omitempty"` // added later: older base revisions stay
	}{true, t.Template, t.PowerOn, networks(t), t.CloudInit, t.Placement, t.CPUHotAdd, t.MemoryHotAdd, linkedSnapshot(t)}
	return hashShape(shape)
}

// InPlaceFor classifies how vm could reach want's revision
// (TemplateRevision(want)) without being replaced, from what vm reports;
// it calls nothing. It returns the kind and, unless the kind is
// replicaset.InPlaceLive, a phrase saying what keeps vm from a live
// update (replicaset.Replica.InPlaceBlocker):
//
//   - replicaset.InPlaceNone when vm's recorded base revision is not
//     BaseRevision(want) (the template, networks, power, cloud-init,
//     placement or hot-add settings differ), or vm records none (it was
//     made before in-place updates, or by a provider that records none),
//     or the CPUs wanted are not a whole number of vm's sockets
//     (CoresPerSocket), which vSphere refuses whatever the power state;
//   - replicaset.InPlaceLive when only the size may differ and it can
//     change while vm runs: the size is the same (only the revision is to
//     be recorded), vm is powered off (any size can be set), or every
//     change is one vm's hot-plug settings allow (CPUs raised with
//     CPUHotAdd, lowered with CPUHotRemove, memory raised with
//     MemoryHotAdd);
//   - replicaset.InPlacePowerCycle otherwise: a change needs vm off
//     (memory lowered, which vSphere never does while a VM runs; CPUs or
//     memory raised without hot-add; CPUs lowered without hot-remove;
//     memory raised past MemoryHotAddLimitMiB, or to a size that is not
//     a multiple of MemoryHotAddIncrementMiB), or vm is suspended and its
//     size is to change. The phrase names each such field and its values.
//
// A zero want.CPUs or want.MemoryMiB means the template's size, which a
// running VM does not report: that field counts as unchanged, whatever vm
// has (a spec that drops its size keeps the VMs' sizes until they are
// replaced). A zero vm.CPUs or vm.MemoryMiB (a provider that does not
// report it) differs from any size wanted.
func InPlaceFor(vm VM, want Spec) (replicaset.InPlace, string) {
	switch base := BaseRevision(want); vm.BaseRevision {
	case "":
		return replicaset.InPlaceNone, "the VM records no base revision: it was made before in-place updates"
	case base:
	default:
		return replicaset.InPlaceNone, "the base revision differs: the template, networks, power, cloud-init, placement or hot-add settings changed"
	}
	return SizeChange(vm, want.CPUs, want.MemoryMiB)
}

// SizeChange classifies how vm, as it reports itself, could be given cpus
// CPUs and memoryMiB MiB of memory (a zero keeping what it has), by
// InPlaceFor's rules for a VM whose base revision is the wanted one:
// replicaset.InPlaceNone when the CPUs are not whole sockets;
// replicaset.InPlaceLive when it is off, nothing changes, or every change
// is one its hot-plug settings and bounds allow;
// replicaset.InPlacePowerCycle otherwise, with a phrase naming each field
// that needs the VM off and its values. A controller that resizes a VM it does not roll (a
// VirtualMachine whose spec changed) asks it to choose between a live
// resize and a power cycle.
func SizeChange(vm VM, cpus int32, memoryMiB int64) (replicaset.InPlace, string) {
	want := Spec{CPUs: cpus, MemoryMiB: memoryMiB}
	if c := vm.CoresPerSocket; c > 1 && want.CPUs != 0 && want.CPUs != vm.CPUs && want.CPUs%c != 0 {
		return replicaset.InPlaceNone, fmt.Sprintf("%d CPUs are not a whole number of the VM's sockets of %d cores", want.CPUs, c)
	}
	if vm.Power == PoweredOff {
		return replicaset.InPlaceLive, ""
	}
	var blockers []string
	cpuChange, memory := want.CPUs != 0 && want.CPUs != vm.CPUs, want.MemoryMiB != 0 && want.MemoryMiB != vm.MemoryMiB
	if vm.Power == Suspended {
		if cpuChange || memory {
			return replicaset.InPlacePowerCycle, "the VM is suspended: its size changes only while it is off"
		}
		return replicaset.InPlaceLive, ""
	}
	switch {
	case cpuChange && want.CPUs > vm.CPUs && !vm.CPUHotAdd:
		blockers = append(blockers, fmt.Sprintf("CPUs raised from %d to %d needs the VM off (CPU hot-add is off)", vm.CPUs, want.CPUs))
	case cpuChange && want.CPUs < vm.CPUs && !vm.CPUHotRemove:
		blockers = append(blockers, fmt.Sprintf("CPUs lowered from %d to %d needs the VM off (CPU hot-remove is off)", vm.CPUs, want.CPUs))
	}
	switch {
	case memory && want.MemoryMiB > vm.MemoryMiB && !vm.MemoryHotAdd:
		blockers = append(blockers, fmt.Sprintf("memory raised from %d to %d MiB needs the VM off (memory hot-add is off)", vm.MemoryMiB, want.MemoryMiB))
	case memory && want.MemoryMiB > vm.MemoryHotAddLimitMiB && vm.MemoryHotAddLimitMiB > 0:
		blockers = append(blockers, fmt.Sprintf("memory raised from %d to %d MiB needs the VM off (it passes the hot-add limit of %d MiB)",
			vm.MemoryMiB, want.MemoryMiB, vm.MemoryHotAddLimitMiB))
	case memory && want.MemoryMiB > vm.MemoryMiB && vm.MemoryHotAddIncrementMiB > 0 && want.MemoryMiB%vm.MemoryHotAddIncrementMiB != 0:
		blockers = append(blockers, fmt.Sprintf("memory raised from %d to %d MiB needs the VM off (a running VM's memory is a multiple of %d MiB)",
			vm.MemoryMiB, want.MemoryMiB, vm.MemoryHotAddIncrementMiB))
	case memory && want.MemoryMiB < vm.MemoryMiB:
		blockers = append(blockers, fmt.Sprintf("memory lowered from %d to %d MiB needs the VM off", vm.MemoryMiB, want.MemoryMiB))
	}
	if len(blockers) > 0 {
		return replicaset.InPlacePowerCycle, strings.Join(blockers, "; ")
	}
	return replicaset.InPlaceLive, ""
}
