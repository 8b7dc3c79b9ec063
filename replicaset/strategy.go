package replicaset

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Amount is a number of replicas given either as a count or as a
// percentage of the desired count, as Kubernetes' IntOrString is for
// maxSurge and maxUnavailable. The zero Amount is unset: the setting it is
// used for takes its default.
type Amount struct {
	value   int
	percent bool
	set     bool
}

// Count returns an Amount of n replicas.
func Count(n int) Amount { return Amount{value: n, set: true} }

// Percent returns an Amount of p percent of the desired count; Limits
// states how it is rounded.
func Percent(p int) Amount { return Amount{value: p, percent: true, set: true} }

// ParseAmount reads an Amount as Kubernetes writes one: "3" is a count and
// "25%" a percentage. Negative numbers, and anything else, are an error.
func ParseAmount(s string) (Amount, error) {
	num, pct := strings.CutSuffix(s, "%")
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 {
		return Amount{}, fmt.Errorf("amount %q is neither a count (\"3\") nor a percentage (\"25%%\") of zero or more", s)
	}
	if pct {
		return Percent(n), nil
	}
	return Count(n), nil
}

// IsSet reports whether a is set, rather than the zero Amount.
func (a Amount) IsSet() bool { return a.set }

// String returns a as ParseAmount reads it, or "" when unset.
func (a Amount) String() string {
	switch {
	case !a.set:
		return ""
	case a.percent:
		return strconv.Itoa(a.value) + "%"
	}
	return strconv.Itoa(a.value)
}

// of returns a as a count for desired replicas: a percentage rounded up
// or down, a count as it is; def when a is unset.
func (a Amount) of(desired int, up bool, def int) int {
	switch {
	case !a.set:
		return def
	case !a.percent:
		return a.value
	case up:
		return (a.value*desired + 99) / 100
	}
	return a.value * desired / 100
}

// StrategyType is how a set replaces replicas that are not on its wanted
// revision.
type StrategyType int

const (
	// RollingUpdate replaces replicas on older revisions a few at a time,
	// within Strategy.MaxSurge and Strategy.MaxUnavailable. It is the zero
	// value.
	RollingUpdate StrategyType = iota
	// OnDelete never replaces a replica for being on an older revision:
	// only replicas that go away for other reasons come back, on the
	// wanted revision.
	OnDelete
)

// String returns the type's name, as Kubernetes spells it.
func (t StrategyType) String() string { return enumName(t, strategyTypeNames[:], "StrategyType") }

var strategyTypeNames = [...]string{RollingUpdate: "RollingUpdate", OnDelete: "OnDelete"}

// The defaults of an unset Strategy.MaxSurge and Strategy.MaxUnavailable:
// Cluster API's for machines, not Deployment's 25% and 25%. A VM takes
// minutes to clone and boot, and a set of VMs is usually sized for its
// load: one extra VM at a time keeps every serving VM serving until its
// replacement is available, and does not ask a cluster for a quarter
// more capacity at once. Deployment's defaults suit Pods, which start in
// seconds on capacity that is already there.
const (
	DefaultMaxSurge       = 1
	DefaultMaxUnavailable = 0
)

// Strategy says how a set whose Spec.Revision is set moves its replicas
// onto that revision. The zero Strategy is a RollingUpdate with
// DefaultMaxSurge and DefaultMaxUnavailable, no partition, not paused.
type Strategy struct {
	// Type is RollingUpdate (the zero value) or OnDelete.
	Type StrategyType
	// MaxSurge is how many replicas a rolling update may have above
	// Desired, counting replicas still being deleted. Unset:
	// DefaultMaxSurge.
	MaxSurge Amount
	// MaxUnavailable is how far below Desired a rolling update may take
	// the available replicas, and the replicas that may serve (those
	// available, and those on older revisions that run but are not seen
	// available: the package documentation's Rollouts section). Unset:
	// DefaultMaxUnavailable. Limits caps it at Desired; MaxSurge and
	// MaxUnavailable both set to zero are an invalid spec.
	MaxUnavailable Amount
	// Partition is how many replicas stay on older revisions (a canary:
	// Desired − Partition replicas move to the wanted revision). Unset:
	// none stay. It applies to OnDelete too, where it changes nothing.
	Partition Amount
	// Paused stops replacing replicas for their revision. Scaling goes
	// on: new replicas are made on the wanted revision, and a scale-down
	// removes replicas on older revisions first, within MaxUnavailable. A
	// set paused with a surge replica up (more live than Desired) is such
	// a scale-down, where a paused Deployment keeps both until it
	// resumes: it removes a replica on an older revision once the surge
	// replica is available, and the surge replica itself while it is not
	// (deleting one that serves would break MaxUnavailable).
	Paused bool
	// ZoneByZone replaces replicas one zone at a time (update domains):
	// only in the first listed zone (Spec.Zones) that still holds
	// replicas to replace and is not backing off, with no more surge
	// replicas coming than that zone has replicas left to replace; a
	// scale-down takes that zone's replicas on older revisions before any
	// in another listed zone; and creates keep the zones' counts level,
	// so that a surge replica comes up in the zone whose replica it
	// replaces (the package documentation's Rollouts section states the
	// rule). Without zones it does nothing.
	ZoneByZone bool
	// Method is how a replica on an older revision moves onto the wanted
	// one: replaced (UpdateReplace, the zero value), changed in place when
	// it can be (UpdateInPlaceIfPossible), or only in place
	// (UpdateInPlaceOnly). The package documentation's In-place updates
	// section states the rules; an in-place update is bound by
	// MaxUnavailable, Partition and Paused as a replacement is. OnDelete
	// ignores it.
	Method UpdateMethod
}

