package vmprovider

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// PowerState is a VM's power state, named as vSphere names it.
type PowerState string

// The power states a VM can be in.
const (
	PoweredOn  PowerState = "PoweredOn"
	PoweredOff PowerState = "PoweredOff"
	Suspended  PowerState = "Suspended"
)

// Owner identifies who a VM belongs to. A provider writes it on every VM it
// creates (the ownership mark) and never modifies or destroys a VM that does
// not carry the caller's mark.
type Owner struct {
	// UID is the owner's stable, unique identity, such as a Kubernetes UID.
	// It is required.
	UID string
	// Name is a human-readable name for the owner ("namespace/name"); it is
	// recorded beside the UID for people and never used to decide ownership.
	Name string
}

// Spec describes a VM to create.
type Spec struct {
	// Name is the VM's name, unique in the provider's folder. Required.
	Name string
	// Owner is written on the VM as its ownership mark. Owner.UID is
	// required.
	Owner Owner
	// Template is the image to clone; empty means the provider's default.
	Template string
	// CPUs is the number of virtual CPUs; zero keeps the template's.
	CPUs int32
	// MemoryMiB is the memory size in MiB; zero keeps the template's.
	MemoryMiB int64
	// PowerOn asks for the VM to be powered on once created.
	PowerOn bool
}

// Validate reports what makes s unusable; the error wraps ErrInvalidSpec.
func (s Spec) Validate() error {
	var errs []error
	if s.Name == "" {
		errs = append(errs, fmt.Errorf("VM name is empty: %w", ErrInvalidSpec))
	}
	if s.Owner.UID == "" {
		errs = append(errs, fmt.Errorf("VM %q has no owner UID: %w", s.Name, ErrInvalidSpec))
	}
	if s.CPUs < 0 {
		errs = append(errs, fmt.Errorf("VM %q: CPUs %d is negative: %w", s.Name, s.CPUs, ErrInvalidSpec))
	}
	if s.MemoryMiB < 0 {
		errs = append(errs, fmt.Errorf("VM %q: memory %d MiB is negative: %w", s.Name, s.MemoryMiB, ErrInvalidSpec))
	}
	return errors.Join(errs...)
}

// VM is what a provider reports about one VM.
type VM struct {
	// Name is the VM's name.
	Name string
	// InstanceUUID is the platform's unique identifier for the VM.
	InstanceUUID string
	// Power is the current power state.
	Power PowerState
	// Owner is the owner UID of the VM's ownership mark; empty when the VM
	// carries no mark (it is not ours to touch).
	Owner string
	// CreatedAt is when the VM was created; zero when unknown.
	CreatedAt time.Time
	// BootedAt is when the VM last powered on; zero when it is off or
	// unknown.
	BootedAt time.Time
}

// Provider is what a replica set needs from a VM platform. Every method is
// safe for concurrent use, and Create and Delete are idempotent.
//
// Methods that act on a VM take the caller's owner UID and refuse, with an
// error wrapping ErrNotOwned, to act on a VM without that mark.
type Provider interface {
	// Create creates the VM spec describes and returns it. If a VM of that
	// name already exists with spec.Owner's mark, Create returns it instead
	// (a retried create after a lost response); if it exists without that
	// mark, Create returns a *NotOwnedError. An invalid spec gives an error
	// wrapping ErrInvalidSpec. A failed create leaves no VM behind.
	Create(ctx context.Context, spec Spec) (VM, error)
	// Get returns the VM called name, whoever owns it, or an error
	// wrapping ErrNotFound.
	Get(ctx context.Context, name string) (VM, error)
	// List returns every VM carrying owner's mark, in one round trip.
	List(ctx context.Context, owner string) ([]VM, error)
	// SetPower powers the VM called name on or off (PoweredOn or
	// PoweredOff); a VM already in that state is left alone.
	SetPower(ctx context.Context, name, owner string, state PowerState) error
	// Delete powers off and destroys the VM called name. A VM that is
	// already gone is success.
	Delete(ctx context.Context, name, owner string) error
}

// Errors providers return; match them with errors.Is.
var (
	// ErrNotFound means no VM has the given name.
	ErrNotFound = errors.New("vmprovider: VM not found")
	// ErrNotOwned means a VM exists but lacks the caller's ownership mark.
	// It is wrapped by *NotOwnedError.
	ErrNotOwned = errors.New("vmprovider: VM not owned by the caller")
	// ErrInvalidSpec means a Spec or a requested state cannot be used.
	ErrInvalidSpec = errors.New("vmprovider: invalid spec")
)

// NotOwnedError says which VM was refused and whose mark it carries.
type NotOwnedError struct {
	// Name is the VM's name.
	Name string
	// Want is the caller's owner UID.
	Want string
	// Got is the owner UID on the VM's mark; empty when it has none.
	Got string
}

// Error explains why the VM was not touched.
func (e *NotOwnedError) Error() string {
	if e.Got == "" {
		return fmt.Sprintf("VM %q exists without an ownership mark, so it was left untouched (owner %q wanted it)", e.Name, e.Want)
	}
	return fmt.Sprintf("VM %q belongs to owner %q, not %q, so it was left untouched", e.Name, e.Got, e.Want)
}

// Unwrap returns ErrNotOwned.
func (e *NotOwnedError) Unwrap() error { return ErrNotOwned }
