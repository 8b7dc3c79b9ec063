package vmprovider

import (
	"context"
	"errors"
	"fmt"
)

// ErrNeedsPowerCycle means a resize needs the VM powered off (InPlaceFor
// says replicaset.InPlacePowerCycle) and the caller did not allow it
// (Resize.PowerCycle false), or the platform refused to make it while the
// VM runs: the VM was left as it was.
var ErrNeedsPowerCycle = errors.New("vmprovider: the change needs the VM powered off")

// Resize is what a Resizer makes of a VM: its size, and the revisions it
// records with it.
type Resize struct {
	// CPUs is the number of virtual CPUs; zero keeps the VM's.
	CPUs int32
	// MemoryMiB is the memory size in MiB; zero keeps the VM's.
	MemoryMiB int64
	// Revision is recorded as the VM's revision (VM.Revision) with the
	// new size; empty keeps the VM's.
	Revision string
	// BaseRevision is recorded as the VM's base revision
	// (VM.BaseRevision) with the new size; empty keeps the VM's.
	BaseRevision string
	// PowerCycle allows the resize to stop the VM, change it and start it
	// again, when the change cannot be made while it runs.
	PowerCycle bool
}

// Resizer is implemented by a provider that can change the CPUs and memory
// of a VM it already has, where it runs, instead of replacing it: the
// in-place updates a Set makes when InPlaceFor allows them.
//
// With zero sizes, Resize records only the revisions, both in one change:
// the base revision a RevisionMarker cannot record.
type Resizer interface {
	// Resize gives the VM called name, which must carry owner's mark
	// (else a *NotOwnedError), to's size and records to's revisions on it.
	// A VM that is gone is an error wrapping ErrNotFound; a negative size
	// is an error wrapping ErrInvalidSpec. A VM already of that size and
	// those revisions is success, with nothing changed.
	//
	// The size and the revisions change together or not at all, so the
	// revisions recorded always describe the size the VM has. A change
	// InPlaceFor's rules allow while the VM runs (or any change to a VM
	// that is off) is made as it stands. One that needs the VM off is
	// refused with an error wrapping ErrNeedsPowerCycle, the VM untouched,
	// unless to.PowerCycle allows it: then the VM is stopped (its guest
	// shut down first where the provider does so for Delete), changed, and
	// started again if it was running. Should the change fail once the VM
	// is off, the VM is started again unchanged and the error says so.
	Resize(ctx context.Context, name, owner string, to Resize) error
}

var _ Resizer = (*Endpoints)(nil)

// Resize implements Resizer on the endpoint that holds the VM, when its
// Provider is a Resizer (else an error wrapping ErrInvalidSpec); a name on
// several endpoints is refused (ErrDuplicateName: resize one copy through
// On).
func (e *Endpoints) Resize(ctx context.Context, name, owner string, to Resize) error {
	_, err := e.only(ctx, name, func(p Provider) error { return resize(ctx, p, name, owner, to) })
	return err
}

// resize resizes the VM on p, when p can.
func resize(ctx context.Context, p Provider, name, owner string, to Resize) error {
	r, ok := p.(Resizer)
	if !ok {
		return fmt.Errorf("the endpoint's provider cannot resize VMs: %w", ErrInvalidSpec)
	}
	return r.Resize(ctx, name, owner, to)
}
