package vsphere

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
)

var (
	_ vmprovider.Resizer = (*Provider)(nil)
	_ vmprovider.Resizer = Cached{}
)

// finishWithin bounds how long a power cycle takes, once the VM is off,
// to reconfigure it and power it on again: that part goes on when the
// caller's context ends, since a VM left off half-way is worse than a
// late answer.
const finishWithin = 5 * time.Minute

// Resize implements vmprovider.Resizer with one ReconfigVM_Task that sets
// numCPUs, memoryMB and the revisions (KeyRevision, KeyBaseRevision)
// together, after checking owner's mark, so that the revisions recorded
// change only when vCenter has applied the size. Whether the change can
// be made while the VM runs is decided by vmprovider.InPlaceFor's rules on
// the VM's configuration as vCenter reports it at the call; if vCenter
// refuses it all the same (InvalidPowerState: its hot-plug settings
// changed meanwhile), the error wraps vmprovider.ErrNeedsPowerCycle.
//
// A power cycle (Resize.PowerCycle) stops the VM as Delete does: a
// powered-on VM whose VMware Tools run and whose heartbeat is not red is
// asked to shut its guest down (ShutdownGuest), and powered off
// (PowerOffVM_Task) if it is not off within Config.ShutdownGrace; others
// are powered off at once. It is then reconfigured and, if it was powered
// on, powered on again; a suspended VM is powered off (losing its
// suspended state) and left off. A context that ends while the guest
// shuts down ends the Resize with its error, the VM unchanged (off, if its
// guest finished shutting down); once the VM is off, the reconfigure and
// the power-on go on for up to five minutes whatever the context. When
// the reconfigure fails, the VM is powered on again unchanged and the
// error says so. Tasks hold the provider's task slots (Config.MaxTasks);
// the wait for the guest holds none.
func (p *Provider) Resize(ctx context.Context, name, owner string, to vmprovider.Resize) error {
	_, err := p.resize(ctx, name, owner, to)
	return withPrivileges(err)
}

// resize is Resize, returning the VM as vCenter reports it after.
func (p *Provider) resize(ctx context.Context, name, owner string, to vmprovider.Resize) (vmprovider.VM, error) {
	if to.CPUs < 0 || to.MemoryMiB < 0 {
		return vmprovider.VM{}, fmt.Errorf("resize %q to %d CPUs and %d MiB: a size is negative: %w", name, to.CPUs, to.MemoryMiB, vmprovider.ErrInvalidSpec)
	}
	unlock, err := p.lockMade(name)
	if err != nil {
		return vmprovider.VM{}, err
	}
	defer unlock()
	vm, m, err := p.owned(ctx, name, owner)
	if err != nil {
		return vmprovider.VM{}, err
	}
	cur := toVM(m)
	spec, changed := reconfigSpec(cur, to)
	if !changed {
		return cur, nil
	}
	kind, blocker := sizeRule(cur, to)
	switch {
	case kind == replicaset.InPlaceLive:
		err := p.reconfigure(ctx, vm, spec)
		switch {
		case fault.Is(err, &types.InvalidPowerState{}):
			return vmprovider.VM{}, fmt.Errorf("resize %q: vCenter refused to change it while it runs: %w: %w", name, err, vmprovider.ErrNeedsPowerCycle)
		case notFound(err):
			return vmprovider.VM{}, fmt.Errorf("resize %q: %w: %w", name, err, vmprovider.ErrNotFound)
		case err != nil:
			return vmprovider.VM{}, fmt.Errorf("resize %q: %w", name, err)
		}
	case !to.PowerCycle:
		return vmprovider.VM{}, fmt.Errorf("resize %q: %s: %w", name, blocker, vmprovider.ErrNeedsPowerCycle)
	default:
		if err := p.cycle(ctx, vm, m, spec); err != nil {
			return vmprovider.VM{}, fmt.Errorf("resize %q (%s): %w", name, blocker, err)
		}
	}
	return p.confirm(ctx, vm, name, to)
}

// sizeRule classifies a resize of cur to to's size by InPlaceFor's rules,
// on the VM as vCenter reports it now: only the size is in question, so
// the base revisions are made to agree.
func sizeRule(cur vmprovider.VM, to vmprovider.Resize) (replicaset.InPlace, string) {
	want := vmprovider.Spec{CPUs: to.CPUs, MemoryMiB: to.MemoryMiB}
	cur.BaseRevision = vmprovider.BaseRevision(want)
	return vmprovider.InPlaceFor(cur, want)
}

