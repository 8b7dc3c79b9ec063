package vsphere

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/vmprovider"
)

// Create implements vmprovider.Provider: it clones the template into the
// configured folder, pool and datastore (or the spec's Placement), on the
// host DRS recommends or, in a cluster without DRS, one it chooses (see
// the package documentation), with the
// spec's CPUs, memory, networks, cloud-init customization and the ownership
// mark, then powers the VM on if asked; vCenter applies the customization
// as the VM first boots. A network or placement path that does not resolve
// is an invalid spec, found before anything is cloned. When vCenter reports the
// name taken (a retried create after a lost response, or a concurrent one
// elsewhere), the VM of that name is returned if it carries the same mark,
// and refused with a *NotOwnedError otherwise; so the common path costs the
// clone and one property read, and a retry never clones twice. When cloning
// or powering on fails, the half-made VM is destroyed. The template is
// looked up by its path once and kept until vCenter says it is gone
// (destroyed and rebuilt under the same path, say): then the path is
// looked up again and the clone made from what it names now. With
// spec.LinkedClone it makes a linked clone from the template's snapshot
// named by spec.LinkedCloneSnapshot (else LinkedCloneSnapshot), taking it
// first when the template has none of the name (see "Linked clones" in the
// package documentation). The clone is given an instance UUID the
// provider chose, recorded under KeyIdentity (see "Identity").
//
// A create outlives its call. When ctx ends before the clone does, Create
// returns ctx's error while the provider goes on waiting for vCenter's
// clone (and power-on), holding its clone slot (Config.MaxClones), until
// it ends or Close is called. Meanwhile List and Get (and Cached's) report
// the VM with Creating set, whether or not vCenter shows it yet, a Create of the name by the same owner waits for the one
// in flight instead of cloning again (by another owner it is refused with
// a *NotOwnedError), a Delete cancels it (CancelTask; a clone vCenter no
// longer lets be cancelled is destroyed once made), and the other methods
// find no VM of the name (ErrNotFound). A provider started anew knows
// nothing of the clones an earlier one left running: their VMs show once
// made, carrying their owner's mark.
func (p *Provider) Create(ctx context.Context, spec vmprovider.Spec) (_ vmprovider.VM, err error) {
	defer func() { err = withPrivileges(err) }()
	if err := spec.Validate(); err != nil {
		return vmprovider.VM{}, err
	}
	if err := ctx.Err(); err != nil {
		return vmprovider.VM{}, err // no one would wait for it
	}
	if p.deleting(spec.Name) {
		return vmprovider.VM{}, beingDeleted(spec.Name)
	}
	op, joined := p.startCreate(ctx, spec)
	if joined && op.spec.Owner.UID != spec.Owner.UID {
		return vmprovider.VM{}, &vmprovider.NotOwnedError{Name: spec.Name, Want: spec.Owner.UID, Got: op.spec.Owner.UID}
	}
	return p.await(ctx, op)
}

// create makes the VM of spec for op: Create's work, run to its end
// whatever becomes of Create's call.
func (p *Provider) create(ctx context.Context, spec vmprovider.Spec, op *createOp) (vmprovider.VM, error) {
	tmplPath := spec.Template
	if tmplPath == "" {
		tmplPath = p.template
	}
	if tmplPath == "" {
		return vmprovider.VM{}, fmt.Errorf("VM %q names no template and the provider has no default: %w", spec.Name, vmprovider.ErrInvalidSpec)
	}
	tmpl, err := p.templateVM(ctx, tmplPath)
	if err != nil {
		return vmprovider.VM{}, fmt.Errorf("VM %q: %w", spec.Name, err)
	}
	defer p.lockName(spec.Name)()
	if p.deleting(spec.Name) {
		// Handed to a delete while this waited for the name: the VM of
		// the name is on its way out.
		return vmprovider.VM{}, beingDeleted(spec.Name)
	}

	pl, err := p.place(ctx, spec)
	if err != nil {
		return vmprovider.VM{}, err
	}
	result, where, cloneErr, err := p.cloneFrom(ctx, spec, op, pl, tmpl, tmplPath)
	if templateGone(cmp.Or(cloneErr, err), tmpl) {
		// The template was destroyed, or rebuilt under its name (Packer's
		// -force, an image pipeline): the reference cached is stale. The
		// name is looked up again, once, and the clone made from what it
		// names now.
		if cloneErr != nil {
			// A failed clone may have left a half-made VM under the name,
			// which the second clone would meet: it goes first.
			if rerr := p.removeHalfMade(ctx, spec); rerr != nil {
				return vmprovider.VM{}, errors.Join(fmt.Errorf("clone %q from %s: %w", spec.Name, tmplPath, cloneErr), rerr)
			}
		}
		p.forgetTemplate(tmplPath, tmpl)
		if tmpl, err = p.templateVM(ctx, tmplPath); err != nil {
			return vmprovider.VM{}, fmt.Errorf("VM %q: vCenter no longer knows the template it had at %s, and looking the path up again failed: %w", spec.Name, tmplPath, err)
		}
		result, where, cloneErr, err = p.cloneFrom(ctx, spec, op, pl, tmpl, tmplPath)
	}
	if err != nil {
		return vmprovider.VM{}, err
	}
	if fault.Is(cloneErr, &types.DuplicateName{}) {
		return p.existing(ctx, spec)
	}
	if cloneErr != nil {
		if where != "" {
			where = " (" + where + ")"
		}
		return vmprovider.VM{}, p.abandon(ctx, spec, fmt.Errorf("clone %q from %s%s: %w", spec.Name, tmplPath, where, cloneErr))
	}
	ref, ok := result.(types.ManagedObjectReference)
	if !ok {
		return vmprovider.VM{}, p.abandon(ctx, spec, fmt.Errorf("clone %q: task returned %T, not a VM reference", spec.Name, result))
	}
	vm := object.NewVirtualMachine(p.client, ref)
	if op.isCancelled() {
		// Cancelled too late for vCenter to roll the clone back.
		return vmprovider.VM{}, p.abandon(ctx, spec, fmt.Errorf("clone %q: %w", spec.Name, errCancelled))
	}
	if spec.PowerOn {
		if _, err := p.task(ctx, vm.PowerOn); err != nil {
			return vmprovider.VM{}, p.abandon(ctx, spec, fmt.Errorf("power on %q: %w", spec.Name, err))
		}
	}
	var m mo.VirtualMachine
	if err := vm.Properties(ctx, ref, vmProps, &m); err != nil {
		return vmprovider.VM{}, fmt.Errorf("read created VM %q: %w", spec.Name, err)
	}
	return p.read(&m), nil
}

