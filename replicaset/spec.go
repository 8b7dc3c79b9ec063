package replicaset

import (
	"cmp"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"time"
)

// DefaultMaxPerPass is the per-pass cap on creates and on deletes when
// Spec.MaxPerPass is zero: the same burst limit as the Kubernetes ReplicaSet
// controller.
const DefaultMaxPerPass = 500

// Errors returned by Compute. Each is wrapped with the detail a person needs
// to act on it; match them with errors.Is.
var (
	// ErrInvalidSpec means the Spec cannot be planned for: a negative
	// desired count, cap, window, timeout or amount, an unknown strategy
	// or method, or an empty or repeated zone.
	ErrInvalidSpec = errors.New("replicaset: invalid spec")
	// ErrInvalidReplica means the current replicas are inconsistent: an
	// empty name, or a name or UID that appears twice.
	ErrInvalidReplica = errors.New("replicaset: invalid replica")
	// ErrNoPolicy means Compute was given no deletion policy.
	ErrNoPolicy = errors.New("replicaset: no deletion policy")
)

// Spec is what the owner of a replica set asks for.
type Spec struct {
	// Desired is the number of replicas wanted. It must not be negative.
	Desired int
	// MaxPerPass caps the creates and, separately, the deletes and the
	// in-place updates (Plan.Update) one plan may ask for; the rest waits
	// for later passes (Plan.Deferred). A capped
	// scale-down deletes the first MaxPerPass replicas of Compute's
	// deletion order. Zero means DefaultMaxPerPass; for no cap, use
	// math.MaxInt. It must not be negative.
	MaxPerPass int
	// ReplaceDeleting selects how replicas that are already being deleted
	// count. When false (the default, as in Cluster API and the
	// VirtualMachineReplicaSet this library grew from), they still count
	// toward Desired, so a replica stuck behind a finalizer is not replaced
	// until it is gone. When true, they do not count and are replaced at
	// once, as the Kubernetes ReplicaSet controller does.
	ReplaceDeleting bool
	// MinReady is how long a replica must have been ready to count as
	// available (minReadySeconds). It must not be negative.
	MinReady time.Duration
	// Seed is passed to the deletion policy (Env.Seed) so that one policy
	// value can order each owner's replicas differently yet reproducibly:
	// give every owner a seed of its own that never changes (a hash of
	// its UID, say). Only policies with randomness use it.
	Seed uint64
	// Zones lists the failure domains to spread replicas over, such as
	// availability zones or vSphere clusters; a replica's zone is
	// Replica.Zone. The order breaks ties: creates go to the earlier of
	// two equally populated zones, deletes come from the later one. Names
	// must be non-empty and distinct. Empty: no spreading, and Compute
	// plans exactly as it does without zones. The package
	// documentation's Zones section states how zones place creates and
	// change the deletion order.
	Zones []string
	// Rebalance moves replicas back into balance when the listed zones
	// are more than one apart (after a zone recovered, say) or replicas
	// sit in zones no longer listed: one at a time, create before delete.
	// A pass that finds the set at its desired count, every live replica
	// available and nothing being deleted creates one replica in the
	// zone with the fewest; a scale-down then deletes from the most
	// populated zone once the new one is available. With Rebalance, no
	// scale-down ever takes the available replicas below the desired
	// count (nor lower than they were), and replicas still coming up are
	// not taken first as broken but by zone like the rest (failed ones
	// still are). A move needs a replica that is not protected to take
	// from a fuller zone (or from no listed zone). A replica that never
	// becomes available, without failing, holds such a scale-down until it
	// does or fails. Without zones it does nothing, and it is not applied
	// while replicas on older revisions (Revision) remain: a rollout
	// places its creates to end balanced instead (the package
	// documentation's Rollouts section).
	Rebalance bool
	// Unreachable lists zones whose replicas cannot be observed now: the
	// platform that holds them (a vCenter, a region's API) does not
	// answer, so whether they still run is unknown. Replicas whose Zone
	// is listed here, in Spec.Zones or not, are never deleted, never
	// counted as gone and never replaced by name; the package
	// documentation's Unreachable zones section states how the rest are
	// planned around them. Names must be
	// non-empty and distinct. The caller keeps the list (a binding from
	// its provider's failed reads), so that status can show it.
	Unreachable []string

	// Revision is the revision replicas should be on (a hash of the
	// owner's template, say). Empty: the set has no revisions, nothing is
	// replaced, and Compute plans exactly as it did before revisions
	// existed; Strategy's MaxSurge still sizes the stand-ins for
	// unreachable zones, and Validate checks Strategy either way. Set: replicas whose Replica.Revision differs are on older
	// revisions and are replaced under Strategy, as the package
	// documentation's Rollouts section states. A replica with no revision counts as on this one, so
	// that replicas made before the binding recorded revisions are adopted,
	// not replaced.
	Revision string
	// Strategy says how replicas on older revisions are replaced, which
	// happens only when Revision is set.
	Strategy Strategy
	// ReplaceFailed replaces replicas that failed in a listed zone
	// (PhaseFailed: a VM whose clone vCenter refused) while some listed
	// zone is healthy, as the package documentation's Zones section
	// states; the bindings set it for every set with zones. Remediation
	// implies it, under its guards. False, without Remediation: failed
	// replicas stay, as before it existed.
	ReplaceFailed bool

	// Remediation turns self-healing on: replicas that stay unhealthy
	// (Replica.Health) are restarted or replaced under the guards it sets,
	// as the package documentation's Self-healing section states. Nil:
	// off, and Compute plans exactly as without it.
	Remediation *Remediation
	// Lifecycle turns pre-delete hooks on: a replica chosen to leave, by
	// any rule, prepares first (Plan.Prepare) and is deleted only once
	// its pre-delete hooks released it or timed out. The package
	// documentation's Lifecycle hooks section states the rules. Nil: off,
	// and Compute plans as without it. A replica that still records a
	// preparation then (Replica.Preparing: the spec dropped its Lifecycle
	// while it prepared) is taken back (Plan.Cancel) unless the plan
	// deletes it or updates it in place, for the caller to clear the
	// record. Launch gates need no Lifecycle: a replica with one closed
	// (Replica.LaunchGated) is not ready, with or without it.
	Lifecycle *Lifecycle
	// History is what the caller keeps of the set between passes: the
	// remediations' failures and storms, the zones creates avoid, and
	// whether creates fail. Each pass's is the one the last left
	// (History.After).
	History History
}

