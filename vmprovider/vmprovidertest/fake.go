package vmprovidertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/replicakit/replicakit/vmprovider"
)

// Fake is an in-memory vmprovider.Provider that keeps the interface's
// contract, for tests of code that uses a provider. The zero value is ready
// to use. It is safe for concurrent use.
//
// As a guest customized with cloud-init would, a VM created with CloudInit
// reports the metadata's hostname and addresses (CloudInit.Guest) while it
// is powered on. Its heartbeat stays gray: SetHeartbeat plays a guest that
// comes up (green) or hangs (red), and Add puts in a VM showing anything.
//
// A VM reports the size, hot-add settings and base revision of its Spec
// (zero sizes as zero: the Fake has no template). It is no
// vmprovider.Resizer.
//
// Reset (vmprovider.Resetter) reboots a VM as vCenter's reset does, and
// leaves its heartbeat as it was, as the simulator does: a test says with
// SetHeartbeat whether the reset brought the guest back. Resets lists the
// resets made, for tests that count them.
//
// Fail injects faults before an operation takes effect, Lose after (a
// lost answer): between them a test plays a platform that stops answering
// before, or right after, it makes a change.
type Fake struct {
	// Fail, when set, is called before every operation with the operation
	// ("create", "get", "list", "power", "delete", "mark", "reset") and the VM name (the
	// owner for "list"); a non-nil error fails the operation without
	// effect.
	Fail func(op, name string) error
	// FailZone, when set, is called before every create for a zone
	// (Spec.Zone); a non-nil error fails the create without effect, as a
	// failure domain that is down would.
	FailZone func(zone string) error
	// Lose, when set, is called after every create, power, delete, mark
	// and reset that succeeded (its change made), with the operation, named as
	// for Fail, and the VM name; a non-nil error is returned in place of
	// the answer: the change stands but the caller is told it failed, as
	// when the answer is lost on the way back. Lose may cut the fake off (make Fail fail
	// every later call) to play a platform that stops answering right
	// after a change, the moment made rather than raced.
	Lose func(op, name string) error
	// Now is the clock for creation and boot times; nil means time.Now.
	Now func() time.Time
	// Outlive, when set, is called before every create that Fail lets
	// through, with the VM name; true makes the create outlive its call,
	// as a vCenter clone of minutes does when its caller gives up: the VM
	// is listed at once with VM.Creating set (no power, no boot) and the
	// call fails with context.DeadlineExceeded, until Finish ends the
	// work. Meanwhile a Create of the name by its owner waits for it (the
	// Fake finishes it then), a Delete cancels it (the VM is gone), and
	// the other operations find no VM (vmprovider.ErrNotFound).
	Outlive func(name string) bool

	mu     sync.Mutex
	vms    map[string]vmprovider.VM
	guests map[string]vmprovider.CloudInit // by name: what the guest configures at boot
	serial int
	resets []string // the names of the VMs reset, in order
	// creating holds the VMs whose create outlives its call (Outlive),
	// with whether their spec asked them powered on.
	creating map[string]bool
}

// boot sets vm's power to state, with what its guest then reports.
func (f *Fake) boot(vm *vmprovider.VM, state vmprovider.PowerState) {
	vm.Power, vm.BootedAt, vm.Hostname, vm.IPAddresses = state, time.Time{}, "", nil
	if state == vmprovider.PoweredOn {
		vm.BootedAt = f.now()
		vm.Hostname, vm.IPAddresses, _ = f.guests[vm.Name].Guest()
	}
}

var (
	_ vmprovider.Provider       = (*Fake)(nil)
	_ vmprovider.RevisionMarker = (*Fake)(nil)
	_ vmprovider.Resetter       = (*Fake)(nil)
)

func (f *Fake) fail(op, name string) error {
	if f.Fail == nil {
		return nil
	}
	return f.Fail(op, name)
}

// lose returns what Lose makes of the answer to op on name: err when err
// is not nil (nothing took effect), else Lose's error.
func (f *Fake) lose(op, name string, err error) error {
	if err != nil || f.Lose == nil {
		return err
	}
	return f.Lose(op, name)
}

func (f *Fake) now() time.Time {
	if f.Now == nil {
		return time.Now()
	}
	return f.Now()
}

