package vmprovider_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vmprovidertest"
)

// resizing is a Fake that is a vmprovider.Resizer, by the contract's
// rules: a change InPlaceFor's rules allow while the VM runs is made as
// it stands, one that needs the VM off only with PowerCycle (it is
// powered off, changed and powered on again), the size and revisions
// together. fail, when set, is asked before each resize: an error fails
// it untouched, unless lost is set, when the change is made and the error
// returned all the same (an answer lost). Every resize made is recorded.
type resizing struct {
	*vmprovidertest.Fake
	mu   sync.Mutex
	fail func(name string, to vmprovider.Resize) (err error, lost bool)
	// offAt, when set, is called with the VM as it is powered off for a
	// power cycle, before it is changed.
	offAt func(vm vmprovider.VM)
	made  []resized
}

// resized is one resize the fake made.
type resized struct {
	Name, UUID string
	To         vmprovider.Resize
	Cycled     bool // the VM was powered off and on for it
}

var _ vmprovider.Resizer = (*resizing)(nil)

func (r *resizing) Resize(ctx context.Context, name, owner string, to vmprovider.Resize) error {
	vm, err := r.Get(ctx, name)
	if err != nil {
		return err
	}
	if vm.Owner != owner {
		return &vmprovider.NotOwnedError{Name: name, Want: owner, Got: vm.Owner}
	}
	var fault error
	var lost bool
	if r.fail != nil {
		if fault, lost = r.fail(name, to); fault != nil && !lost {
			return fault
		}
	}
	kind, why := vmprovider.SizeChange(vm, to.CPUs, to.MemoryMiB)
	cycle := kind == replicaset.InPlacePowerCycle
	if cycle && !to.PowerCycle {
		return fmt.Errorf("resize %s: %s: %w", name, why, vmprovider.ErrNeedsPowerCycle)
	}
	if cycle {
		if err := r.SetPower(ctx, name, owner, vmprovider.PoweredOff); err != nil {
			return err
		}
		if r.offAt != nil {
			r.offAt(vm)
		}
		if vm, err = r.Get(ctx, name); err != nil {
			return err
		}
	}
	if to.CPUs != 0 {
		vm.CPUs = to.CPUs
	}
	if to.MemoryMiB != 0 {
		vm.MemoryMiB = to.MemoryMiB
	}
	if to.Revision != "" {
		vm.Revision = to.Revision
	}
	if to.BaseRevision != "" {
		vm.BaseRevision = to.BaseRevision
	}
	r.Add(vm)
	if cycle {
		if err := r.SetPower(ctx, name, owner, vmprovider.PoweredOn); err != nil {
			return err
		}
	}
	r.mu.Lock()
	r.made = append(r.made, resized{Name: name, UUID: vm.InstanceUUID, To: to, Cycled: cycle})
	r.mu.Unlock()
	return fault
}

// resizes returns the resizes made so far, and forgets them.
func (r *resizing) resizes() []resized {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.made
	r.made = nil
	return out
}
