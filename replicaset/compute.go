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
// It never modifies current.
//
// Counting: live replicas are those not being deleted. Scale-down always
// deletes live − Desired replicas (capped), because replicas already being
// deleted cover the excess first. Scale-up creates Desired − live − deleting
// replicas by default, or Desired − live when spec.ReplaceDeleting is set.
//
// Deletion order, total, the same under every policy, and stated here
// only (the rest of replicakit points here):
//
//  1. replicas already being deleted come first and are never chosen again
//     (Plan.Deleting);
//  2. then replicas marked for deletion;
//  3. then the policy's order (Ranker.Rank, lowest first);
//  4. then name, then UID, so that the order is total and reproducible.
//
// Protected replicas are never chosen; if protection leaves too few
// candidates, Plan.Shortfall says how many short and why.
//
// Zones (Spec.Zones listed): each planned create is assigned a zone
// (Plan.CreateZones), the listed zone with the fewest live replicas first,
// counting those assigned before it, the earlier listed zone on a tie, and
// skipping zones in Spec.ZoneBackoff until their backoff ends. The deletion
// order becomes:
//
//  1. replicas already being deleted, as above;
//  2. then replicas marked for deletion;
//  3. then replicas in no listed zone (a zone removed from the list, or
//     none known);
//  4. then broken replicas: not provisioned, which includes those still
//     being provisioned, or failed (PhasePending, PhaseFailed); with
//     Spec.Rebalance only failed ones, so that a replica created to move
//     the set is not the first to go; a replica in any other phase,
//     PhaseUnknown included, is not broken here;
//  5. then the rest, one at a time from the listed zone with the most live
//     replicas left (protected ones count, and victims chosen before leave),
//     the later listed zone on a tie, skipping zones with no candidate left;
//     inside that zone, the policy's order;
//
// within tiers 2 to 4, the policy's order; ties everywhere by name, then
// UID. So a scale-down of healthy replicas never takes a zone further from
// balance: after a pass that is neither capped nor held back by
// protection, live replicas per listed zone differ by at most one (or by
// no more than before). Replicas are never moved from one zone to another
// to restore balance unless Spec.Rebalance asks for it; Plan.Unbalanced
// says when and why zones stay apart.
//
// Rollouts (Spec.Revision set): a replica whose Revision is neither empty
// nor Spec.Revision is on an older revision. While no live replica is,
// Compute plans exactly as without revisions (Spec.Rebalance included);
// what follows applies while some are. Creates are always on Spec.Revision. With the
// strategy's Limits (MaxSurge S, MaxUnavailable U, Partition P, resolved
// for Desired D by the one rounding rule Strategy.Limits states), a pass:
//
//   - scales as above, but deletes in this order: marked replicas; then
//     replicas on older revisions while more than P remain; then replicas
//     on Spec.Revision, except that a rolling update that is neither
//     paused nor OnDelete scales none of them down while replicas on older
//     revisions remain to be replaced (else it would scale down the surge
//     replicas that are to replace them); then replicas on older revisions
//     that P would keep; within each, broken (PhasePending, PhaseFailed),
//     then not available, then the policy's order;
//   - then, for a RollingUpdate that is not Paused, while more than P
//     replicas are on older revisions: creates replicas on Spec.Revision
//     up to D − P of them, while live replicas plus those being deleted
//     stay within D + S; and deletes replicas on older revisions beyond P
//     in the replacement order: marked, then broken, then not available,
//     then the policy's order.
//
// Bounds, whatever the state a pass starts from: no pass deletes an
// available replica when that takes the available replicas below D − U
// (so none lowers them when they already are below it), skipping it for
// the next candidate; while replicas on older revisions remain beyond P,
// live and deleting replicas plus creates never exceed D + S (nor grow
// when already above it); a rollout's deletes never take the replicas on
// older revisions below P; and no pass deletes the last available replica
// on Spec.Revision while D is above zero. Plan.Holds says why the
// replicas left on older revisions wait, bound by bound. With
// Spec.ReplaceDeleting, replicas being deleted are replaced at once only
// within D + S while a rollout is in progress.
//
// Rollouts over zones: a create goes to the listed zone with the fewest
// replicas on Spec.Revision, then the fewest replicas of any revision
// counting those being deleted, then the earlier listed, skipping zones
// backing off; so when the replicas on older revisions are gone, the
// zones are within one of each other wherever those replicas were. A
// scale-down takes marked replicas, then replicas in no listed zone, then
// one at a time from the zone with the most live replicas left (the later
// listed on a tie), inside it the first candidate the order above allows.
// Replacement takes marked replicas, then those in no listed zone, then
// within each of broken, not available and the rest one at a time from
// the zone with the most live replicas left; it replaces nothing in a zone
// backing off (HoldZoneBackoff), and with Strategy.ZoneByZone nothing
// outside the first listed zone that has replicas to replace and is not
// backing off (HoldZoneByZone). Spec.Rebalance is not applied while
// replicas on older revisions remain. Plan.Unbalanced says when the zones'
// live replicas will be more than one apart once the plan is carried out.
//
// Unreachable zones (Spec.Unreachable listed): the replicas whose zone is
// unreachable, live or being deleted, are unknown. Compute neither deletes
// them, counts them as gone, nor chooses them in any way: it lists them in
// Plan.Unknown, and plans the other replicas, the known ones, as a set of
// their own, by every rule above, with the desired count
//
//	K = max(0, D − u) + min(u, S, D)
//
// for D, where u counts the unknown replicas that count toward D (live
// ones, and those being deleted unless Spec.ReplaceDeleting) and S is
// Strategy.Limits(D).Surge (MaxSurge, 1 by default, whether or not the
// set has revisions): known replicas stand in for unknown ones, at most S
// of them, so the set holds at most D + S replicas while zones are out of
// reach (D + 2S during a rollout, whose surge applies to K), more only
// when more than D are unknown. Creates go to the listed zones that are
// reachable, and wait (Plan.Deferred) when none is; Spec.Rebalance waits
// for every zone to answer; a rollout's limits are resolved for K; replicas on older revisions in unreachable zones
// wait (HoldUnreachable). When the zones answer again, K is D once more:
// the replicas that stood in are the excess of an ordinary scale-down,
// taken by the zone order above from the fullest zones, and unknown
// replicas that are gone are replaced as any missing replica is.
//
// Compute returns an error wrapping ErrInvalidSpec for a bad spec,
// ErrInvalidReplica for an empty or repeated name or a repeated UID, and
// ErrNoPolicy when policy is nil (an untyped nil, or a nil pointer, map,
// slice or func behind the interface); all of them are terminal (retrying the
// same input gives the same error).
func Compute(spec Spec, current []Replica, policy Ranker, now time.Time) (Plan, error) {
	if err := spec.Validate(); err != nil {
		return Plan{}, err
	}
	if isNil(policy) {
		return Plan{}, fmt.Errorf("compute needs a deletion policy such as deletionpolicy.Random: %w", ErrNoPolicy)
	}
	if len(spec.Unreachable) > 0 {
		return computePartitioned(spec, current, policy, now)
	}
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
// Replica is 144 bytes, and orderings compare many times.
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
