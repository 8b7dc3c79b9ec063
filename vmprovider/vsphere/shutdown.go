package vsphere

import (
	"context"
	"fmt"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// guestListens reports whether the guest of a VM as m describes it can be
// asked to shut down: the VM is powered on, its VMware Tools are running,
// and its heartbeat is not red. A hung guest (a red heartbeat) would not
// shut down: asking it would only wait out the grace, delaying the
// replacement that self-healing deletes it for.
func guestListens(m mo.VirtualMachine) bool {
	return m.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn && m.Guest != nil &&
		m.Guest.ToolsRunningStatus == string(types.VirtualMachineToolsRunningStatusGuestToolsRunning) &&
		m.GuestHeartbeatStatus != types.ManagedEntityStatusRed &&
		(m.Guest.GuestStateChangeSupported == nil || *m.Guest.GuestStateChangeSupported)
}

// shutdownAsked returns when the guest of the VM ref was asked to shut
// down for a Delete that has not finished, and whether it was.
func (p *Provider) shutdownAsked(ref types.ManagedObjectReference) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.asked[ref]
	return at, ok
}

// setShutdownAsked records (ok) or forgets (!ok) when the guest of the VM
// ref was asked to shut down.
func (p *Provider) setShutdownAsked(ref types.ManagedObjectReference, at time.Time, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !ok {
		delete(p.asked, ref)
		return
	}
	if p.asked == nil {
		p.asked = map[types.ManagedObjectReference]time.Time{}
	}
	p.asked[ref] = at
}

// askGuest asks the guest of vm to shut down (ShutdownGuest, which
// vCenter answers at once, passing the request to VMware Tools), waiting
// at most grace for the answer. It reports whether vCenter took the
// request, and whether the VM is gone; false and no error leave the hard
// power-off to the caller: vCenter refused the request with a fault
// (ToolsUnavailable, InvalidState or InvalidPowerState, say) or did not
// answer within the grace. It returns an error when ctx ends or vCenter
// could not be asked at all.
func (p *Provider) askGuest(ctx context.Context, vm *object.VirtualMachine, grace time.Duration) (took, gone bool, err error) {
	gctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	err = vm.ShutdownGuest(gctx)
	switch {
	case ctx.Err() != nil:
		return false, false, ctx.Err()
	case notFound(err):
		return false, true, nil
	case gctx.Err() != nil, soap.IsSoapFault(err), soap.IsVimFault(err):
		return false, false, nil
	case err != nil:
		return false, false, err
	}
	return true, false, nil
}

// shutDown asks the guest of vm to shut down and waits until vCenter
// reports the VM off, for at most grace in all (askGuest, waitOff). It
// reports whether the VM is off (or gone); false leaves the hard
// power-off to the caller.
func (p *Provider) shutDown(ctx context.Context, vm *object.VirtualMachine, grace time.Duration) (bool, error) {
	start := time.Now()
	took, gone, err := p.askGuest(ctx, vm, grace)
	if err != nil || gone || !took {
		return gone, err
	}
	return p.waitOff(ctx, vm, grace-time.Since(start))
}

// waitOff waits until vCenter reports vm powered off, watching
// runtime.powerState with a property collector of its own, for at most
// grace. It reports whether the VM is off (or gone); false and no error
// mean the grace passed.
func (p *Provider) waitOff(ctx context.Context, vm *object.VirtualMachine, grace time.Duration) (bool, error) {
	gctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	off := false
	err := property.Wait(gctx, property.DefaultCollector(p.client), vm.Reference(), []string{"runtime.powerState"},
		func(changes []types.PropertyChange) bool {
			for _, c := range changes {
				if s, ok := c.Val.(types.VirtualMachinePowerState); ok && c.Name == "runtime.powerState" {
					off = s == types.VirtualMachinePowerStatePoweredOff
				}
			}
			return off
		})
	switch {
	case ctx.Err() != nil:
		// property.Wait answers a cancellation with no error.
		return false, ctx.Err()
	case off, notFound(err):
		return true, nil
	case gctx.Err() != nil:
		return false, nil // the grace passed
	case err != nil:
		return false, fmt.Errorf("wait for the guest to shut down: %w", err)
	}
	return false, nil
}