// cloneFrom builds the clone of spec from tmpl, the template at tmplPath,
// into pl, and runs it. An error before the clone is err; the clone's own
// is cloneErr, with where saying on which host it was to run (it may have
// left a half-made VM).
func (p *Provider) cloneFrom(ctx context.Context, spec vmprovider.Spec, op *createOp, pl placement, tmpl *object.VirtualMachine, tmplPath string) (result types.AnyType, where string, cloneErr, err error) {
	moves, adds, err := p.networkChanges(ctx, tmpl, spec)
	if err != nil {
		return nil, "", nil, err
	}
	uuid := op.uuid
	clone := types.VirtualMachineCloneSpec{
		Location: types.VirtualMachineRelocateSpec{Pool: &pl.pool, Datastore: &pl.store, DeviceChange: moves},
		Config: &types.VirtualMachineConfigSpec{
			NumCPUs:      spec.CPUs,
			MemoryMB:     spec.MemoryMiB,
			InstanceUuid: uuid,
			ExtraConfig:  marks(spec, uuid),
			ManagedBy:    &types.ManagedByInfo{ExtensionKey: ManagedByExtension, Type: ManagedByType},
			DeviceChange: adds,
		},
	}
	if err := sendCloudInit(&clone, spec, p.cloudInit); err != nil {
		return nil, "", nil, fmt.Errorf("VM %q: cloud-init: %w", spec.Name, err)
	}
	inPlaceConfig(clone.Config, spec)
	if spec.LinkedClone {
		if err := p.linkClone(ctx, tmpl, tmplPath, spec, &clone); err != nil {
			return nil, "", nil, fmt.Errorf("VM %q: %w", spec.Name, err)
		}
	}
	where, err = p.chooseHost(ctx, tmpl, spec.Name, &clone)
	if err != nil {
		return nil, "", nil, fmt.Errorf("VM %q: %w", spec.Name, err)
	}
	result, cloneErr = p.runTask(ctx, p.clones, op, func(ctx context.Context) (*object.Task, error) {
		return tmpl.Clone(ctx, pl.folder, spec.Name, clone)
	})
	return result, where, cloneErr, nil
}

// templateGone reports whether err says vCenter knows no object tmpl:
// the template was destroyed since it was looked up.
func templateGone(err error, tmpl *object.VirtualMachine) bool {
	var nf *types.ManagedObjectNotFound
	_, ok := fault.As(err, &nf)
	ref := tmpl.Reference()
	return ok && nf.Obj.Type == ref.Type && nf.Obj.Value == ref.Value // whatever serverGuid either carries
}

// marks are the ExtraConfig keys a clone for spec writes: every mark,
// empty ones too, since a clone starts from its template's ExtraConfig
// and an empty value removes a key a template made from a replica
// carries; and the instance UUID the clone is given (KeyIdentity).
func marks(spec vmprovider.Spec, uuid string) []types.BaseOptionValue {
	return []types.BaseOptionValue{
		&types.OptionValue{Key: KeyOwnerUID, Value: spec.Owner.UID},
		&types.OptionValue{Key: KeyOwnerName, Value: spec.Owner.Name},
		&types.OptionValue{Key: KeyZone, Value: spec.Zone},
		&types.OptionValue{Key: KeyRevision, Value: spec.Revision},
		&types.OptionValue{Key: KeyBaseRevision, Value: spec.BaseRevision},
		&types.OptionValue{Key: KeyIdentity, Value: uuid},
	}
}

