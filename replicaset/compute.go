package replicaset

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"time"
)

// Compute decides one reconcile pass: how many replicas to create and which
// to delete, given what the owner asks for (spec), the replicas observed now
// (current, in any order), the deletion policy and the time of the pass.
// It never modifies current, and the same input gives the same plan.
//
// The package documentation states the rules it plans by, once each:
// [Counting] (and what a binding does with two replicas of one name),
// [Deletion order], [Zones], [Rollouts], [Unreachable zones] and
// [Self-healing], [Lifecycle hooks] and [In-place updates]; and
// [Invariants], what every plan guarantees.
//
// Compute returns an error wrapping ErrInvalidSpec for a bad spec,
// ErrInvalidReplica for an empty or repeated name or a repeated UID (input
// that contradicts itself: see [Counting] for what a binding passes
// instead) or a replica preparing to leave with no start time, and
// ErrNoPolicy when policy is nil (an untyped nil, or a nil
// pointer, map, slice or func behind the interface); all of them are
// terminal (retrying the same input gives the same error).
//
// [Counting]: https://pkg.go.dev/github.com/replicakit/replicakit/replicaset#hdr-Counting
// [Deletion order]: https://pkg.go.dev/github.com/replicakit/replicakit/replicaset#hdr-Deletion_order
// [Zones]: https://pkg.go.dev/github.com/replicakit/replicakit/replicaset#hdr-Zones
// [Rollouts]: https://pkg.go.dev/github.com/replicakit/replicakit/replicaset#hdr-Rollouts
// [Unreachable zones]: https://pkg.go.dev/github.com/replicakit/replicakit/replicaset#hdr-Unreachable_zones
// [Self-healing]: https://pkg.go.dev/github.com/replicakit/replicakit/replicaset#hdr-Self_healing
// [Lifecycle hooks]: https://pkg.go.dev/github.com/replicakit/replicakit/replicaset#hdr-Lifecycle_hooks
// [In-place updates]: https://pkg.go.dev/github.com/replicakit/replicakit/replicaset#hdr-In_place_updates
// [Invariants]: https://pkg.go.dev/github.com/replicakit/replicakit/replicaset#hdr-Invariants
func Compute(spec Spec, current []Replica, policy Ranker, now time.Time) (Plan, error) {
	if err := spec.Validate(); err != nil {
		return Plan{}, err
	}
	if isNil(policy) {
		return Plan{}, fmt.Errorf("compute needs a deletion policy such as deletionpolicy.Random: %w", ErrNoPolicy)
	}
	if spec.Lifecycle != nil {
		return computeGated(spec, current, policy, now)
	}
	return compute(spec, current, policy, now)
}

// compute is Compute for a valid spec and policy, before the pre-delete
// gate (computeGated).
func compute(spec Spec, current []Replica, policy Ranker, now time.Time) (Plan, error) {
	if inPlaceOn(&spec) {
		return computeInPlace(spec, current, policy, now)
	}
	return computeRules(spec, current, policy, now)
}

// computeRules is compute once in-place updates are decided
// (computeInPlace): the rules of scaling, zones, rollouts by replacement
// and healing.
func computeRules(spec Spec, current []Replica, policy Ranker, now time.Time) (Plan, error) {
	switch {
	case len(spec.Unreachable) > 0:
		return computePartitioned(spec, current, policy, now)
	case spec.Remediation != nil:
		return computeHealing(spec, current, policy, now)
	case spec.ReplaceFailed && len(spec.Zones) > 0:
		return computeFailed(spec, current, policy, now)
	}
	return computeReachable(spec, current, policy, now)
}

