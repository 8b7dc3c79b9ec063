package vsphere

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/replicakit/replicakit/vmprovider"
)

// Cached is a vmprovider.Provider that answers Get and List from a Watch,
// without calling vCenter, and creates, powers and destroys through the
// Provider (which reads the VM live before it changes it, so a stale copy
// never decides an action). What Create returned, the power SetPower set
// and what Delete destroyed are recorded in the watch at once (and a VM a
// write finds gone is dropped from it), and reads
// return them until the watch reports a state that agrees (or ten seconds
// pass), so an update from before the write cannot take a read back in
// time. Get and List wait for the watch's first
// full copy, and fail with an error wrapping vmprovider.ErrUnreachable
// while the watch cannot reach vCenter (Watch.Health): its copy is then
// unknown, not current. Get and List hold the fields the watch keeps
// (Watch.SetFields), also while they return a write's state; Create
// returns the VM whole, as the Provider read it. Run the watch (Watch.Run)
// for as long as the Cached is used.
type Cached struct {
	// Provider makes the changes.
	Provider *Provider
	// Watch answers the reads.
	Watch *Watch
}

var (
	_ vmprovider.Provider       = Cached{}
	_ vmprovider.RevisionMarker = Cached{}
	_ vmprovider.Resetter       = Cached{}
)

// MarkRevision implements vmprovider.RevisionMarker through the Provider;
// reads show the new revision once the watch reports it (marking again
// meanwhile does no harm).
func (c Cached) MarkRevision(ctx context.Context, name, owner, revision string) error {
	return c.Provider.MarkRevision(ctx, name, owner, revision)
}

// wait waits for the watch's first full copy, and returns the watch's
// health (Watch.Health) then, or as soon as an attempt to take it failed.
func (c Cached) wait(ctx context.Context) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-c.Watch.Synced():
			_, err := c.Watch.Health()
			return err
		case <-ctx.Done():
			return fmt.Errorf("wait for the vCenter watch's first copy: %w", ctx.Err())
		case <-tick.C:
			if _, err := c.Watch.Health(); err != nil {
				return err
			}
		}
	}
}

// Create implements vmprovider.Provider.
func (c Cached) Create(ctx context.Context, spec vmprovider.Spec) (vmprovider.VM, error) {
	vm, err := c.Provider.Create(ctx, spec)
	if err == nil {
		c.Watch.put(vm)
	}
	return vm, err
}

// Get implements vmprovider.Provider from the watch, with what the
// Provider has in flight, as Provider.Get reports it (VM.Creating,
// VM.Deleting).
func (c Cached) Get(ctx context.Context, name string) (vmprovider.VM, error) {
	if err := c.wait(ctx); err != nil {
		return vmprovider.VM{}, err
	}
	var ops []*createOp
	if op := c.Provider.creating(name); op != nil {
		ops = append(ops, op)
	}
	vm, ok := c.Watch.Get(name)
	if !ok && len(ops) > 0 {
		return ops[0].creatingVM(), nil // not shown by vCenter yet
	}
	if !ok {
		return vmprovider.VM{}, fmt.Errorf("VM %q (as the vCenter watch last saw it): %w", name, vmprovider.ErrNotFound)
	}
	return c.Provider.overlay([]vmprovider.VM{vm}, ops)[0], nil
}

// List implements vmprovider.Provider from the watch, with what the
// Provider has in flight, as Provider.List reports it (VM.Creating,
// VM.Deleting), sorted by name.
func (c Cached) List(ctx context.Context, owner string) ([]vmprovider.VM, error) {
	if err := c.wait(ctx); err != nil {
		return nil, err
	}
	ops := c.Provider.inFlight(owner)
	vms := c.Provider.overlay(c.Watch.List(owner), ops)
	slices.SortFunc(vms, func(a, b vmprovider.VM) int { return strings.Compare(a.Name, b.Name) })
	return vms, nil
}

// SetPower implements vmprovider.Provider.
func (c Cached) SetPower(ctx context.Context, name, owner string, state vmprovider.PowerState) error {
	err := c.Provider.SetPower(ctx, name, owner, state)
	switch {
	case err == nil:
		c.Watch.powered(name, state)
	case errors.Is(err, vmprovider.ErrNotFound) && c.Provider.creating(name) == nil:
		c.Watch.forget(name)
	}
	return err
}

// Reset implements vmprovider.Resetter through the Provider; reads show
// the VM's new boot time once the watch reports it.
func (c Cached) Reset(ctx context.Context, name, owner string) error {
	err := c.Provider.Reset(ctx, name, owner)
	if errors.Is(err, vmprovider.ErrNotFound) && c.Provider.creating(name) == nil {
		c.Watch.forget(name)
	}
	return err
}

// Delete implements vmprovider.Provider.
func (c Cached) Delete(ctx context.Context, name, owner string) error {
	err := c.Provider.Delete(ctx, name, owner)
	if err == nil || errors.Is(err, vmprovider.ErrNotFound) {
		c.Watch.forget(name)
	}
	return err
}
