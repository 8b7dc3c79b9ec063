package vsphere

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/vmprovider"
)

// A create outlives its call: a full clone runs for minutes on vCenter,
// queued behind its host's limits, and goes on when the caller gives up.
// The provider runs each create as a createOp that ends only when vCenter's
// work does, holding its clone slot until then, and remembers it by name
// meanwhile: List and Get report its VM as Creating, a Create of the name
// by the same owner joins it, and a Delete cancels it.

// errCancelled ends a create that a Delete of its VM cancelled.
var errCancelled = errors.New("a Delete of the VM cancelled its create")

// createOp is one create in flight: its clone, then its power-on.
type createOp struct {
	spec vmprovider.Spec
	uuid string    // the instance UUID its clone is given
	at   time.Time // when it began

	done chan struct{} // closed once vm and err are set
	vm   vmprovider.VM
	err  error

	mu        sync.Mutex
	task      *object.Task  // the clone's task, once started
	cancelled chan struct{} // closed by cancel
}

// isCancelled reports whether a Delete cancelled the create.
func (op *createOp) isCancelled() bool {
	select {
	case <-op.cancelled:
		return true
	default:
		return false
	}
}

// began records t, the clone's task, and reports whether the create was
// cancelled before it started, so that the caller cancels t too.
func (op *createOp) began(t *object.Task) bool {
	op.mu.Lock()
	defer op.mu.Unlock()
	op.task = t
	return op.isCancelled()
}

// cancel asks the create to stop: one that has not started its clone will
// not, and the clone's task, if running, is cancelled (CancelTask), which
// vCenter honours while the clone runs and rolls back, leaving no VM. A
// task vCenter no longer lets be cancelled (it has ended, or is past the
// point of no return) runs on; the create then removes the VM it made.
func (op *createOp) cancel(ctx context.Context) error {
	op.mu.Lock()
	if op.isCancelled() {
		op.mu.Unlock()
		return nil
	}
	close(op.cancelled)
	t := op.task
	op.mu.Unlock()
	if t == nil {
		return nil
	}
	err := t.Cancel(ctx)
	if fault.Is(err, &types.InvalidState{}) || fault.Is(err, &types.NotSupported{}) || notFound(err) {
		return nil // ended, or not to be cancelled: the create removes its VM
	}
	return err
}

// creatingVM is the VM op is making, as List and Get report it.
func (op *createOp) creatingVM() vmprovider.VM {
	s := op.spec
	return vmprovider.VM{Name: s.Name, InstanceUUID: op.uuid, Owner: s.Owner.UID, OwnerName: s.Owner.Name,
		CreatedAt: op.at, Zone: s.Zone, Revision: s.Revision, BaseRevision: s.BaseRevision,
		CPUs: s.CPUs, MemoryMiB: s.MemoryMiB, Heartbeat: vmprovider.HeartbeatGray, Creating: true}
}

// startCreate begins the create of spec, or returns the one in flight for
// its name: joined is then true, and the caller owns no part of it.
func (p *Provider) startCreate(ctx context.Context, spec vmprovider.Spec) (op *createOp, joined bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if op, ok := p.creates[spec.Name]; ok {
		return op, true
	}
	op = &createOp{spec: spec, uuid: newInstanceUUID(spec.Owner.UID), at: time.Now(),
		done: make(chan struct{}), cancelled: make(chan struct{})}
	if p.creates == nil {
		p.creates = map[string]*createOp{}
	}
	p.creates[spec.Name] = op
	p.background(ctx, func(opCtx context.Context) {
		vm, err := p.create(opCtx, spec, op)
		p.mu.Lock()
		delete(p.creates, spec.Name)
		p.mu.Unlock()
		op.vm, op.err = vm, err
		close(op.done)
	})
	return op, false
}

// background runs f on a goroutine of its own with a context that keeps
// ctx's values but not its end, ending with Close, which waits for f: an
// operation that outlives the call that started it.
func (p *Provider) background(ctx context.Context, f func(context.Context)) {
	opCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(p.life, cancel)
	p.ops.Add(1)
	go func() {
		defer p.ops.Done()
		defer cancel()
		defer stop()
		f(opCtx)
	}()
}

// await waits for op under ctx. A ctx that ends first leaves op running.
func (p *Provider) await(ctx context.Context, op *createOp) (vmprovider.VM, error) {
	select {
	case <-op.done:
		return op.vm, op.err
	case <-ctx.Done():
		return vmprovider.VM{}, fmt.Errorf("create VM %q: the call ended while vCenter goes on making the VM, "+
			"which the provider waits for (List and Get report it as Creating; a Delete cancels it): %w", op.spec.Name, ctx.Err())
	}
}

// creating returns the create in flight for name, or nil.
func (p *Provider) creating(name string) *createOp {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.creates[name]
}

// inFlight returns the creates in flight for owner, in no particular
// order. A read of vCenter takes them before it reads, so that a create
// ending in between is still seen: as made, or as in flight.
func (p *Provider) inFlight(owner string) []*createOp {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*createOp
	for _, op := range p.creates {
		if op.spec.Owner.UID == owner && owner != "" {
			out = append(out, op)
		}
	}
	return out
}

// overlay returns vms, read from vCenter (or its watch) after ops were
// taken (inFlight), with what the provider has in flight: the VM of each
// create of ops marked Creating (added when vCenter does not show it yet:
// a create ends only after its power-on), and each VM whose delete the
// provider is finishing marked Deleting.
func (p *Provider) overlay(vms []vmprovider.VM, ops []*createOp) []vmprovider.VM {
	for _, op := range ops {
		i := slices.IndexFunc(vms, func(vm vmprovider.VM) bool {
			return vm.Name == op.spec.Name && (vm.InstanceUUID == op.uuid || vm.Owner == op.spec.Owner.UID)
		})
		select {
		case <-op.done:
			continue // ended since: vCenter's read stands
		default:
		}
		if i < 0 {
			vms = append(vms, op.creatingVM())
		} else {
			vms[i].Creating = true
		}
	}
	p.markDeleting(vms)
	return vms
}

// cancelCreate cancels the create in flight for name, if any, and waits
// for it to end under ctx; a create of another owner is left alone and
// refused with a *NotOwnedError.
func (p *Provider) cancelCreate(ctx context.Context, name, owner string) error {
	op := p.creating(name)
	if op == nil {
		return nil
	}
	if op.spec.Owner.UID != owner || owner == "" {
		return &vmprovider.NotOwnedError{Name: name, Want: owner, Got: op.spec.Owner.UID}
	}
	if err := op.cancel(ctx); err != nil {
		return fmt.Errorf("cancel the create of %q: %w", name, err)
	}
	select {
	case <-op.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("delete %q: its create was cancelled and has not ended yet: %w", name, ctx.Err())
	}
}

// lockMade locks name (lockName) for a method that acts on a VM made,
// and returns the unlock function; a VM still being made is refused at
// once with an error wrapping ErrNotFound, rather than waited for, and one
// being deleted (Delete) with an error wrapping ErrDeleting.
func (p *Provider) lockMade(name string) (func(), error) {
	if p.creating(name) != nil {
		return nil, fmt.Errorf("VM %q is still being created: %w", name, vmprovider.ErrNotFound)
	}
	unlock := p.lockName(name)
	if p.deleting(name) {
		unlock()
		return nil, beingDeleted(name)
	}
	return unlock, nil
}