// maxPerPass returns the effective per-pass cap.
func (s Spec) maxPerPass() int { return cmp.Or(s.MaxPerPass, DefaultMaxPerPass) }

// Validate reports whether s can be planned for. It refuses, each in an
// error of its own, all of them joined and each wrapping ErrInvalidSpec:
//   - a negative Desired, MaxPerPass or MinReady;
//   - a Strategy whose Type is neither RollingUpdate nor OnDelete, whose
//     MaxSurge, MaxUnavailable or Partition is negative, whose Method is
//     none of the UpdateMethods, or, for a RollingUpdate, whose MaxSurge
//     and MaxUnavailable are both zero (nothing could ever be replaced);
//   - with Remediation, a negative StartupWindow, UnhealthyWindow,
//     Backoff, MaxUnhealthy, MaxInFlight or MaxFailures;
//   - with Lifecycle, a negative Timeout;
//   - in Zones or Unreachable, a zone with an empty name or one listed
//     twice.
//
// Zero stands for a setting's default wherever it has one; Compute and
// Drain validate the spec with it, and the replicas besides
// (ErrInvalidReplica).
func (s Spec) Validate() error {
	// Each check appends its error or nil, which errors.Join drops: room
	// for all of them, so that a valid spec allocates nothing.
	errs := make([]error, 0, 16)
	errs = append(errs, negative(s.Desired < 0, "desired replicas", s.Desired))
	errs = append(errs, negative(s.MaxPerPass < 0, "max per pass", s.MaxPerPass, DefaultMaxPerPass))
	errs = append(errs, negative(s.MinReady < 0, "min ready", s.MinReady))
	errs = s.Strategy.validate(errs)
	if s.Remediation != nil {
		errs = s.Remediation.validate(errs)
	}
	if s.Lifecycle != nil {
		errs = s.Lifecycle.validate(errs)
	}
	errs = validateZones(errs, "zone", s.Zones)
	errs = validateZones(errs, "unreachable zone", s.Unreachable)
	return errors.Join(errs...)
}

