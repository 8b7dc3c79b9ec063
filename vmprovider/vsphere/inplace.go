package vsphere

import (
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/vmprovider"
)

// inPlaceConfig adds to a clone's config what in-place updates need of a
// new VM: CPU and memory hot-add turned on when spec asks (false keeps the
// template's setting). Its base revision (KeyBaseRevision) is one of the
// marks cloneFrom writes.
func inPlaceConfig(c *types.VirtualMachineConfigSpec, spec vmprovider.Spec) {
	if spec.CPUHotAdd {
		c.CpuHotAddEnabled = types.NewBool(true)
	}
	if spec.MemoryHotAdd {
		c.MemoryHotAddEnabled = types.NewBool(true)
	}
}

// isTrue reports whether a vSphere flag is set and true.
func isTrue(b *bool) bool { return b != nil && *b }
