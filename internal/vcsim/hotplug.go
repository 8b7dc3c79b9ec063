package vcsim

import (
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// Hotplug is a setup function for New that makes the simulator change a
// VM's CPUs, memory and hot-plug settings as vCenter does, where govmomi
// v0.56.0's simulator does not:
//
//   - ReconfigVM_Task on a VM that is not powered off fails (its task
//     ends in InvalidPowerState, as vCenter's "The attempted operation
//     cannot be performed in the current state", and the VM is unchanged)
//     when it raises numCPUs without cpuHotAddEnabled, lowers them without
//     cpuHotRemoveEnabled, raises memoryMB without memoryHotAddEnabled, or
//     lowers memoryMB at all (vSphere has no memory hot-remove); or when it
//     changes any of the three settings (vCenter changes them only while
//     the VM is off); or, for a suspended VM, when it changes the size at
//     all. The simulator applies them whatever the power state.
//   - A reconfigure's changes to config.hardware.numCPU,
//     config.hardware.memoryMB and the three settings are reported to
//     property collectors (a watch), as vCenter reports them; the
//     simulator changes them without telling its collectors.
//   - CloneVM_Task applies its config's cpuHotAddEnabled,
//     cpuHotRemoveEnabled and memoryHotAddEnabled to the clone, which the
//     simulator drops.
//
// It serves those calls through the simulator's own ReconfigVM_Task and
// CloneVM_Task, in a task of its own that ends when theirs has and the
// change is reported. The simulator's Registry.Handler sends each such
// call to a stand-in object registered beside the inventory (a handler
// returned for a VM itself would lose to the session's view of the VM),
// which locks the VM as the simulator would. vcsimtest turns it on for
// every test.
func Hotplug(m *simulator.Model) {
	r := m.Map()
	h := &hotplug{Self: types.ManagedObjectReference{Type: "ReplicakitHotplug", Value: "hotplug"}}
	r.Put(h)
	prev := r.Handler
	r.Handler = func(ctx *simulator.Context, method *simulator.Method) (mo.Reference, types.BaseMethodFault) {
		if prev != nil {
			if h, f := prev(ctx, method); h != nil || f != nil {
				return h, f
			}
		}
		if method.Name != "ReconfigVM_Task" && method.Name != "CloneVM_Task" {
			return nil, nil
		}
		if _, ok := ctx.Map.Get(method.This).(*simulator.VirtualMachine); !ok {
			return nil, nil
		}
		// The request's This still names the VM; the call goes to h.
		method.This = h.Self
		return h, nil
	}
}

// hotplug serves the ReconfigVM_Task and CloneVM_Task calls of every VM
// for Hotplug.
type hotplug struct {
	Self types.ManagedObjectReference
}

// Reference implements mo.Reference.
func (h *hotplug) Reference() types.ManagedObjectReference { return h.Self }

// ReconfigVMTask refuses what vCenter refuses, else reconfigures through
// the simulator and reports the hardware it changed.
func (h *hotplug) ReconfigVMTask(ctx *simulator.Context, req *types.ReconfigVM_Task) soap.HasFault {
	body := &methods.ReconfigVM_TaskBody{}
	vm, ok := ctx.Map.Get(req.This).(*simulator.VirtualMachine)
	if !ok {
		body.Fault_ = simulator.Fault("", &types.ManagedObjectNotFound{Obj: req.This})
		return body
	}
	ctx.WithLock(vm, func() {
		refused := vCenterRefuses(vm, &req.Spec)
		task := simulator.CreateTask(vm, "reconfigVm", func(*simulator.Task) (types.AnyType, types.BaseMethodFault) {
			if refused != nil {
				return nil, refused
			}
			if _, fault := follow(ctx, vm.ReconfigVMTask(ctx, req)); fault != nil {
				return nil, fault
			}
			report(ctx, vm, &req.Spec)
			return nil, nil
		})
		body.Res = &types.ReconfigVM_TaskResponse{Returnval: task.Run(ctx)}
	})
	return body
}

// CloneVMTask clones through the simulator, then applies the config's
// hot-plug settings to the clone. A clone whose config sets none is the
// simulator's own.
func (h *hotplug) CloneVMTask(ctx *simulator.Context, req *types.CloneVM_Task) soap.HasFault {
	vm, ok := ctx.Map.Get(req.This).(*simulator.VirtualMachine)
	if !ok {
		return &methods.CloneVM_TaskBody{Fault_: simulator.Fault("", &types.ManagedObjectNotFound{Obj: req.This})}
	}
	var body soap.HasFault
	ctx.WithLock(vm, func() {
		c := req.Spec.Config
		if c == nil || (c.CpuHotAddEnabled == nil && c.CpuHotRemoveEnabled == nil && c.MemoryHotAddEnabled == nil) {
			body = vm.CloneVMTask(ctx, req)
			return
		}
		task := simulator.CreateTask(vm, "cloneVm", func(*simulator.Task) (types.AnyType, types.BaseMethodFault) {
			result, fault := follow(ctx, vm.CloneVMTask(ctx, req))
			if fault != nil {
				return nil, fault
			}
			ref, ok := result.(types.ManagedObjectReference)
			if !ok {
				return result, nil
			}
			if clone, ok := ctx.Map.Get(ref).(*simulator.VirtualMachine); ok {
				ctx.WithLock(clone, func() {
					settings := types.VirtualMachineConfigSpec{CpuHotAddEnabled: c.CpuHotAddEnabled,
						CpuHotRemoveEnabled: c.CpuHotRemoveEnabled, MemoryHotAddEnabled: c.MemoryHotAddEnabled}
					ctx.Update(clone, changes(clone, &settings, true))
				})
			}
			return ref, nil
		})
		body = &methods.CloneVM_TaskBody{Res: &types.CloneVM_TaskResponse{Returnval: task.Run(ctx)}}
	})
	return body
}

// follow waits for the task a simulator method's answer returns, and
// returns its result, or the fault of the answer or the task.
func follow(ctx *simulator.Context, answer soap.HasFault) (types.AnyType, types.BaseMethodFault) {
	if f := answer.Fault(); f != nil {
		if fault, ok := f.VimFault().(types.BaseMethodFault); ok {
			return nil, fault
		}
		return nil, &types.SystemError{Reason: f.String}
	}
	var ref types.ManagedObjectReference
	switch b := answer.(type) {
	case *methods.ReconfigVM_TaskBody:
		ref = b.Res.Returnval
	case *methods.CloneVM_TaskBody:
		ref = b.Res.Returnval
	}
	t, ok := ctx.Map.Get(ref).(*simulator.Task)
	if !ok {
		return nil, &types.SystemError{Reason: "vcsim.Hotplug: no task for " + ref.Value}
	}
	t.Wait()
	if e := t.Info.Error; e != nil {
		return nil, e.Fault
	}
	return t.Info.Result, nil
}

// vCenterRefuses returns the fault vCenter answers spec with on vm as it is
// now, or nil when vCenter would apply it.
func vCenterRefuses(vm *simulator.VirtualMachine, spec *types.VirtualMachineConfigSpec) types.BaseMethodFault {
	state := vm.Runtime.PowerState
	if state == types.VirtualMachinePowerStatePoweredOff {
		return nil
	}
	hw := vm.Config.Hardware
	cpus := spec.NumCPUs != 0 && spec.NumCPUs != hw.NumCPU
	memory := spec.MemoryMB != 0 && spec.MemoryMB != int64(hw.MemoryMB)
	refuse := len(changes(vm, &types.VirtualMachineConfigSpec{CpuHotAddEnabled: spec.CpuHotAddEnabled,
		CpuHotRemoveEnabled: spec.CpuHotRemoveEnabled, MemoryHotAddEnabled: spec.MemoryHotAddEnabled}, false)) > 0
	switch {
	case state != types.VirtualMachinePowerStatePoweredOn:
		refuse = refuse || cpus || memory
	default:
		refuse = refuse ||
			(cpus && spec.NumCPUs > hw.NumCPU && !on(vm.Config.CpuHotAddEnabled)) ||
			(cpus && spec.NumCPUs < hw.NumCPU && !on(vm.Config.CpuHotRemoveEnabled)) ||
			(memory && spec.MemoryMB > int64(hw.MemoryMB) && !on(vm.Config.MemoryHotAddEnabled)) ||
			(memory && spec.MemoryMB < int64(hw.MemoryMB))
	}
	if !refuse {
		return nil
	}
	return &types.InvalidPowerState{RequestedState: types.VirtualMachinePowerStatePoweredOff, ExistingState: state}
}

// report tells property collectors what spec changed of vm's size and
// hot-plug settings, which the simulator has applied.
func report(ctx *simulator.Context, vm *simulator.VirtualMachine, spec *types.VirtualMachineConfigSpec) {
	c := changes(vm, spec, true)
	if spec.NumCPUs != 0 {
		c = append(c, types.PropertyChange{Name: "config.hardware.numCPU", Val: vm.Config.Hardware.NumCPU})
	}
	if spec.MemoryMB != 0 {
		c = append(c, types.PropertyChange{Name: "config.hardware.memoryMB", Val: vm.Config.Hardware.MemoryMB})
	}
	if len(c) > 0 {
		ctx.Update(vm, c)
	}
}

// changes returns the property changes spec's hot-plug settings make to
// vm: every one spec sets with all, else only those that differ from
// vm's.
func changes(vm *simulator.VirtualMachine, spec *types.VirtualMachineConfigSpec, all bool) []types.PropertyChange {
	var out []types.PropertyChange
	for _, s := range []struct {
		want, now *bool
		property  string
	}{
		{spec.CpuHotAddEnabled, vm.Config.CpuHotAddEnabled, "config.cpuHotAddEnabled"},
		{spec.CpuHotRemoveEnabled, vm.Config.CpuHotRemoveEnabled, "config.cpuHotRemoveEnabled"},
		{spec.MemoryHotAddEnabled, vm.Config.MemoryHotAddEnabled, "config.memoryHotAddEnabled"},
	} {
		if s.want != nil && (all || *s.want != on(s.now)) {
			out = append(out, types.PropertyChange{Name: s.property, Val: *s.want})
		}
	}
	return out
}

// on reports whether a setting is set and true.
func on(b *bool) bool { return b != nil && *b }
