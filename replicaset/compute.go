package replicaset

import (
	"cmp"
	"fmt"
	"reflect"
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
// [Self-healing], [Lifecycle hooks] and [In-place updates]; how they
// compose in one pass ([One pass]); and [Invariants], what every plan
// guarantees.
//
// Compute validates its input as Drain does (the spec, then each replica), then the policy:
// it returns an error wrapping ErrInvalidSpec for a bad spec,
// ErrInvalidReplica for an empty or repeated name or a repeated UID (input
// that contradicts itself: see [Counting] for what a binding passes
// instead) or, with Spec.Lifecycle, a replica preparing to leave with no
// start time, and ErrNoPolicy when policy is nil (an untyped nil, or a nil
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
// [One pass]: https://pkg.go.dev/github.com/replicakit/replicakit/replicaset#hdr-One_pass
// [Invariants]: https://pkg.go.dev/github.com/replicakit/replicakit/replicaset#hdr-Invariants
func Compute(spec Spec, current []Replica, policy Ranker, now time.Time) (Plan, error) {
	w := getScratch()
	defer w.put()
	if err := validate(&spec, current, w); err != nil {
		return Plan{}, err
	}
	if isNil(policy) {
		return Plan{}, fmt.Errorf("compute needs a deletion policy such as deletionpolicy.Random: %w", ErrNoPolicy)
	}
	ps := newPass(&spec, current, policy, now, w)
	// The actions, in their one priority (the package documentation's
	// One pass section says why): what must go, in-place updates, scale,
	// replacement, rebalancing; then the plan is emitted through the
	// pre-delete gate.
	ps.remediate()
	ps.resolveBudget()
	ps.inPlace()
	ps.scale()
	ps.replace()
	ps.replaceRemediated()
	ps.rebalance()
	ps.emit()
	return ps.p, nil
}

// victim is a deletion candidate with its sort key computed once: its
// tier in the deletion order (deletionTier), then its policy rank.
type victim struct {
	tier uint8
	i    int32 // r's index in the replicas Compute was given
	rank Rank
	r    *Replica
}

// compareIdentity orders replicas by name, then UID. It takes pointers: a
// Replica is 200 bytes, and orderings compare many times.
func compareIdentity(a, b *Replica) int {
	if c := cmp.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return cmp.Compare(a.UID, b.UID)
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