// Limits are a Strategy resolved for a desired count.
type Limits struct {
	// Surge is how many replicas may exist above Desired, counting those
	// being deleted.
	Surge int
	// Unavailable is how many below Desired the available replicas may go.
	Unavailable int
	// Partition is how many replicas stay on older revisions, at most
	// Desired.
	Partition int
}

// Limits resolves s for desired replicas. This is the one rounding rule,
// Deployment's: a MaxSurge percentage rounds up, a MaxUnavailable
// percentage rounds down, and when both come to zero by rounding (MaxSurge
// 0 with MaxUnavailable 25% of 3, say) Unavailable is 1, or nothing could
// ever be replaced; Unavailable is at most desired, as the Deployment
// controller and Cluster API cap it; a Partition percentage rounds up
// (more replicas stay behind, never fewer), and Partition is at most
// desired. MaxSurge and MaxUnavailable both set to zero are not rounding:
// Spec.Validate refuses them, as Kubernetes refuses such a Deployment.
func (s Strategy) Limits(desired int) Limits {
	l := Limits{
		Surge:       s.MaxSurge.of(desired, true, DefaultMaxSurge),
		Unavailable: s.MaxUnavailable.of(desired, false, DefaultMaxUnavailable),
		Partition:   min(s.Partition.of(desired, true, 0), desired),
	}
	if l.Surge == 0 && l.Unavailable == 0 {
		l.Unavailable = 1
	}
	l.Unavailable = min(l.Unavailable, desired)
	return l
}

// bothZero reports whether MaxSurge and MaxUnavailable are both set to
// zero (a count or a percentage), which leaves a rolling update no way to
// replace a replica.
func (s Strategy) bothZero() bool {
	return s.MaxSurge.set && s.MaxSurge.value == 0 && s.MaxUnavailable.set && s.MaxUnavailable.value == 0
}

// validate appends to errs the problems with s (Spec.Validate).
func (s Strategy) validate(errs []error) []error {
	if s.Type != RollingUpdate && s.Type != OnDelete {
		errs = append(errs, fmt.Errorf("strategy type %d is neither RollingUpdate nor OnDelete: %w", int(s.Type), ErrInvalidSpec))
	}
	errs = append(errs, negative(s.MaxSurge.value < 0, "max surge", s.MaxSurge),
		negative(s.MaxUnavailable.value < 0, "max unavailable", s.MaxUnavailable),
		negative(s.Partition.value < 0, "partition", s.Partition))
	if s.Method < UpdateReplace || s.Method > UpdateInPlaceOnly {
		errs = append(errs, fmt.Errorf("update method %d is none of Replace, InPlaceIfPossible and InPlaceOnly: %w", int(s.Method), ErrInvalidSpec))
	}
	if s.Type == RollingUpdate && s.bothZero() {
		errs = append(errs, fmt.Errorf("strategy MaxSurge %s and MaxUnavailable %s are both zero, so no replica could ever be replaced: "+
			"set MaxSurge above zero to replace each replica once its replacement is available, or MaxUnavailable above zero to replace replicas without a surge replica: %w",
			s.MaxSurge, s.MaxUnavailable, ErrInvalidSpec))
	}
	return errs
}

// RolloutStatus is where a set's replicas stand against its wanted
// revision, as status reports it (Deployment's updatedReplicas and
// friends).
type RolloutStatus struct {
	// Updated counts live replicas on the wanted revision (or with none
	// recorded, which counts as it).
	Updated int
	// UpdatedReady counts those of them that are ready.
	UpdatedReady int
	// UpdatedAvailable counts those of them that are available.
	UpdatedAvailable int
	// Old counts live replicas on older revisions.
	Old int
	// Complete reports that the rollout is done: no replica is being
	// deleted, the live replicas are Desired, Old is exactly the
	// strategy's partition (or fewer, when fewer were left), and every
	// updated replica is available.
	Complete bool
	// Current is the revision the set is rolling from: the older revision
	// most live replicas carry (the least in byte order on a tie), or the
	// wanted revision when no live replica is on an older one, as a
	// StatefulSet's currentRevision becomes its updateRevision once its
	// rollout is done. Empty for a spec without a revision.
	Current string
}

// SummarizeRollout computes the rollout status of current at now under
// spec. A spec without a revision counts every replica as updated.
func SummarizeRollout(spec Spec, current []Replica, now time.Time) RolloutStatus {
	var s RolloutStatus
	olds := map[string]int{} // live replicas per older revision
	deleting := false
	for i := range current {
		r := &current[i]
		if r.Deleting {
			deleting = true
			continue
		}
		if !onRevision(spec.Revision, r) {
			s.Old++
			olds[r.Revision]++
			continue
		}
		s.Updated++
		if r.ready() {
			s.UpdatedReady++
		}
		if r.Available(spec.MinReady, now) {
			s.UpdatedAvailable++
		}
	}
	part := spec.Strategy.Limits(spec.Desired).Partition
	s.Complete = !deleting && s.Updated+s.Old == spec.Desired && s.Old <= part &&
		s.UpdatedAvailable == s.Updated
	s.Current = spec.Revision
	for rev, n := range olds {
		if best := olds[s.Current]; n > best || (n == best && rev < s.Current) {
			s.Current = rev
		}
	}
	return s
}
