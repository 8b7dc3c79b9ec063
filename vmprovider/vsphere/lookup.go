package vsphere

import (
	"context"
	"fmt"
	"strings"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/vmprovider"
)

// lookup finds the VM called name in the provider's folder and reads its
// properties; a missing VM gives an error wrapping ErrNotFound. Of several
// VMs of the name in the folders below (names are unique per folder only:
// a copy filed elsewhere), a replica is preferred to a copy (mark).
func (p *Provider) lookup(ctx context.Context, name string) (*object.VirtualMachine, mo.VirtualMachine, error) {
	return p.lookupFor(ctx, name, "")
}

// lookupFor is lookup preferring, of several VMs of the name, the one
// carrying owner's mark (when owner is not empty), then any replica.
func (p *Provider) lookupFor(ctx context.Context, name, owner string) (*object.VirtualMachine, mo.VirtualMachine, error) {
	var m mo.VirtualMachine
	ref, err := object.NewSearchIndex(p.client).FindChild(ctx, p.folder, name)
	if err != nil {
		return nil, m, fmt.Errorf("find VM %q: %w", name, err)
	}
	if ref != nil {
		vm, m, err := p.readVM(ctx, name, ref.Reference())
		if err != nil || unreadable(&m) != "" || mark(m) != "" && (owner == "" || mark(m) == owner) {
			return vm, m, err
		}
		// A VM filed in the folder itself that is not the one sought: a
		// copy, or another owner's. One below may be.
	}
	refs, err := p.findBelow(ctx, name)
	if err != nil {
		return nil, m, err
	}
	if len(refs) == 0 {
		return nil, m, fmt.Errorf("VM %q in folder %s: %w", name, p.folder.InventoryPath, vmprovider.ErrNotFound)
	}
	var first *object.VirtualMachine
	var firstM mo.VirtualMachine
	for _, r := range refs {
		vm, m, err := p.readVM(ctx, name, r)
		if notFound(err) {
			continue
		}
		if err != nil || len(refs) == 1 {
			return vm, m, err
		}
		if got := mark(m); got != "" && (owner == "" || got == owner) {
			return vm, m, nil
		}
		if first == nil {
			first, firstM = vm, m
		}
	}
	if first == nil {
		return nil, m, fmt.Errorf("VM %q: %w", name, vmprovider.ErrNotFound)
	}
	return first, firstM, nil
}

// readVM reads the properties of the VM ref, called name.
func (p *Provider) readVM(ctx context.Context, name string, ref types.ManagedObjectReference) (*object.VirtualMachine, mo.VirtualMachine, error) {
	var m mo.VirtualMachine
	vm := object.NewVirtualMachine(p.client, ref)
	if err := vm.Properties(ctx, ref, vmProps, &m); err != nil {
		if fault.Is(err, &types.ManagedObjectNotFound{}) {
			p.forget(ref)
			return nil, m, fmt.Errorf("VM %q: %w", name, vmprovider.ErrNotFound)
		}
		return nil, m, fmt.Errorf("read VM %q: %w", name, err)
	}
	return vm, m, nil
}

// findBelow finds the VMs called name anywhere below the provider's
// folder, with one container view and one retrieval of names.
func (p *Provider) findBelow(ctx context.Context, name string) ([]types.ManagedObjectReference, error) {
	v, err := view.NewManager(p.client).CreateContainerView(ctx, p.folder.Reference(), []string{"VirtualMachine"}, true)
	if err != nil {
		return nil, fmt.Errorf("find VM %q: %w", name, err)
	}
	defer func() { _ = v.Destroy(context.WithoutCancel(ctx)) }()
	var all []mo.VirtualMachine
	if err := v.Retrieve(ctx, []string{"VirtualMachine"}, []string{"name"}, &all); err != nil {
		return nil, fmt.Errorf("find VM %q: %w", name, err)
	}
	var out []types.ManagedObjectReference
	for _, m := range all {
		if m.Name == name {
			out = append(out, m.Reference())
		}
	}
	return out, nil
}

// owned is lookup that also checks owner's mark. A VM vCenter cannot read
// now is refused with an error wrapping vmprovider.ErrUnreadable, whoever
// it may belong to: nothing is done to a VM whose state is unknown.
func (p *Provider) owned(ctx context.Context, name, owner string) (*object.VirtualMachine, mo.VirtualMachine, error) {
	vm, m, err := p.lookupFor(ctx, name, owner)
	if err != nil {
		return nil, m, err
	}
	if why := unreadable(&m); why != "" {
		p.read(&m)
		return nil, m, fmt.Errorf("VM %q: vCenter cannot read it (%s), so it was left untouched: %w", name, why, vmprovider.ErrUnreadable)
	}
	if got := mark(m); got != owner || owner == "" {
		return nil, m, &vmprovider.NotOwnedError{Name: name, Want: owner, Got: got}
	}
	return vm, m, nil
}

// mark returns the owner UID in a VM's ExtraConfig, or "" when it has
// none or is a copy of a VM that had one (KeyIdentity).
func mark(m mo.VirtualMachine) string {
	if id := extraConfig(m, KeyIdentity); id != "" && !strings.EqualFold(id, m.Config.InstanceUuid) {
		return ""
	}
	return extraConfig(m, KeyOwnerUID)
}

// extraConfig returns the string value of key in a VM's ExtraConfig, or "".
func extraConfig(m mo.VirtualMachine, key string) string {
	if m.Config == nil {
		return ""
	}
	for _, o := range m.Config.ExtraConfig {
		if kv := o.GetOptionValue(); kv.Key == key {
			s, _ := kv.Value.(string)
			return s
		}
	}
	return ""
}
