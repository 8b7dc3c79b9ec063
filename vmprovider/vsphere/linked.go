package vsphere

import (
	"context"
	"fmt"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/vmprovider"
)

// LinkedCloneSnapshot is the name of the snapshot Create takes of a
// template that has none when it is asked for a linked clone
// (vmprovider.Spec.LinkedClone): a snapshot of the disks only, without
// the memory and without quiescing the guest. The Provider never removes
// it, since every linked clone made from it depends on it.
const LinkedCloneSnapshot = "replicakit-linked-clone"

// linkedCloneDescription is the description of the snapshot Create takes,
// for whoever finds it in vCenter.
const linkedCloneDescription = "Taken by replicakit to make linked clones from (vmprovider.Spec.LinkedClone). " +
	"VMs made from it read its disks: do not delete it while they exist."

// linkClone makes clone a linked clone of tmpl, the template at tmplPath:
// its disks are children of tmpl's current snapshot (one taken first when
// it has none), created on the clone's datastore.
func (p *Provider) linkClone(ctx context.Context, tmpl *object.VirtualMachine, tmplPath string, clone *types.VirtualMachineCloneSpec) error {
	snap, err := p.linkSnapshot(ctx, tmpl, tmplPath)
	if err != nil {
		return err
	}
	clone.Snapshot = &snap
	clone.Location.DiskMoveType = string(types.VirtualMachineRelocateDiskMoveOptionsCreateNewChildDiskBacking)
	return nil
}

// linkSnapshot returns the current snapshot of tmpl, the template at
// tmplPath. When it has none, it takes one (LinkedCloneSnapshot) under
// the template's lock, after reading the template again: the creates of
// this Provider that found none wait for the first to take it and then
// use it, as they use one another process took meanwhile. A VM marked as
// a template cannot take a snapshot: one without a snapshot is an error
// wrapping vmprovider.ErrInvalidSpec, found before anything is changed.
func (p *Provider) linkSnapshot(ctx context.Context, tmpl *object.VirtualMachine, tmplPath string) (types.ManagedObjectReference, error) {
	snap, _, err := currentSnapshot(ctx, tmpl, tmplPath)
	if err != nil || snap != nil {
		return deref(snap), err
	}
	unlock, err := p.lockTemplate(ctx, tmpl.Reference())
	if err != nil {
		return types.ManagedObjectReference{}, fmt.Errorf("wait to take a snapshot of template %s: %w", tmplPath, err)
	}
	defer unlock()
	snap, marked, err := currentSnapshot(ctx, tmpl, tmplPath)
	if err != nil || snap != nil {
		return deref(snap), err
	}
	if marked {
		return types.ManagedObjectReference{}, fmt.Errorf("linked clone of template %s: it is marked as a template and has no snapshot, "+
			"and vCenter takes none of a template: mark it as a VM, take a snapshot and mark it as a template again, "+
			"or make full clones: %w", tmplPath, vmprovider.ErrInvalidSpec)
	}
	result, err := p.task(ctx, func(ctx context.Context) (*object.Task, error) {
		return tmpl.CreateSnapshot(ctx, LinkedCloneSnapshot, linkedCloneDescription, false, false)
	})
	if err != nil {
		return types.ManagedObjectReference{}, fmt.Errorf("take snapshot %q of template %s for linked clones: %w", LinkedCloneSnapshot, tmplPath, err)
	}
	ref, ok := result.(types.ManagedObjectReference)
	if !ok {
		return types.ManagedObjectReference{}, fmt.Errorf("take snapshot %q of template %s: task returned %T, not a snapshot reference",
			LinkedCloneSnapshot, tmplPath, result)
	}
	return ref, nil
}

// currentSnapshot reads tmpl's current snapshot (nil when it has none)
// and whether it is marked as a template.
func currentSnapshot(ctx context.Context, tmpl *object.VirtualMachine, tmplPath string) (*types.ManagedObjectReference, bool, error) {
	var m mo.VirtualMachine
	if err := tmpl.Properties(ctx, tmpl.Reference(), []string{"snapshot", "config.template"}, &m); err != nil {
		return nil, false, fmt.Errorf("read the snapshots of template %s: %w", tmplPath, err)
	}
	marked := m.Config != nil && m.Config.Template
	if m.Snapshot == nil {
		return nil, marked, nil
	}
	return m.Snapshot.CurrentSnapshot, marked, nil
}

// deref returns *ref, or the zero reference for nil.
func deref(ref *types.ManagedObjectReference) types.ManagedObjectReference {
	if ref == nil {
		return types.ManagedObjectReference{}
	}
	return *ref
}

// lockTemplate takes the lock of the template ref, which serializes the
// snapshots taken of it, waiting for at most ctx; it returns the unlock
// function.
func (p *Provider) lockTemplate(ctx context.Context, ref types.ManagedObjectReference) (unlock func(), err error) {
	p.mu.Lock()
	if p.snapshotting == nil {
		p.snapshotting = map[types.ManagedObjectReference]chan struct{}{}
	}
	l, ok := p.snapshotting[ref]
	if !ok {
		l = make(chan struct{}, 1)
		p.snapshotting[ref] = l
	}
	p.mu.Unlock()
	select {
	case l <- struct{}{}:
		return func() { <-l }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