// negative returns, when neg, the error of a setting (name) whose value v
// is negative, wrapping ErrInvalidSpec, with the default that 0 stands for
// if the setting has one (def); nil otherwise.
func negative[T any](neg bool, name string, v T, def ...T) error {
	switch {
	case !neg:
		return nil
	case len(def) > 0:
		return fmt.Errorf("%s %v is negative (use 0 for the default %v): %w", name, v, def[0], ErrInvalidSpec)
	}
	return fmt.Errorf("%s %v is negative: %w", name, v, ErrInvalidSpec)
}

// validateZones appends to errs the problems of a list of zones (what
// names the list): an empty name, a name listed twice.
func validateZones(errs []error, what string, zones []string) []error {
	for i, z := range zones {
		switch {
		case z == "":
			errs = append(errs, fmt.Errorf("%s %d has an empty name: %w", what, i, ErrInvalidSpec))
		case slices.Contains(zones[:i], z):
			errs = append(errs, fmt.Errorf("%s %q is listed twice: %w", what, z, ErrInvalidSpec))
		}
	}
	return errs
}

// validate is the one validation of Compute and Drain, in this order: the
// spec (Spec.Validate); then the replicas, each against those before it:
// a name, names and non-empty UIDs unique, and with Spec.Lifecycle a
// start time for a preparation (Preparing.Since), which its timeout runs
// from. The replicas' errors wrap ErrInvalidReplica, all of them joined.
func validate(spec *Spec, rs []Replica, w *scratch) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	seed := maphash.MakeSeed()
	names, uids := newIndexSets(len(rs), w)
	var errs []error
	for i := range rs {
		r := &rs[i]
		if r.Name == "" {
			errs = append(errs, fmt.Errorf("replica %d has an empty name: %w", i, ErrInvalidReplica))
		} else if j := names.add(maphash.String(seed, r.Name), i, func(j int) bool { return rs[j].Name == r.Name }); j >= 0 {
			errs = append(errs, fmt.Errorf("replica name %q appears twice: %w", r.Name, ErrInvalidReplica))
		}
		if r.UID != "" {
			if j := uids.add(maphash.String(seed, r.UID), i, func(j int) bool { return rs[j].UID == r.UID }); j >= 0 {
				errs = append(errs, fmt.Errorf("replicas %q and %q share UID %q: %w", rs[j].Name, r.Name, r.UID, ErrInvalidReplica))
			}
		}
		if spec.Lifecycle != nil && r.Preparing != nil && r.Preparing.Since.IsZero() {
			errs = append(errs, fmt.Errorf("replica %q prepares to leave with no start time (Preparing.Since): %w", r.Name, ErrInvalidReplica))
		}
	}
	return errors.Join(errs...)
}

// indexSet is an open-addressing set of indices into a slice, keyed by
// their entries' hashes: several times faster than a map at 100,000
// replicas, where validation would otherwise dominate Compute. A slot packs
// the hash's upper half and the index plus one (0: empty) in eight bytes.
type indexSet struct {
	slots []uint64
	mask  uint64
}

// newIndexSets returns two empty sets for n entries each, in w's memory.
func newIndexSets(n int, w *scratch) (indexSet, indexSet) {
	size := 16
	for size < 2*n {
		size *= 2
	}
	slots := w.uint64s(wordsSlots, 2*size)
	clear(slots)
	return indexSet{slots[:size:size], uint64(size - 1)}, indexSet{slots[size:], uint64(size - 1)}
}

// add records index i under hash h unless an entry same reports equal is
// already there, whose index it then returns; else -1.
func (s indexSet) add(h uint64, i int, same func(j int) bool) int {
	tag := h &^ (1<<32 - 1)
	for p := h & s.mask; ; p = (p + 1) & s.mask {
		slot := s.slots[p]
		if slot == 0 {
			s.slots[p] = tag | uint64(i+1)
			return -1
		}
		if slot&^(1<<32-1) == tag && same(int(slot&(1<<32-1))-1) {
			return int(slot&(1<<32-1)) - 1
		}
	}
}
