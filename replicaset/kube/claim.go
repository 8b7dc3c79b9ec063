package kube

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// claim is what an owner should do about one candidate child.
type claim int

// The claims claimFor decides.
const (
	// claimIgnore: the child is not the owner's to touch (another controller
	// owns it, or it neither matches nor belongs to the owner).
	claimIgnore claim = iota
	// claimKeep: the child belongs to the owner and matches its selector.
	claimKeep
	// claimAdopt: an orphan that matches the selector. Adopt it only after a
	// read from the API server (not the cache) confirms the owner exists,
	// has this UID and is not being deleted.
	claimAdopt
	// claimRelease: the child belongs to the owner but no longer matches its
	// selector; remove the owner reference.
	claimRelease
)

// String names the claim.
func (c claim) String() string {
	if names := [...]string{"Ignore", "Keep", "Adopt", "Release"}; c >= 0 && int(c) < len(names) {
		return names[c]
	}
	return fmt.Sprintf("claim(%d)", int(c))
}

// claimFor decides what the owner with UID owner should do about child,
// given whether the child's labels match the owner's selector. Children
// being deleted are never adopted or released; a child controlled by
// anyone else is always ignored.
func claimFor(owner types.UID, matches bool, child metav1.Object) claim {
	ref := metav1.GetControllerOfNoCopy(child)
	deleting := child.GetDeletionTimestamp() != nil
	switch {
	case ref != nil && ref.UID != owner:
		return claimIgnore
	case ref != nil && matches:
		return claimKeep
	case ref != nil && deleting:
		return claimKeep // being deleted: leave the reference for the garbage collector
	case ref != nil:
		return claimRelease
	case matches && !deleting:
		return claimAdopt
	}
	return claimIgnore
}
