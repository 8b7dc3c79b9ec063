package kube

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Claim is what an owner should do about one candidate child.
type Claim int

// The claims ClaimFor decides.
const (
	// Ignore: the child is not the owner's to touch (another controller
	// owns it, or it neither matches nor belongs to the owner).
	Ignore Claim = iota
	// Keep: the child belongs to the owner and matches its selector.
	Keep
	// Adopt: an orphan that matches the selector. Adopt it only after a
	// read from the API server (not the cache) confirms the owner exists,
	// has this UID and is not being deleted.
	Adopt
	// Release: the child belongs to the owner but no longer matches its
	// selector; remove the owner reference.
	Release
)

// String names the claim.
func (c Claim) String() string {
	if names := [...]string{"Ignore", "Keep", "Adopt", "Release"}; c >= 0 && int(c) < len(names) {
		return names[c]
	}
	return fmt.Sprintf("Claim(%d)", int(c))
}

// ClaimFor decides what the owner with UID owner should do about child,
// given whether the child's labels match the owner's selector. Children
// being deleted are never adopted or released; a child controlled by
// anyone else is always ignored.
func ClaimFor(owner types.UID, matches bool, child metav1.Object) Claim {
	ref := metav1.GetControllerOfNoCopy(child)
	deleting := child.GetDeletionTimestamp() != nil
	switch {
	case ref != nil && ref.UID != owner:
		return Ignore
	case ref != nil && matches:
		return Keep
	case ref != nil && deleting:
		return Keep // being deleted: leave the reference for the garbage collector
	case ref != nil:
		return Release
	case matches && !deleting:
		return Adopt
	}
	return Ignore
}
