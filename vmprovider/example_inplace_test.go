package vmprovider_test

import (
	"fmt"

	"github.com/replicakit/replicakit/vmprovider"
)

// A template's memory doubles: VMs made with memory hot-add on take it
// while they run, others only while off, and a VM of another template
// must be replaced.
func ExampleInPlaceFor() {
	old := vmprovider.Spec{Template: "ubuntu-24.04", CPUs: 2, MemoryMiB: 4096, PowerOn: true, MemoryHotAdd: true}
	want := old
	want.MemoryMiB = 8192

	running := vmprovider.VM{Name: "web-0", Power: vmprovider.PoweredOn, CPUs: 2, MemoryMiB: 4096, MemoryHotAdd: true,
		BaseRevision: vmprovider.BaseRevision(old)}
	noHotAdd := running
	noHotAdd.Name, noHotAdd.MemoryHotAdd = "web-1", false
	other := running
	other.Name, other.BaseRevision = "web-2", vmprovider.BaseRevision(vmprovider.Spec{Template: "rocky-9", PowerOn: true})

	for _, vm := range []vmprovider.VM{running, noHotAdd, other} {
		kind, blocker := vmprovider.InPlaceFor(vm, want)
		if blocker != "" {
			blocker = ": " + blocker
		}
		fmt.Printf("%s: %v%s\n", vm.Name, kind, blocker)
	}
	// Output:
	// web-0: Live
	// web-1: PowerCycle: memory raised from 4096 to 8192 MiB needs the VM off (memory hot-add is off)
	// web-2: None: the base revision differs: the template, networks, power, cloud-init, placement or hot-add settings changed
}

// A controller resizing a running VM chooses between a live resize and a
// power cycle by what the VM reports.
func ExampleSizeChange() {
	vm := vmprovider.VM{Power: vmprovider.PoweredOn, CPUs: 2, MemoryMiB: 4096, MemoryHotAdd: true}
	kind, _ := vmprovider.SizeChange(vm, 2, 8192)
	fmt.Println(kind)
	kind, why := vmprovider.SizeChange(vm, 4, 2048)
	fmt.Println(kind, why)
	// Output:
	// Live
	// PowerCycle CPUs raised from 2 to 4 needs the VM off (CPU hot-add is off); memory lowered from 4096 to 2048 MiB needs the VM off
}
