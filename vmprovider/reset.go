package vmprovider

import "context"

// Resetter is implemented by a provider that can reset a VM: a hard
// restart of a powered-on VM, as vCenter's ResetVM_Task does, which brings
// a hung guest back in seconds where a replacement takes a clone and a
// boot. Self-healing uses it as its first remediation
// (replicaset.Remediation.Restart).
type Resetter interface {
	// Reset resets the VM called name, which must carry owner's mark
	// (else an error wrapping ErrNotOwned). A VM that is gone is an error
	// wrapping ErrNotFound; one that is powered off is powered on.
	Reset(ctx context.Context, name, owner string) error
}
