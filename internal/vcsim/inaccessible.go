package vcsim

import (
	"context"
	"fmt"
	"slices"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

// Inaccessible makes the VMs called names inaccessible, as vCenter shows
// the VMs of a datastore that went away, and returns the function that
// makes them accessible again, as they were. The vSphere API reference
// (enum VirtualMachineConnectionState, value inaccessible: "One or more
// of the virtual machine configuration files are inaccessible … In this
// case, no configuration can be returned for a virtual machine";
// VirtualMachine.config: "not guaranteed to be available … if the server
// is unable to access the virtual machine files on disk") gives what a
// client reads: runtime.connectionState is inaccessible and the VM's
// configuration is unset, while its name, power state and summary stay.
//
// Here runtime.connectionState becomes inaccessible and, of config, every
// property the provider reads (config.extraConfig, with the ownership
// mark, config.instanceUuid, the hardware and hot-plug settings) is
// unset: the simulator keeps config itself set, since its own methods read
// it. Watchers get the change as a property update, as from vCenter. A
// name no VM has is an error, and nothing is changed.
func (s *Sim) Inaccessible(ctx context.Context, names ...string) (restore func(), err error) {
	m := s.Model.Map()
	var vms []*simulator.VirtualMachine
	for _, e := range m.All("VirtualMachine") {
		if vm, ok := e.(*simulator.VirtualMachine); ok && slices.Contains(names, vm.Name) {
			vms = append(vms, vm)
		}
	}
	if len(vms) != len(names) {
		return nil, fmt.Errorf("vcsim: %d of the VMs %v are in the inventory", len(vms), names)
	}
	sc := &simulator.Context{Context: ctx, Map: m}
	type saved struct {
		vm      *simulator.VirtualMachine
		changes []types.PropertyChange
	}
	var before []saved
	s.serialized(func() {
		for _, vm := range vms {
			m.WithLock(sc, vm, func() {
				c := vm.Config
				before = append(before, saved{vm, []types.PropertyChange{
					{Name: "runtime.connectionState", Val: vm.Runtime.ConnectionState},
					{Name: "config.extraConfig", Val: slices.Clone(c.ExtraConfig)},
					{Name: "config.instanceUuid", Val: c.InstanceUuid},
					{Name: "config.hardware", Val: c.Hardware},
					{Name: "config.cpuHotAddEnabled", Val: flag(c.CpuHotAddEnabled)},
					{Name: "config.cpuHotRemoveEnabled", Val: flag(c.CpuHotRemoveEnabled)},
					{Name: "config.memoryHotAddEnabled", Val: flag(c.MemoryHotAddEnabled)},
				}})
				m.Update(sc, vm, []types.PropertyChange{
					{Name: "runtime.connectionState", Val: types.VirtualMachineConnectionStateInaccessible},
					{Name: "config.extraConfig"}, {Name: "config.instanceUuid"}, {Name: "config.hardware"},
					{Name: "config.cpuHotAddEnabled"}, {Name: "config.cpuHotRemoveEnabled"}, {Name: "config.memoryHotAddEnabled"},
				})
			})
		}
	})
	return func() {
		s.serialized(func() {
			for _, b := range before {
				m.WithLock(sc, b.vm, func() { m.Update(sc, b.vm, b.changes) })
			}
		})
	}, nil
}

// serialized runs f while the gate serves no call, when there is a gate,
// and wakes the long polls after.
func (s *Sim) serialized(f func()) {
	if s.gate == nil {
		f()
		return
	}
	s.gate.mu.Lock()
	defer s.gate.mu.Unlock()
	f()
	s.gate.wake()
}

// flag is a change's value for a vSphere flag: unset (nil) when b is, as
// the simulator's update takes only an untyped nil for unset.
func flag(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}
