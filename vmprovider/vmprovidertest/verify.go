package vmprovidertest

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/replicakit/replicakit/vmprovider"
)

// Verify checks p against the vmprovider.Provider contract and returns an
// error joining every violation it finds, or nil. It creates VMs from
// template (its Template, CPUs and MemoryMiB; its Name as the prefix of the
// VMs' names, which must not be in use) under two test owners, and deletes
// them again, so run it against a platform where that is harmless. It
// checks that:
//
//   - Create returns the VM with its name, an instance UUID, the owner's
//     mark, the asked power state and the zone and revision it was
//     created with; a second Create returns the same VM;
//   - Create, SetPower and Delete refuse another owner's VM with an error
//     wrapping ErrNotOwned, and leave it as it was;
//   - Get finds any VM, and reports a missing one with ErrNotFound;
//   - List returns exactly the owner's VMs;
//   - SetPower turns a VM off and on, and is idempotent;
//   - Delete destroys the VM, and deleting it again succeeds;
//   - invalid specs are refused with ErrInvalidSpec;
//   - when p is a vmprovider.RevisionMarker, MarkRevision records a
//     revision Get then reports, and refuses another owner's VM;
//   - when p is a vmprovider.Resetter, Reset leaves a VM that was on
//     powered on, powers on one that was off, refuses another owner's VM
//     with an error wrapping ErrNotOwned, and reports a missing one with
//     ErrNotFound.
func Verify(ctx context.Context, p vmprovider.Provider, template vmprovider.Spec) error {
	v := &verifier{ctx: ctx, p: p}
	prefix := template.Name
	if prefix == "" {
		prefix = "vmprovidertest"
	}
	ownerA := vmprovider.Owner{UID: prefix + "-owner-a", Name: "vmprovidertest/a"}
	ownerB := vmprovider.Owner{UID: prefix + "-owner-b", Name: "vmprovidertest/b"}
	specA := template
	specA.Name, specA.Owner, specA.PowerOn, specA.Zone, specA.Revision = prefix+"-a", ownerA, true, "vmprovidertest-zone", "vmprovidertest-rev"
	specB := template
	specB.Name, specB.Owner, specB.PowerOn = prefix+"-b", ownerB, false
	defer func() {
		// Best effort: leave nothing behind, whatever failed above.
		_ = p.Delete(context.WithoutCancel(ctx), specA.Name, ownerA.UID)
		_ = p.Delete(context.WithoutCancel(ctx), specB.Name, ownerB.UID)
	}()

	a, err := p.Create(ctx, specA)
	if err != nil {
		return fmt.Errorf("Create(%s): %w", specA.Name, err)
	}
	v.check(a.Name == specA.Name && a.InstanceUUID != "" && a.Owner == ownerA.UID && a.Power == vmprovider.PoweredOn &&
		a.Zone == specA.Zone && a.Revision == specA.Revision,
		"Create(%s) = %+v: want its name, an instance UUID, owner %q, PoweredOn, zone %q and revision %q",
		specA.Name, a, ownerA.UID, specA.Zone, specA.Revision)
	again, err := p.Create(ctx, specA)
	v.check(err == nil && again.InstanceUUID == a.InstanceUUID,
		"Create(%s) again = %+v, %v: want the same VM (idempotent create)", specA.Name, again, err)
	b, err := p.Create(ctx, specB)
	if err != nil {
		return errors.Join(append(v.errs, fmt.Errorf("Create(%s): %w", specB.Name, err))...)
	}
	v.check(b.Power == vmprovider.PoweredOff, "Create(%s) without PowerOn = %+v: want PoweredOff", specB.Name, b)

	// Another owner's VM is never touched.
	stolen := specB
	stolen.Owner = ownerA
	_, err = p.Create(ctx, stolen)
	v.notOwned(err, "Create(%s) by another owner", specB.Name)
	v.notOwned(p.SetPower(ctx, specB.Name, ownerA.UID, vmprovider.PoweredOn), "SetPower(%s) by another owner", specB.Name)
	v.notOwned(p.Delete(ctx, specB.Name, ownerA.UID), "Delete(%s) by another owner", specB.Name)
	if got, err := p.Get(ctx, specB.Name); err != nil || got.Power != vmprovider.PoweredOff || got.Owner != ownerB.UID {
		v.fail("after refused operations, Get(%s) = %+v, %v: want it unchanged", specB.Name, got, err)
	}

	// Get and List.
	if got, err := p.Get(ctx, specA.Name); err != nil || got.InstanceUUID != a.InstanceUUID || got.Zone != specA.Zone || got.Revision != specA.Revision {
		v.fail("Get(%s) = %+v, %v: want the created VM, in zone %q, on revision %q", specA.Name, got, err, specA.Zone, specA.Revision)
	}
	if m, ok := p.(vmprovider.RevisionMarker); ok {
		v.check(m.MarkRevision(ctx, specA.Name, ownerA.UID, "vmprovidertest-rev-2") == nil, "MarkRevision(%s) failed", specA.Name)
		if got, err := p.Get(ctx, specA.Name); err != nil || got.Revision != "vmprovidertest-rev-2" {
			v.fail("after MarkRevision(%s), Get = %+v, %v: want revision vmprovidertest-rev-2", specA.Name, got, err)
		}
		v.notOwned(m.MarkRevision(ctx, specB.Name, ownerA.UID, "x"), "MarkRevision(%s) by another owner", specB.Name)
	}
	_, err = p.Get(ctx, prefix+"-missing")
	v.check(errors.Is(err, vmprovider.ErrNotFound), "Get(missing) error %v: want ErrNotFound", err)
	v.list(ownerA.UID, specA.Zone, specA.Name)
	v.list(ownerB.UID, specB.Zone, specB.Name)

	// Power.
	for _, s := range []vmprovider.PowerState{vmprovider.PoweredOff, vmprovider.PoweredOff, vmprovider.PoweredOn} {
		if err := p.SetPower(ctx, specA.Name, ownerA.UID, s); err != nil {
			v.fail("SetPower(%s, %s): %v", specA.Name, s, err)
			continue
		}
		if got, err := p.Get(ctx, specA.Name); err != nil || got.Power != s {
			v.fail("after SetPower(%s, %s), Get = %+v, %v", specA.Name, s, got, err)
		}
	}
	err = p.SetPower(ctx, specA.Name, ownerA.UID, vmprovider.Suspended)
	v.check(errors.Is(err, vmprovider.ErrInvalidSpec), "SetPower(Suspended) error %v: want ErrInvalidSpec", err)
	if r, ok := p.(vmprovider.Resetter); ok {
		v.reset(r, specA.Name, specB.Name, prefix+"-missing", ownerA.UID, ownerB.UID)
	}

	// Invalid specs.
	for _, bad := range []vmprovider.Spec{{Owner: ownerA}, {Name: prefix + "-c"}, {Name: prefix + "-c", Owner: ownerA, CPUs: -1}} {
		_, err := p.Create(ctx, bad)
		v.check(errors.Is(err, vmprovider.ErrInvalidSpec), "Create(%+v) error %v: want ErrInvalidSpec", bad, err)
	}
	v.list(ownerA.UID, specA.Zone, specA.Name) // the invalid creates made nothing

	// Delete, twice.
	for i := range 2 {
		v.check(p.Delete(ctx, specA.Name, ownerA.UID) == nil, "Delete(%s) #%d failed", specA.Name, i+1)
	}
	_, err = p.Get(ctx, specA.Name)
	v.check(errors.Is(err, vmprovider.ErrNotFound), "after Delete, Get(%s) error %v: want ErrNotFound", specA.Name, err)
	v.list(ownerA.UID, specA.Zone)
	v.check(p.Delete(ctx, specB.Name, ownerB.UID) == nil, "Delete(%s) by its owner failed", specB.Name)
	return errors.Join(v.errs...)
}

