package vsphere

import (
	"context"
	"fmt"
	"time"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/vmprovider"
)

// Delete implements vmprovider.Provider: it stops the VM if it is not
// off and destroys it. A powered-on VM whose VMware Tools are running is
// first asked to shut its guest down (ShutdownGuest), once; only when
// vCenter refuses the request, or the tools are not running or its
// heartbeat is red (a hung guest), or its tools support no state change,
// or the VM is suspended, is it powered off at once (PowerOffVM_Task). A
// negative Config.ShutdownGrace powers off at once.
//
// Delete holds no one while a guest shuts down. A guest already off when
// vCenter answered the request is destroyed in the same call; for any
// other, Delete returns an error wrapping vmprovider.ErrDeleting and the
// provider finishes on its own: it waits until vCenter reports the VM
// powered off, for at most Config.ShutdownGrace (DefaultShutdownGrace
// unless set) from the request, powers it off when the grace has passed,
// and destroys it, holding a task slot (Config.MaxTasks) only for the
// power-off and the destroy. Meanwhile List and Get (and Cached's) report
// the VM with VM.Deleting set, a Delete of it answers the same (once it is
// gone, nil; if the provider's own steps failed, that error, once, and
// the next Delete tries again), the other methods refuse it with
// ErrDeleting, and a Create of its name too. A caller that
// needs the VM gone (a finalizer) calls Delete again later. A provider
// started anew asks the guest again.
//
// A VM already gone is success; a VM still being made (Create) has its
// create cancelled, and Delete waits for it to end under ctx; a VM without
// owner's mark is left untouched and reported with a *NotOwnedError.
func (p *Provider) Delete(ctx context.Context, name, owner string) (err error) {
	defer func() { err = withPrivileges(err) }()
	if err := p.cancelCreate(ctx, name, owner); err != nil {
		return err
	}
	if op := p.deletingOp(name); op != nil {
		return p.answer(op, name, owner)
	}
	unlock := p.lockName(name)
	defer unlock()
	if op := p.deletingOp(name); op != nil {
		return p.answer(op, name, owner) // handed off while this waited for the name
	}
	return p.delete(ctx, name, owner, p.grace)
}

// delete is Delete with name already locked, giving the guest grace to
// shut down (none when negative). When the guest took the request to shut
// down, the rest is handed to a deleteOp and delete returns its answer,
// wrapping ErrDeleting.
func (p *Provider) delete(ctx context.Context, name, owner string, grace time.Duration) error {
	vm, m, err := p.owned(ctx, name, owner)
	if notFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	off := m.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOff
	if !off && grace >= 0 && guestListens(m) {
		// A Delete retried (after the provider's own wait failed, say)
		// goes on with the grace the first one gave, asking the guest
		// once.
		asked, again := p.shutdownAsked(vm.Reference())
		left := grace
		if again {
			left = grace - time.Since(asked)
		}
		if left > 0 && !again {
			took, gone, err := p.askGuest(ctx, vm, left)
			switch {
			case err != nil:
				return fmt.Errorf("ask the guest of %q to shut down before destroying it: %w", name, err)
			case gone:
				return nil
			case !took:
				left = 0 // refused, or no answer within the grace: powered off now
			default:
				p.setShutdownAsked(vm.Reference(), time.Now(), true)
			}
		}
		if left > 0 {
			// A guest that is off already (it shut down as it was asked)
			// is destroyed in this call; any other is left to the op.
			state, err := vm.PowerState(ctx)
			if notFound(err) {
				return nil
			}
			if err != nil || state != types.VirtualMachinePowerStatePoweredOff {
				return p.answer(p.startDelete(ctx, vm, name, owner, left), name, owner)
			}
			off = true
		}
	}
	return p.destroy(ctx, vm, name, off)
}

// destroy powers vm, called name, off unless it is off, and destroys it.
func (p *Provider) destroy(ctx context.Context, vm *object.VirtualMachine, name string, off bool) error {
	if !off {
		_, err := p.task(ctx, vm.PowerOff)
		if err != nil && !fault.Is(err, &types.InvalidPowerState{}) && !notFound(err) {
			return fmt.Errorf("power off %q before destroying it: %w", name, err)
		}
	}
	if _, err := p.task(ctx, vm.Destroy); err != nil && !notFound(err) {
		return fmt.Errorf("destroy %q: %w", name, err)
	}
	p.forget(vm.Reference())
	p.setShutdownAsked(vm.Reference(), time.Time{}, false)
	return nil
}

// deleteOp is a Delete the provider finishes on its own once the guest
// took the request to shut down: the wait for the power-off, the hard
// power-off when the grace has passed, and the destroy. One that failed
// stays registered, ended, until a Delete answers its error.
type deleteOp struct {
	owner string
	until time.Time     // when the grace ends
	done  chan struct{} // closed once err is set
	err   error
}

// ended reports whether op has ended.
func (op *deleteOp) ended() bool {
	select {
	case <-op.done:
		return true
	default:
		return false
	}
}

// answer is what a Delete of name by owner answers while op runs, or
// once it has ended: its error, once, after which op is forgotten and a
// Delete tries again.
func (p *Provider) answer(op *deleteOp, name, owner string) error {
	if op.owner != owner || owner == "" {
		return &vmprovider.NotOwnedError{Name: name, Want: owner, Got: op.owner}
	}
	if op.ended() {
		p.mu.Lock()
		if p.deletes[name] == op {
			delete(p.deletes, name)
		}
		p.mu.Unlock()
		if op.err != nil {
			return fmt.Errorf("the delete the provider finished on its own failed; Delete again to retry: %w", op.err)
		}
		return nil
	}
	left := max(time.Until(op.until), 0).Round(time.Second)
	return fmt.Errorf("VM %q: its guest was asked to shut down; the provider powers it off in %v at most if it has not, and destroys it: %w",
		name, left, vmprovider.ErrDeleting)
}

// startDelete hands the rest of vm's delete to a deleteOp, which waits at
// most grace for the guest to power the VM off and destroys it; name is
// locked, and the op is registered before it is released.
func (p *Provider) startDelete(ctx context.Context, vm *object.VirtualMachine, name, owner string, grace time.Duration) *deleteOp {
	op := &deleteOp{owner: owner, until: time.Now().Add(grace), done: make(chan struct{})}
	p.mu.Lock()
	if p.deletes == nil {
		p.deletes = map[string]*deleteOp{}
	}
	p.deletes[name] = op
	p.mu.Unlock()
	p.background(ctx, func(opCtx context.Context) {
		off, err := p.waitOff(opCtx, vm, grace)
		if err == nil {
			err = p.destroy(opCtx, vm, name, off)
		}
		op.err = withPrivileges(err)
		if op.err == nil {
			p.mu.Lock()
			if p.deletes[name] == op {
				delete(p.deletes, name)
			}
			p.mu.Unlock()
		}
		close(op.done)
	})
	return op
}

// deletingOp returns the delete the provider is finishing for name, or
// one that failed and has not been answered yet; nil when there is none.
func (p *Provider) deletingOp(name string) *deleteOp {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.deletes[name]
}

// deleting reports whether the provider is finishing a delete of name.
func (p *Provider) deleting(name string) bool {
	op := p.deletingOp(name)
	return op != nil && !op.ended()
}

// beingDeleted is the error of a method that meets a VM whose delete the
// provider is finishing.
func beingDeleted(name string) error {
	return fmt.Errorf("VM %q is being deleted, its guest shutting down: %w", name, vmprovider.ErrDeleting)
}
