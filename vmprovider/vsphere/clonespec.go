package vsphere

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/vmprovider"
)

// placement is where one VM goes, resolved.
type placement struct {
	folder *object.Folder
	pool   types.ManagedObjectReference
	store  types.ManagedObjectReference
}

// place resolves spec's placement over the provider's defaults. A path
// that does not resolve, or a folder outside the provider's, is an invalid
// spec naming the field.
func (p *Provider) place(ctx context.Context, spec vmprovider.Spec) (placement, error) {
	pl := placement{folder: p.folder, pool: p.pool.Reference(), store: p.store.Reference()}
	o := spec.Placement
	invalid := func(field, path string, err error) error {
		if missing(err) {
			err = fmt.Errorf("%w: %w", err, vmprovider.ErrPlacement)
		}
		return fmt.Errorf("VM %q: placement.%s %q: %w", spec.Name, field, path, invalidIfMissing(err))
	}
	if o.ResourcePool != "" {
		pool, err := p.resourcePool(ctx, o.ResourcePool)
		if err != nil {
			return pl, invalid("resourcePool", o.ResourcePool, err)
		}
		pl.pool = pool.Reference()
	}
	if o.Datastore != "" {
		ds, err := p.finder.Datastore(ctx, o.Datastore)
		if err != nil {
			return pl, invalid("datastore", o.Datastore, err)
		}
		pl.store = ds.Reference()
	}
	if o.Folder != "" {
		f, err := p.finder.Folder(ctx, o.Folder)
		if err != nil {
			return pl, invalid("folder", o.Folder, err)
		}
		if f.Reference() != p.folder.Reference() && !strings.HasPrefix(f.InventoryPath, p.folder.InventoryPath+"/") {
			return pl, fmt.Errorf("VM %q: placement.folder %q: not inside the provider's folder %s, where it looks for its VMs: %w",
				spec.Name, o.Folder, p.folder.InventoryPath, vmprovider.ErrInvalidSpec)
		}
		pl.folder = f
	}
	return pl, nil
}

// invalidIfMissing wraps a lookup's error with ErrInvalidSpec when the path
// does not resolve (nothing or several found); any other error (a timeout,
// a lost session) is returned as it is, to be retried.
func invalidIfMissing(err error) error {
	if missing(err) {
		return fmt.Errorf("%w: %w", err, vmprovider.ErrInvalidSpec)
	}
	return err
}

// missing reports whether a lookup found nothing, or several, at its path.
func missing(err error) bool {
	var nf *find.NotFoundError
	var mf *find.MultipleFoundError
	return errors.As(err, &nf) || errors.As(err, &mf)
}

// networkChanges moves the template's network adapters to spec's networks
// in order, and adds a VMXNET3 adapter for each network beyond them. The
// moves go in the relocate spec, the additions in the config spec, as
// vCenter takes them on a clone.
func (p *Provider) networkChanges(ctx context.Context, tmpl *object.VirtualMachine, spec vmprovider.Spec) (moves, adds []types.BaseVirtualDeviceConfigSpec, err error) {
	if len(spec.Networks) == 0 {
		return nil, nil, nil
	}
	devices, err := tmpl.Device(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("read the devices of template %s: %w", tmpl.InventoryPath, err)
	}
	cards := devices.SelectByType((*types.VirtualEthernetCard)(nil))
	for i, name := range spec.Networks {
		net, err := p.finder.Network(ctx, name)
		if err != nil {
			return nil, nil, fmt.Errorf("VM %q: networks[%d] %q: %w", spec.Name, i, name, invalidIfMissing(err))
		}
		backing, err := net.EthernetCardBackingInfo(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("VM %q: networks[%d] %q: %w", spec.Name, i, name, err)
		}
		if i < len(cards) {
			card := cards[i]
			card.(types.BaseVirtualEthernetCard).GetVirtualEthernetCard().Backing = backing
			moves = append(moves, &types.VirtualDeviceConfigSpec{Operation: types.VirtualDeviceConfigSpecOperationEdit, Device: card})
			continue
		}
		card, err := object.EthernetCardTypes().CreateEthernetCard("vmxnet3", backing)
		if err != nil {
			return nil, nil, fmt.Errorf("VM %q: networks[%d] %q: %w", spec.Name, i, name, err)
		}
		card.GetVirtualDevice().Key = -int32(100 + i) // a new device's key is negative and unique in the spec
		adds = append(adds, &types.VirtualDeviceConfigSpec{Operation: types.VirtualDeviceConfigSpecOperationAdd, Device: card})
	}
	return moves, adds, nil
}