type verifier struct {
	ctx  context.Context
	p    vmprovider.Provider
	errs []error
}

func (v *verifier) fail(format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf(format, args...))
}

func (v *verifier) check(ok bool, format string, args ...any) {
	if !ok {
		v.fail(format, args...)
	}
}

func (v *verifier) notOwned(err error, format string, args ...any) {
	var e *vmprovider.NotOwnedError
	if !errors.Is(err, vmprovider.ErrNotOwned) || !errors.As(err, &e) {
		v.fail(format+": error %v, want a *NotOwnedError", append(args, err)...)
	}
}

// reset checks r's Reset: of on (owned by owner, powered on) and of off
// (owned by otherOwner, powered off), and of missing, which does not
// exist. It leaves both VMs powered on.
func (v *verifier) reset(r vmprovider.Resetter, on, off, missing, owner, otherOwner string) {
	v.notOwned(r.Reset(v.ctx, off, owner), "Reset(%s) by another owner", off)
	if got, err := v.p.Get(v.ctx, off); err != nil || got.Power != vmprovider.PoweredOff {
		v.fail("after a refused Reset, Get(%s) = %+v, %v: want it unchanged, PoweredOff", off, got, err)
	}
	for _, c := range []struct{ name, owner string }{{on, owner}, {off, otherOwner}} {
		if err := r.Reset(v.ctx, c.name, c.owner); err != nil {
			v.fail("Reset(%s): %v", c.name, err)
			continue
		}
		if got, err := v.p.Get(v.ctx, c.name); err != nil || got.Power != vmprovider.PoweredOn {
			v.fail("after Reset(%s), Get = %+v, %v: want PoweredOn", c.name, got, err)
		}
	}
	err := r.Reset(v.ctx, missing, owner)
	v.check(errors.Is(err, vmprovider.ErrNotFound), "Reset(missing) error %v: want ErrNotFound", err)
}

// list checks that owner's VMs are exactly want.
func (v *verifier) list(owner string, zone string, want ...string) {
	vms, err := v.p.List(v.ctx, owner)
	if err != nil {
		v.fail("List(%s): %v", owner, err)
		return
	}
	var got []string
	for _, vm := range vms {
		got = append(got, vm.Name)
		v.check(vm.Owner == owner, "List(%s) returned %s owned by %q", owner, vm.Name, vm.Owner)
		v.check(vm.Zone == zone, "List(%s) returned %s in zone %q, want %q", owner, vm.Name, vm.Zone, zone)
	}
	slices.Sort(got)
	v.check(slices.Equal(got, want), "List(%s) = %v, want %v", owner, got, want)
}