// Create implements vmprovider.Provider.
func (f *Fake) Create(_ context.Context, spec vmprovider.Spec) (vmprovider.VM, error) {
	if err := spec.Validate(); err != nil {
		return vmprovider.VM{}, err
	}
	if err := f.fail("create", spec.Name); err != nil {
		return vmprovider.VM{}, err
	}
	if f.FailZone != nil && spec.Zone != "" {
		if err := f.FailZone(spec.Zone); err != nil {
			return vmprovider.VM{}, err
		}
	}
	outlive := f.Outlive != nil && f.Outlive(spec.Name)
	vm, err := f.create(spec, outlive)
	if err == nil && outlive && vm.Creating {
		return vmprovider.VM{}, fmt.Errorf("create %s: the call ended while the platform goes on making the VM: %w", spec.Name, context.DeadlineExceeded)
	}
	if err := f.lose("create", spec.Name, err); err != nil {
		return vmprovider.VM{}, err
	}
	return vm, nil
}

// Finish ends the work of every create that outlived its call (Outlive):
// each VM is made as its spec asked, powered on or not.
func (f *Fake) Finish() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for name := range f.creating {
		f.finish(name)
	}
}

// finish ends the work of the create of name. The lock is held.
func (f *Fake) finish(name string) {
	vm, on := f.vms[name], f.creating[name]
	delete(f.creating, name)
	vm.Creating, vm.Power = false, vmprovider.PoweredOff
	if on {
		f.boot(&vm, vmprovider.PoweredOn)
	}
	f.vms[name] = vm
}

// create is Create once the spec is valid and no fault fails it; with
// outlive, a new VM is left Creating.
func (f *Fake) create(spec vmprovider.Spec, outlive bool) (vmprovider.VM, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if vm, ok := f.vms[spec.Name]; ok {
		if vm.Owner != spec.Owner.UID {
			return vmprovider.VM{}, &vmprovider.NotOwnedError{Name: spec.Name, Want: spec.Owner.UID, Got: vm.Owner}
		}
		if vm.Creating {
			f.finish(spec.Name) // the one in flight, waited for
		}
		return f.vms[spec.Name], nil
	}
	if f.vms == nil {
		f.vms = map[string]vmprovider.VM{}
	}
	f.serial++
	vm := vmprovider.VM{
		Name: spec.Name, InstanceUUID: fmt.Sprintf("fake-%08d", f.serial),
		Power: vmprovider.PoweredOff, Owner: spec.Owner.UID, CreatedAt: f.now(),
		Heartbeat: vmprovider.HeartbeatGray, Zone: spec.Zone, Revision: spec.Revision, BaseRevision: spec.BaseRevision,
		CPUs: spec.CPUs, MemoryMiB: spec.MemoryMiB, CPUHotAdd: spec.CPUHotAdd, MemoryHotAdd: spec.MemoryHotAdd,
	}
	if spec.CloudInit != nil {
		if f.guests == nil {
			f.guests = map[string]vmprovider.CloudInit{}
		}
		f.guests[spec.Name] = *spec.CloudInit
	}
	switch {
	case outlive:
		if f.creating == nil {
			f.creating = map[string]bool{}
		}
		f.creating[spec.Name] = spec.PowerOn
		vm.Creating, vm.Power = true, ""
	case spec.PowerOn:
		f.boot(&vm, vmprovider.PoweredOn)
	}
	f.vms[spec.Name] = vm
	return vm, nil
}

