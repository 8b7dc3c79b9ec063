package vsphere

import (
	"context"
	"fmt"
	"strings"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/vmprovider"
)

// LinkedCloneSnapshot is the name of the snapshot a linked clone links to
// when its Spec names none (vmprovider.Spec.LinkedCloneSnapshot): Create
// takes it of a template that has no snapshot of that name, of the disks
// only, without the memory and without quiescing the guest. The Provider
// never removes it, since every linked clone made from it depends on it.
const LinkedCloneSnapshot = "replicakit-linked-clone"

// linkedCloneDescription is the description of the snapshot Create takes,
// for whoever finds it in vCenter.
const linkedCloneDescription = "Taken by replicakit to make linked clones from (vmprovider.Spec.LinkedClone). " +
	"VMs made from it read its disks: do not delete it while they exist."

// linkClone makes clone a linked clone of tmpl, the template at tmplPath:
// its disks are children of tmpl's snapshot named by spec (one taken first
// when it has none of that name), created on the clone's datastore.
func (p *Provider) linkClone(ctx context.Context, tmpl *object.VirtualMachine, tmplPath string, spec vmprovider.Spec, clone *types.VirtualMachineCloneSpec) error {
	name := spec.LinkedCloneSnapshot
	if name == "" {
		name = LinkedCloneSnapshot
	}
	snap, err := p.linkSnapshot(ctx, tmpl, tmplPath, name)
	if err != nil {
		return err
	}
	clone.Snapshot = &snap
	clone.Location.DiskMoveType = string(types.VirtualMachineRelocateDiskMoveOptionsCreateNewChildDiskBacking)
	return nil
}

// linkSnapshot returns tmpl's snapshot called name, tmpl being the
// template at tmplPath, wherever it is in the snapshot tree and whichever
// snapshot is current. When there is none, it takes one under the
// template's lock, after reading the template again: the creates of this
// Provider that found none wait for the first to take it and then use it,
// as they use one another process took meanwhile. A VM marked as a
// template cannot take a snapshot: one without the snapshot is an error
// wrapping vmprovider.ErrInvalidSpec, found before anything is changed,
// naming the snapshots it has. Of several snapshots called name, the
// earliest is used.
func (p *Provider) linkSnapshot(ctx context.Context, tmpl *object.VirtualMachine, tmplPath, name string) (types.ManagedObjectReference, error) {
	snap, _, err := namedSnapshot(ctx, tmpl, tmplPath, name)
	if err != nil || snap != nil {
		return deref(snap), err
	}
	unlock, err := p.lockTemplate(ctx, tmpl.Reference())
	if err != nil {
		return types.ManagedObjectReference{}, fmt.Errorf("wait to take a snapshot of template %s: %w", tmplPath, err)
	}
	defer unlock()
	snap, st, err := namedSnapshot(ctx, tmpl, tmplPath, name)
	if err != nil || snap != nil {
		return deref(snap), err
	}
	if st.marked {
		have := "none"
		if len(st.names) > 0 {
			have = strings.Join(st.names, ", ")
		}
		return types.ManagedObjectReference{}, fmt.Errorf("linked clone of template %s: it has no snapshot called %q (it has %s), "+
			"and vCenter takes none of a VM marked as a template: name one of its snapshots (vmprovider.Spec.LinkedCloneSnapshot), "+
			"or mark it as a VM, take a snapshot called %q and mark it as a template again, or make full clones: %w",
			tmplPath, name, have, name, vmprovider.ErrInvalidSpec)
	}
	result, err := p.task(ctx, func(ctx context.Context) (*object.Task, error) {
		return tmpl.CreateSnapshot(ctx, name, linkedCloneDescription, false, false)
	})
	if err != nil {
		return types.ManagedObjectReference{}, fmt.Errorf("take snapshot %q of template %s for linked clones: %w", name, tmplPath, err)
	}
	ref, ok := result.(types.ManagedObjectReference)
	if !ok {
		return types.ManagedObjectReference{}, fmt.Errorf("take snapshot %q of template %s: task returned %T, not a snapshot reference",
			name, tmplPath, result)
	}
	return ref, nil
}

// snapshots is what namedSnapshot read of a template: whether it is marked
// as a template, and the names of its snapshots, in tree order.
type snapshots struct {
	marked bool
	names  []string
}

// namedSnapshot reads tmpl's snapshot called name (nil when it has none;
// the earliest when several have it), and what else it read.
func namedSnapshot(ctx context.Context, tmpl *object.VirtualMachine, tmplPath, name string) (*types.ManagedObjectReference, snapshots, error) {
	var m mo.VirtualMachine
	var st snapshots
	if err := tmpl.Properties(ctx, tmpl.Reference(), []string{"snapshot", "config.template"}, &m); err != nil {
		return nil, st, fmt.Errorf("read the snapshots of template %s: %w", tmplPath, err)
	}
	st.marked = m.Config != nil && m.Config.Template
	if m.Snapshot == nil {
		return nil, st, nil
	}
	var found *types.VirtualMachineSnapshotTree
	var walk func([]types.VirtualMachineSnapshotTree)
	walk = func(l []types.VirtualMachineSnapshotTree) {
		for i := range l {
			s := &l[i]
			st.names = append(st.names, s.Name)
			if s.Name == name && (found == nil || earlier(s, found)) {
				found = s
			}
			walk(s.ChildSnapshotList)
		}
	}
	walk(m.Snapshot.RootSnapshotList)
	if found == nil {
		return nil, st, nil
	}
	return &found.Snapshot, st, nil
}

// earlier reports whether snapshot a was taken before b, by its creation
// time, then its reference: of two snapshots that share a name (two
// processes that each took the provider's own at once), every create
// links to the same one, the first.
func earlier(a, b *types.VirtualMachineSnapshotTree) bool {
	if !a.CreateTime.Equal(b.CreateTime) {
		return a.CreateTime.Before(b.CreateTime)
	}
	return a.Snapshot.Value < b.Snapshot.Value
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