// reconfigSpec returns the reconfigure that takes cur to to: the size and
// the revisions that differ, in one spec, so that vCenter applies them
// together or not at all; changed is false when nothing differs.
func reconfigSpec(cur vmprovider.VM, to vmprovider.Resize) (spec types.VirtualMachineConfigSpec, changed bool) {
	if to.CPUs != 0 && to.CPUs != cur.CPUs {
		spec.NumCPUs = to.CPUs
	}
	if to.MemoryMiB != 0 && to.MemoryMiB != cur.MemoryMiB {
		spec.MemoryMB = to.MemoryMiB
	}
	if to.Revision != "" && to.Revision != cur.Revision {
		spec.ExtraConfig = append(spec.ExtraConfig, &types.OptionValue{Key: KeyRevision, Value: to.Revision})
	}
	if to.BaseRevision != "" && to.BaseRevision != cur.BaseRevision {
		spec.ExtraConfig = append(spec.ExtraConfig, &types.OptionValue{Key: KeyBaseRevision, Value: to.BaseRevision})
	}
	return spec, spec.NumCPUs != 0 || spec.MemoryMB != 0 || len(spec.ExtraConfig) > 0
}

// reconfigure runs one ReconfigVM_Task of vm with spec.
func (p *Provider) reconfigure(ctx context.Context, vm *object.VirtualMachine, spec types.VirtualMachineConfigSpec) error {
	_, err := p.task(ctx, func(ctx context.Context) (*object.Task, error) { return vm.Reconfigure(ctx, spec) })
	return err
}

// cycle stops vm (m is what was read of it), reconfigures it with spec,
// and powers it on again if it was on; see Resize.
func (p *Provider) cycle(ctx context.Context, vm *object.VirtualMachine, m mo.VirtualMachine, spec types.VirtualMachineConfigSpec) error {
	wasOn := m.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn
	off := m.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOff
	if !off && p.grace >= 0 && guestListens(m) {
		var err error
		if off, err = p.shutDown(ctx, vm, p.grace); err != nil {
			return fmt.Errorf("shut its guest down: %w (the VM is unchanged, and off if its guest finished shutting down)", err)
		}
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishWithin)
	defer cancel()
	if !off {
		_, err := p.task(fctx, vm.PowerOff)
		if err != nil && !fault.Is(err, &types.InvalidPowerState{}) {
			return fmt.Errorf("power it off: %w (the VM is unchanged)", err)
		}
	}
	rerr := p.reconfigure(fctx, vm, spec)
	switch {
	case rerr != nil && !wasOn:
		return fmt.Errorf("reconfigure it while off: %w (the VM is unchanged, and left off as it was not running)", rerr)
	case rerr != nil:
		if _, err := p.task(fctx, vm.PowerOn); err != nil {
			return fmt.Errorf("reconfigure it while off: %w; the VM is unchanged but left powered off, since powering it on again failed: %w", rerr, err)
		}
		return fmt.Errorf("reconfigure it while off: %w (the VM is unchanged and powered on again)", rerr)
	case wasOn:
		if _, err := p.task(fctx, vm.PowerOn); err != nil {
			return fmt.Errorf("the VM is resized but powered off: power it on again: %w", err)
		}
	}
	return nil
}

// confirm reads vm back after a reconfigure and checks that vCenter
// reports what to asked for. A task that succeeded has applied its spec,
// so this only guards against a vCenter that adjusts a value (memory
// rounded, say); the read also gives Cached the VM's new state.
func (p *Provider) confirm(ctx context.Context, vm *object.VirtualMachine, name string, to vmprovider.Resize) (vmprovider.VM, error) {
	var m mo.VirtualMachine
	if err := vm.Properties(ctx, vm.Reference(), vmProps, &m); err != nil {
		return vmprovider.VM{}, fmt.Errorf("resized %q, but reading it back failed: %w", name, err)
	}
	got := toVM(m)
	if (to.CPUs != 0 && got.CPUs != to.CPUs) || (to.MemoryMiB != 0 && got.MemoryMiB != to.MemoryMiB) ||
		(to.Revision != "" && got.Revision != to.Revision) || (to.BaseRevision != "" && got.BaseRevision != to.BaseRevision) {
		return got, fmt.Errorf("resized %q, but vCenter reports %d CPUs, %d MiB, revision %q and base revision %q, not %d, %d, %q and %q",
			name, got.CPUs, got.MemoryMiB, got.Revision, got.BaseRevision, to.CPUs, to.MemoryMiB, to.Revision, to.BaseRevision)
	}
	return got, nil
}

// Resize implements vmprovider.Resizer through the Provider; reads return
// the VM as the Provider read it after the resize until the watch reports
// a state that agrees (same power, size and revisions), as for Create.
func (c Cached) Resize(ctx context.Context, name, owner string, to vmprovider.Resize) error {
	vm, err := c.Provider.resize(ctx, name, owner, to)
	switch {
	case err == nil:
		c.Watch.put(vm)
	case errors.Is(err, vmprovider.ErrNotFound):
		c.Watch.forget(name)
	}
	return err
}
