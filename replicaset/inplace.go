package replicaset

import (
	"cmp"
	"fmt"
	"slices"
)

// UpdateMethod is how a rolling update moves a replica on an older
// revision onto the wanted one (Strategy.Method): by replacing it, or by
// changing it where it runs. The package documentation's In-place updates
// section states the rules.
type UpdateMethod int

const (
	// UpdateReplace replaces every replica on an older revision with a new
	// one, whatever changed. It is the zero value: a set plans exactly as
	// before in-place updates existed.
	UpdateReplace UpdateMethod = iota
	// UpdateInPlaceIfPossible changes a replica where it runs when it can
	// (Replica.InPlace), and replaces it otherwise: when its change cannot
	// be made in place, and when the change needs a power cycle that
	// Strategy.MaxUnavailable does not allow (it resolves to 0, so only a
	// surge replacement keeps every replica available).
	UpdateInPlaceIfPossible
	// UpdateInPlaceOnly changes replicas only where they run, and never
	// replaces one for its revision (fail-closed, as CloneSet's
	// InPlaceOnly and cluster-api#13863 ask): a replica whose change
	// cannot be made in place, or needs a power cycle MaxUnavailable does
	// not allow, stays on its revision, and Plan.Holds names it and why
	// (HoldInPlaceOnly). Scaling goes on as under Strategy.Paused.
	UpdateInPlaceOnly
)

// String returns the method's name, as ParseUpdateMethod reads it.
func (m UpdateMethod) String() string { return enumName(m, updateMethodNames[:], "UpdateMethod") }

var updateMethodNames = [...]string{UpdateReplace: "Replace", UpdateInPlaceIfPossible: "InPlaceIfPossible", UpdateInPlaceOnly: "InPlaceOnly"}

// ParseUpdateMethod reads an UpdateMethod by its name ("Replace",
// "InPlaceIfPossible", "InPlaceOnly"); the empty string is UpdateReplace.
func ParseUpdateMethod(s string) (UpdateMethod, error) {
	if m := slices.Index(updateMethodNames[:], cmp.Or(s, "Replace")); m >= 0 {
		return UpdateMethod(m), nil
	}
	return 0, fmt.Errorf("update method %q is none of Replace, InPlaceIfPossible and InPlaceOnly: %w", s, ErrInvalidSpec)
}

// InPlace is how a replica on an older revision could be brought onto
// the wanted revision without replacing it, as the binding that observed
// it tells (Replica.InPlace): for a VM, whether its CPUs and memory can
// change while it runs (hot-add), only while it is off, or not at all
// (another template, disks, networks).
type InPlace int

const (
	// InPlaceNone means the replica cannot be changed in place: it must
	// be replaced. It is the zero value, so a binding that cannot tell
	// says nothing and the replica is replaced, as before in-place
	// updates existed.
	InPlaceNone InPlace = iota
	// InPlaceLive means the change can be made while the replica runs,
	// and it stays ready and available throughout (a VM's CPUs or memory
	// raised with hot-add on; any change to a VM that is off).
	InPlaceLive
	// InPlacePowerCycle means the change needs the replica stopped,
	// changed and started again: it is unavailable meanwhile (a VM's
	// memory lowered, or raised with hot-add off).
	InPlacePowerCycle
)

// String returns the kind's name, as Plan.String shows it.
func (k InPlace) String() string { return enumName(k, inPlaceNames[:], "InPlace") }

var inPlaceNames = [...]string{InPlaceNone: "None", InPlaceLive: "Live", InPlacePowerCycle: "PowerCycle"}

// Fallback is a replica on an older revision that an in-place method
// would change where it runs but cannot now (Plan.Fallback).
type Fallback struct {
	// Replica is the replica, as it was passed to Compute.
	Replica Replica
	// Reason says why it is not changed in place, in a phrase:
	// Replica.InPlaceBlocker, or what else keeps it from an in-place
	// update ("protected from scale-in", a power cycle MaxUnavailable 0
	// does not allow).
	Reason string
}

// Update is one in-place update a plan asks for (Plan.Update): bring
// Replica onto Spec.Revision where it runs.
type Update struct {
	// Replica is the replica to change, as it was passed to Compute.
	Replica Replica
	// PowerCycle says the change needs the replica stopped and started
	// again (InPlacePowerCycle); false: it is made while the replica runs
	// (InPlaceLive).
	PowerCycle bool
}