// existing returns the VM spec names if it carries spec's owner's mark, a
// *NotOwnedError if it carries another, or an error wrapping ErrNotFound.
func (p *Provider) existing(ctx context.Context, spec vmprovider.Spec) (vmprovider.VM, error) {
	_, m, err := p.owned(ctx, spec.Name, spec.Owner.UID)
	if err != nil {
		return vmprovider.VM{}, err
	}
	return p.read(&m), nil
}

// abandon destroys what a failed create may have left under spec's name and
// owner, and returns cause joined with any error doing so.
// When the provider was closed meanwhile, it destroys nothing: the clone
// may yet make its VM, which a List shows, with its owner's mark.
func (p *Provider) abandon(ctx context.Context, spec vmprovider.Spec, cause error) error {
	if p.life.Err() != nil {
		// Closed mid-create: the wait ended, not the clone, which may yet
		// make its VM; nothing is destroyed on the way out.
		return cause
	}
	if err := p.removeHalfMade(ctx, spec); err != nil {
		return errors.Join(cause, err)
	}
	return cause
}

// removeHalfMade destroys the VM a failed create may have left under
// spec's name and owner, if any, and returns the error doing so.
func (p *Provider) removeHalfMade(ctx context.Context, spec vmprovider.Spec) error {
	// A half-made VM has no work for its guest to finish: no grace.
	err := p.delete(context.WithoutCancel(ctx), spec.Name, spec.Owner.UID, -1)
	if err != nil && !errors.Is(err, vmprovider.ErrNotOwned) {
		return fmt.Errorf("remove the half-made VM: %w", err)
	}
	return nil
}

// SetPower implements vmprovider.Provider.
func (p *Provider) SetPower(ctx context.Context, name, owner string, state vmprovider.PowerState) (err error) {
	defer func() { err = withPrivileges(err) }()
	if state != vmprovider.PoweredOn && state != vmprovider.PoweredOff {
		return fmt.Errorf("power state %q: want PoweredOn or PoweredOff: %w", state, vmprovider.ErrInvalidSpec)
	}
	unlock, err := p.lockMade(name)
	if err != nil {
		return err
	}
	defer unlock()
	return p.setPower(ctx, name, owner, state)
}

// setPower is SetPower with name already locked.
func (p *Provider) setPower(ctx context.Context, name, owner string, state vmprovider.PowerState) error {
	vm, m, err := p.owned(ctx, name, owner)
	if err != nil {
		return err
	}
	switch {
	case state == vmprovider.PoweredOn && m.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOn:
		_, err = p.task(ctx, vm.PowerOn)
	case state == vmprovider.PoweredOff && m.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn:
		_, err = p.task(ctx, vm.PowerOff)
	}
	if fault.Is(err, &types.InvalidPowerState{}) {
		return nil // it reached the state meanwhile
	}
	return err
}

// Reset implements vmprovider.Resetter: a vCenter reset (ResetVM_Task) of
// a powered-on VM, after checking owner's mark; a VM that is off or
// suspended is powered on instead.
func (p *Provider) Reset(ctx context.Context, name, owner string) (err error) {
	defer func() { err = withPrivileges(err) }()
	unlock, err := p.lockMade(name)
	if err != nil {
		return err
	}
	defer unlock()
	vm, m, err := p.owned(ctx, name, owner)
	if err != nil {
		return err
	}
	if m.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOn {
		_, err = p.task(ctx, vm.PowerOn)
	} else {
		_, err = p.task(ctx, vm.Reset)
	}
	if err != nil {
		return fmt.Errorf("reset %q: %w", name, err)
	}
	return nil
}

// notFound reports whether err means the object is gone.
func notFound(err error) bool {
	var nf *find.NotFoundError
	return errors.Is(err, vmprovider.ErrNotFound) || errors.As(err, &nf) ||
		fault.Is(err, &types.ManagedObjectNotFound{})
}

// MarkRevision implements vmprovider.RevisionMarker: it reconfigures the
// VM's ExtraConfig under KeyRevision, after checking owner's mark.
func (p *Provider) MarkRevision(ctx context.Context, name, owner, revision string) (err error) {
	defer func() { err = withPrivileges(err) }()
	unlock, err := p.lockMade(name)
	if err != nil {
		return err
	}
	defer unlock()
	vm, _, err := p.owned(ctx, name, owner)
	if err != nil {
		return err
	}
	spec := types.VirtualMachineConfigSpec{ExtraConfig: []types.BaseOptionValue{
		&types.OptionValue{Key: KeyRevision, Value: revision},
	}}
	if _, err := p.task(ctx, func(ctx context.Context) (*object.Task, error) { return vm.Reconfigure(ctx, spec) }); err != nil {
		return fmt.Errorf("record revision %q on %q: %w", revision, name, err)
	}
	return nil
}