// Get implements vmprovider.Provider.
func (f *Fake) Get(_ context.Context, name string) (vmprovider.VM, error) {
	if err := f.fail("get", name); err != nil {
		return vmprovider.VM{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	vm, ok := f.vms[name]
	if !ok {
		return vmprovider.VM{}, fmt.Errorf("VM %q: %w", name, vmprovider.ErrNotFound)
	}
	return vm, nil
}

// List implements vmprovider.Provider. VMs are sorted by name.
func (f *Fake) List(_ context.Context, owner string) ([]vmprovider.VM, error) {
	if err := f.fail("list", owner); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []vmprovider.VM
	for _, vm := range f.vms {
		if vm.Owner == owner && owner != "" {
			out = append(out, vm)
		}
	}
	slices.SortFunc(out, func(a, b vmprovider.VM) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// owned returns the VM called name if owner's mark is on it; one still
// being made (Outlive) is not found yet.
func (f *Fake) owned(name, owner string) (vmprovider.VM, error) {
	vm, ok := f.vms[name]
	switch {
	case !ok, vm.Creating:
		return vm, fmt.Errorf("VM %q: %w", name, vmprovider.ErrNotFound)
	case vm.Owner != owner || owner == "":
		return vm, &vmprovider.NotOwnedError{Name: name, Want: owner, Got: vm.Owner}
	}
	return vm, nil
}

// SetPower implements vmprovider.Provider.
func (f *Fake) SetPower(_ context.Context, name, owner string, state vmprovider.PowerState) error {
	if state != vmprovider.PoweredOn && state != vmprovider.PoweredOff {
		return fmt.Errorf("power state %q: want PoweredOn or PoweredOff: %w", state, vmprovider.ErrInvalidSpec)
	}
	if err := f.fail("power", name); err != nil {
		return err
	}
	return f.lose("power", name, f.change(name, owner, func(vm *vmprovider.VM) {
		if vm.Power != state {
			f.boot(vm, state)
		}
	}))
}

// Delete implements vmprovider.Provider.
func (f *Fake) Delete(_ context.Context, name, owner string) error {
	if err := f.fail("delete", name); err != nil {
		return err
	}
	return f.lose("delete", name, f.delete(name, owner))
}

// delete is Delete once no fault fails it.
func (f *Fake) delete(name, owner string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	vm, ok := f.vms[name]
	if !ok {
		return nil
	}
	if vm.Owner != owner || owner == "" {
		return &vmprovider.NotOwnedError{Name: name, Want: owner, Got: vm.Owner}
	}
	delete(f.vms, name)
	delete(f.guests, name)
	delete(f.creating, name) // cancelled
	return nil
}

// MarkRevision implements vmprovider.RevisionMarker.
func (f *Fake) MarkRevision(_ context.Context, name, owner, revision string) error {
	if err := f.fail("mark", name); err != nil {
		return err
	}
	return f.lose("mark", name, f.change(name, owner, func(vm *vmprovider.VM) { vm.Revision = revision }))
}

// Reset implements vmprovider.Resetter: a VM that is powered on boots
// again (a new BootedAt, and what its guest configures at boot), one that
// is off or suspended is powered on; its heartbeat is left as it was. The
// reset is recorded (Resets) once it takes effect, answer lost or not.
func (f *Fake) Reset(_ context.Context, name, owner string) error {
	if err := f.fail("reset", name); err != nil {
		return err
	}
	return f.lose("reset", name, f.change(name, owner, func(vm *vmprovider.VM) {
		f.boot(vm, vmprovider.PoweredOn)
		f.resets = append(f.resets, name)
	}))
}

// Resets returns the names of the VMs the fake reset, in the order it
// reset them, once per reset.
func (f *Fake) Resets() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.resets)
}

// SetHeartbeat makes the VM called name show h as its guest's heartbeat,
// whoever owns it: HeartbeatRed plays a guest that hung, HeartbeatGreen
// one that is up and answering. A VM that does not exist is an error
// wrapping vmprovider.ErrNotFound. Fail and Lose are not consulted: this
// is the guest, not a call to the platform.
func (f *Fake) SetHeartbeat(name string, h vmprovider.Heartbeat) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	vm, ok := f.vms[name]
	if !ok {
		return fmt.Errorf("VM %q: %w", name, vmprovider.ErrNotFound)
	}
	vm.Heartbeat = h
	f.vms[name] = vm
	return nil
}

// change applies fn to the VM called name, when owner's mark is on it.
func (f *Fake) change(name, owner string, fn func(*vmprovider.VM)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	vm, err := f.owned(name, owner)
	if err != nil {
		return err
	}
	fn(&vm)
	f.vms[name] = vm
	return nil
}

// Add puts a VM into the fake as it is, mark or no mark, as if someone else
// had made it.
func (f *Fake) Add(vm vmprovider.VM) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.vms == nil {
		f.vms = map[string]vmprovider.VM{}
	}
	f.vms[vm.Name] = vm
}