// computeReachable is Compute for a valid spec with every zone reachable,
// once remediation has decided (computeHealing).
func computeReachable(spec Spec, current []Replica, policy Ranker, now time.Time) (Plan, error) {
	w := getScratch()
	defer w.put()
	if spec.Revision != "" {
		if replacing(spec.Revision, current) {
			return computeRollout(spec, current, policy, now, w)
		}
		spec.Revision = "" // nothing to replace: plan as without revisions
	}

	// One pass over current validates, counts and (with zones) counts
	// per zone: at 100,000 replicas each pass over their 14 MB costs
	// about a millisecond of memory traffic alone.
	var p Plan
	v := newValidator(len(current), w)
	var zc zoneCounts
	zoned := len(spec.Zones) > 0
	if zoned {
		zc = newZoneCounts(spec, len(current), w)
	}
	live, candidates, protected := 0, 0, 0
	for i := range current {
		v.check(current, i)
		r := &current[i]
		switch {
		case r.Deleting:
			p.Deleting = append(p.Deleting, *r)
		case r.Protected:
			live++
			protected++
		default:
			live++
			candidates++
		}
		if zoned {
			zc.add(i, r)
		}
	}
	if err := v.err(); err != nil {
		return Plan{}, err
	}
	if zoned {
		zc.finish()
	}
	slices.SortFunc(p.Deleting, func(a, b Replica) int { return compareIdentity(&a, &b) })

	held := 0 // deletes Spec.Rebalance holds back
	limit := spec.maxPerPass()
	counted := live
	if !spec.ReplaceDeleting {
		counted += len(p.Deleting)
	}
	switch {
	case counted < spec.Desired:
		want := spec.Desired - counted
		p.Create = min(want, limit)
		p.Deferred = want - p.Create
		p.CreateZones = assignZones(spec, zc, p.Create, now)
	case live > spec.Desired:
		want := live - spec.Desired
		if want > candidates {
			p.Shortfall = Shortfall{
				Count: want - candidates,
				Reason: fmt.Sprintf("%d of %d live replicas are protected from scale-in; "+
					"remove the protection from %d of them to reach %d",
					protected, live, want-candidates, spec.Desired),
			}
			want = candidates
		}
		n := min(want, limit)
		p.Deferred = want - n
		env := Env{Now: now, MinReady: spec.MinReady, Seed: spec.Seed}
		if len(spec.Zones) > 0 {
			p.Delete = chooseZonedVictims(current, zc, n, policy, env, w)
		} else {
			p.Delete = chooseVictims(current, n, candidates, policy, env, w)
		}
		if spec.Rebalance && len(spec.Zones) > 0 {
			p.Delete, held = keepAvailable(spec, current, p.Delete, now)
			p.Deferred += held
		}
	case spec.Rebalance && len(spec.Zones) > 0 && live == spec.Desired && len(p.Deleting) == 0:
		if z := surge(spec, current, zc, now); z != "" {
			p.Create, p.CreateZones = 1, []string{z}
		}
	}
	if len(spec.Zones) > 0 {
		p.Unbalanced = unbalanced(spec, zc, p, held, now)
	}
	return p, nil
}

// victim is a deletion candidate with its sort key computed once.
type victim struct {
	marked bool
	rank   Rank
	r      *Replica
}

// compareVictims orders candidates: marked first, then by policy rank, then
// by identity.
func compareVictims(a, b victim) int {
	if a.marked != b.marked {
		if a.marked {
			return -1
		}
		return 1
	}
	if c := a.rank.Compare(b.rank); c != 0 {
		return c
	}
	return compareIdentity(a.r, b.r)
}

// compareIdentity orders replicas by name, then UID. It takes pointers: a
// Replica is 152 bytes, and orderings compare many times.
func compareIdentity(a, b *Replica) int {
	if c := cmp.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return cmp.Compare(a.UID, b.UID)
}

// chooseVictims returns the first n deletion candidates (live, unprotected)
// in deletion order.
func chooseVictims(current []Replica, n, candidates int, policy Ranker, env Env, w *scratch) []Replica {
	if n == 0 {
		return nil
	}
	vs := w.victims(candidates)
	for i := range current {
		if r := &current[i]; !r.Deleting && !r.Protected {
			vs = append(vs, victim{marked: r.MarkedForDeletion, rank: policy.Rank(*r, env), r: r})
		}
	}
	return inOrder(vs, n, w)
}

// isNil reports whether policy is nil or holds a nil pointer, map, slice,
// channel or func: a typed nil would panic on its first Rank call.
func isNil(policy Ranker) bool {
	if policy == nil {
		return true
	}
	switch v := reflect.ValueOf(policy); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface:
		return v.IsNil()
	}
	return false
}
