package replicaset

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// onRevision reports whether r is on the wanted revision: its revision is
// Spec.Revision, or unknown.
func (s Spec) onRevision(r *Replica) bool {
	return r.Revision == "" || r.Revision == s.Revision
}

// Candidate groups: a live, unprotected replica is in one, by revision
// (older first), then marked, broken (not provisioned or failed), not
// available, and the rest (available). Compute's orders are sequences of
// groups, each in the policy's order.
const (
	groupOldMarked = iota
	groupOldBroken
	groupOldUnavailable
	groupOldRest
	groupNewMarked
	groupNewBroken
	groupNewUnavailable
	groupNewRest
	groups
	groupNone // deleting or protected: never a candidate
)

// groupOf returns r's group.
func (s Spec) groupOf(r *Replica, avail bool) int {
	g := groupOldMarked
	switch {
	case r.Deleting || r.Protected:
		return groupNone
	case r.MarkedForDeletion:
	case r.Phase == PhasePending || r.Phase == PhaseFailed:
		g = groupOldBroken
	case !avail:
		g = groupOldUnavailable
	default:
		g = groupOldRest
	}
	if s.onRevision(r) {
		g += groupNewMarked
	}
	return g
}

// rollout is one pass of a set with revisions, as Compute plans it: the
// counts it reads, the budgets it spends, and the plan it builds.
type rollout struct {
	spec    Spec
	lim     Limits
	current []Replica
	policy  Ranker
	env     Env
	w       *scratch

	liveCounts

	// budget is how many available replicas this pass may still delete:
	// Available − (Desired − Unavailable), never below zero.
	budget int
	// of is each replica's group, by index in current, and size each
	// group's number of replicas.
	of   []int32
	size [groups + 1]int
	// chosen has bit i set when this pass deletes current[i].
	chosen []uint64

	p Plan
}

// liveCounts are a rollout pass's counts of the live replicas.
type liveCounts struct {
	live, avail         int // live replicas, and those available
	onNew, newAvail     int // on the wanted revision, and those available
	old, oldCandidates  int // on older revisions, and those not protected
	candidates, protect int // not protected, and protected
}

// add counts one live replica.
func (c *liveCounts) add(r *Replica, avail, onNew bool) {
	c.live++
	if avail {
		c.avail++
	}
	if r.Protected {
		c.protect++
	} else {
		c.candidates++
	}
	switch {
	case onNew:
		c.onNew++
		if avail {
			c.newAvail++
		}
	case r.Protected:
		c.old++
	default:
		c.old++
		c.oldCandidates++
	}
}

// computeRollout is Compute for a spec with a revision.
func computeRollout(spec Spec, current []Replica, policy Ranker, now time.Time, w *scratch) (Plan, error) {
	ro := rollout{
		spec: spec, lim: spec.Strategy.Limits(spec.Desired), current: current, policy: policy,
		env: Env{Now: now, MinReady: spec.MinReady, Seed: spec.Seed}, w: w,
	}
	v := newValidator(len(current), w)
	of := w.int32s(intsGroupOf, len(current))
	ro.of = of
	// One pass validates, groups and counts, in locals: every field of the
	// replicas read once, while they are in cache.
	var (
		c        liveCounts
		size     [groups + 1]int
		deleting []Replica
	)
	for i := range current {
		v.check(current, i)
		r := &current[i]
		avail := r.Available(spec.MinReady, now)
		g := spec.groupOf(r, avail)
		of[i] = int32(g)
		size[min(g, groups)]++
		if r.Deleting {
			deleting = append(deleting, *r)
			continue
		}
		c.add(r, avail, spec.onRevision(r))
	}
	if err := v.err(); err != nil {
		return Plan{}, err
	}
	ro.liveCounts, ro.size, ro.p.Deleting = c, size, deleting
	slices.SortFunc(ro.p.Deleting, func(a, b Replica) int { return compareIdentity(&a, &b) })
	ro.chosen = w.uint64s(wordsChosen, (len(current)+63)/64)
	clear(ro.chosen)
	ro.budget = max(0, ro.avail-(spec.Desired-ro.lim.Unavailable))
	ro.scale()
	ro.replace()
	return ro.p, nil
}

// rolling reports whether replicas on older revisions remain beyond the
// partition: a rollout is in progress, or would be without Paused or
// OnDelete.
func (ro *rollout) rolling() bool { return ro.old > ro.lim.Partition }

// scale plans the pass's creates and scale-down as Compute does without
// revisions, but creates within MaxSurge while a rollout is in progress,
// and scales down in the rollout's order within MaxUnavailable.
func (ro *rollout) scale() {
	spec, p := ro.spec, &ro.p
	limit := spec.maxPerPass()
	total := ro.live + len(p.Deleting)
	counted := total
	if spec.ReplaceDeleting {
		counted = ro.live
	}
	switch {
	case counted < spec.Desired:
		want := spec.Desired - counted
		n := min(want, limit)
		p.Deferred = want - n
		if room := spec.Desired + ro.lim.Surge - total; ro.rolling() && n > room {
			// Only with ReplaceDeleting: replicas being deleted still
			// count toward the surge bound while a rollout runs.
			held := n - max(0, room)
			n -= held
			ro.hold(HoldMaxSurge, held, fmt.Sprintf(
				"%d new replicas wait: %d replicas exist counting %d being deleted, and MaxSurge allows %d",
				held, total, len(p.Deleting), spec.Desired+ro.lim.Surge))
		}
		p.Create = n
	case ro.live > spec.Desired:
		ro.scaleDown(ro.live - spec.Desired)
	}
}

// scaleDown chooses want victims (capped) in the order Compute states for
// a set with revisions: marked replicas, then replicas on older revisions
// beyond the partition, then the rest; within each, broken, not
// available, then the policy's order. An available replica is skipped when
// deleting it would break MaxUnavailable, and so is the last available
// replica on the wanted revision while Desired is above zero.
func (ro *rollout) scaleDown(want int) {
	spec, p := ro.spec, &ro.p
	if want > ro.candidates {
		p.Shortfall = Shortfall{
			Count: want - ro.candidates,
			Reason: fmt.Sprintf("%d of %d live replicas are protected from scale-in; "+
				"remove the protection from %d of them to reach %d",
				ro.protect, ro.live, want-ro.candidates, spec.Desired),
		}
		want = ro.candidates
	}
	n := min(want, spec.maxPerPass())
	oldLeft, oldCandidatesLeft, newAvailLeft := ro.old, ro.oldCandidates, ro.newAvail
	var byBudget, byLast, byRollout bool // why candidates were passed over
	take := func(i int) bool {
		if len(p.Delete) == n {
			return false
		}
		r := &ro.current[i]
		if ro.isChosen(i) {
			return true
		}
		isNew := spec.onRevision(r)
		if r.Available(spec.MinReady, ro.env.Now) {
			switch {
			case ro.budget == 0:
				byBudget = true
				return true
			case isNew && newAvailLeft == 1 && spec.Desired > 0:
				byLast = true
				return true
			}
			ro.budget--
			if isNew {
				newAvailLeft--
			}
		}
		if !isNew {
			oldLeft--
			oldCandidatesLeft--
		}
		ro.choose(i)
		return true
	}
	ro.each(take, groupOldMarked, groupNewMarked)
	for _, g := range []int{groupOldBroken, groupOldUnavailable, groupOldRest} {
		ro.each(func(i int) bool { return oldLeft > ro.lim.Partition && take(i) }, g)
	}
	// A rolling update that still has replicas on older revisions to
	// replace keeps its new replicas: scaling a surge replica down to make
	// room for the one it replaces would undo the rollout's every step.
	active := spec.Strategy.Type == RollingUpdate && !spec.Strategy.Paused
	for _, g := range []int{groupNewBroken, groupNewUnavailable, groupNewRest} {
		ro.each(func(i int) bool {
			if active && oldLeft > ro.lim.Partition && oldCandidatesLeft > 0 {
				byRollout = true
				return false
			}
			return take(i)
		}, g)
	}
	for _, g := range []int{groupOldBroken, groupOldUnavailable, groupOldRest} {
		ro.each(take, g)
	}
	if held := want - len(p.Delete); held > 0 {
		p.Deferred = held
		capped := max(0, want-spec.maxPerPass())
		if waiting := held - capped; waiting > 0 {
			var why []string
			kind := HoldMaxUnavailable
			if byBudget {
				why = append(why, fmt.Sprintf("deleting another available replica would take the %d available below %d (Desired − MaxUnavailable)",
					ro.avail, spec.Desired-ro.lim.Unavailable))
			}
			if byRollout {
				why = append(why, fmt.Sprintf("replicas on revision %s are scaled down only once those on older revisions are replaced", spec.Revision))
			}
			if byLast {
				why = append(why, fmt.Sprintf("the last available replica on revision %s is kept", spec.Revision))
				if !byBudget && !byRollout {
					kind = HoldLastAvailable
				}
			}
			ro.hold(kind, waiting, fmt.Sprintf("%d replicas wait to be scaled down: %s", waiting, strings.Join(why, "; ")))
		}
	}
}

// replace plans the rollout's own work once scaling is planned: surge
// creates on the wanted revision, and deletes of replicas on older
// revisions beyond the partition, marked ones first, then broken ones,
// then those not available, then the policy's order, within MaxSurge,
// MaxUnavailable and the per-pass cap.
func (ro *rollout) replace() {
	spec, p, lim := ro.spec, &ro.p, ro.lim
	oldLeft := ro.old
	newLeft := ro.onNew + p.Create
	for _, r := range p.Delete {
		if spec.onRevision(&r) {
			newLeft--
		} else {
			oldLeft--
		}
	}
	if ro.old > 0 && lim.Partition > 0 {
		ro.hold(HoldPartition, min(oldLeft, lim.Partition), fmt.Sprintf(
			"%d replicas stay on older revisions (Partition %s)", min(oldLeft, lim.Partition), spec.Strategy.Partition))
	}
	excess := oldLeft - lim.Partition
	if excess <= 0 {
		return
	}
	switch {
	case spec.Strategy.Paused:
		ro.hold(HoldPaused, excess, fmt.Sprintf("the rollout is paused: %d replicas on older revisions wait for it to resume", excess))
		return
	case spec.Strategy.Type == OnDelete:
		ro.hold(HoldOnDelete, excess, fmt.Sprintf(
			"%d replicas on older revisions are replaced only when they are deleted (OnDelete)", excess))
		return
	}
	limit := spec.maxPerPass()

	// Surge: new replicas up to Desired − Partition, within MaxSurge.
	total := ro.live + len(p.Deleting) + p.Create
	if need := spec.Desired - lim.Partition - newLeft; need > 0 {
		room := spec.Desired + lim.Surge - total
		n := max(0, min(need, room, limit-p.Create))
		p.Create += n
		switch {
		case n < need && room > n:
			p.Deferred += min(need, room) - n // over the per-pass cap
		case n < need:
			ro.hold(HoldMaxSurge, need-n, fmt.Sprintf(
				"%d new replicas wait: %d replicas exist counting those being deleted and created, and MaxSurge allows %d",
				need-n, total+n, spec.Desired+lim.Surge))
		}
	}

	// Replacement deletes: at most excess, the cap, and the availability
	// budget for available replicas.
	k := min(excess, limit-len(p.Delete))
	before := len(p.Delete)
	take := func(i int) bool {
		if len(p.Delete)-before == k {
			return false
		}
		if ro.current[i].Available(spec.MinReady, ro.env.Now) {
			if ro.budget == 0 {
				return true // skipped: MaxUnavailable
			}
			ro.budget--
		}
		ro.choose(i)
		return true
	}
	if k > 0 {
		// Marked, broken or unavailable replicas cost no availability,
		// unless one is available all the same.
		ro.each(take, groupOldMarked)
		ro.each(take, groupOldBroken)
		ro.each(take, groupOldUnavailable)
	}
	// Every replica in the last group is available: the first ones the
	// budget allows, without ordering the rest.
	if n := min(k-(len(p.Delete)-before), ro.budget); n > 0 {
		for _, i := range ro.first(n, groupOldRest) {
			take(i)
		}
	}
	replaced := len(p.Delete) - before
	waiting := excess - replaced
	if waiting <= 0 {
		return
	}
	protectedOld := ro.old - ro.oldCandidates
	if protectedOld > 0 {
		ro.hold(HoldProtected, min(waiting, protectedOld), fmt.Sprintf(
			"%d replicas on older revisions are protected from scale-in and are not replaced", min(waiting, protectedOld)))
		waiting -= min(waiting, protectedOld)
	}
	if waiting <= 0 {
		return
	}
	if len(p.Delete) == limit {
		ro.hold(HoldMaxPerPass, waiting, fmt.Sprintf("%d replicas on older revisions wait for the next pass (MaxPerPass)", waiting))
		p.Deferred += waiting
		return
	}
	reason := fmt.Sprintf(
		"%d replicas on older revisions wait for replicas on revision %s to become available: %d are available, and at least %d (Desired − MaxUnavailable) must stay",
		waiting, spec.Revision, ro.avail, spec.Desired-lim.Unavailable)
	switch {
	case lim.Unavailable > 0:
	case spec.CreatesFailing:
		reason += "; creates are failing, so no replica is coming up to take their place: MaxUnavailable above 0 would let the rollout replace replicas in place, within it"
	case ro.onNew-ro.newAvail == 0 && p.Create == 0:
		reason += "; no replica is coming up to take their place: MaxUnavailable above 0 would let the rollout replace replicas in place, within it"
	}
	ro.hold(HoldMaxUnavailable, waiting, reason)
}

// hold records a Hold.
func (ro *rollout) hold(by HoldKind, waiting int, reason string) {
	ro.p.Holds = append(ro.p.Holds, Hold{By: by, Waiting: waiting, Reason: reason})
}

// choose adds current[i] to the plan's deletes.
func (ro *rollout) choose(i int) {
	ro.chosen[i/64] |= 1 << (i % 64)
	ro.p.Delete = append(ro.p.Delete, ro.current[i])
}

// isChosen reports whether the pass deletes current[i].
func (ro *rollout) isChosen(i int) bool { return ro.chosen[i/64]&(1<<(i%64)) != 0 }

// each calls f with the index of every replica of the groups not yet
// chosen, the groups merged into one order: the policy's rank, then
// identity. It stops when f returns false.
func (ro *rollout) each(f func(i int) bool, gs ...int) {
	for _, i := range ro.first(-1, gs...) {
		if !f(i) {
			return
		}
	}
}

// first returns the indexes in current of the first n (all, when n < 0)
// replicas of the groups not yet chosen, in the policy's order and then by
// identity.
func (ro *rollout) first(n int, gs ...int) []int {
	size, want := 0, uint32(0) // want has bit g set for each group g in gs
	for _, g := range gs {
		size += ro.size[g]
		want |= 1 << g
	}
	if size == 0 || n == 0 {
		return nil
	}
	vs := ro.w.victims(size)
	at := ro.w.int32s(intsAt, size)[:0] // at[j] is the index in current of vs[j]
	for i, g := range ro.of {
		if want&(1<<g) != 0 && !ro.isChosen(i) {
			vs = append(vs, victim{rank: ro.policy.Rank(ro.current[i], ro.env), r: &ro.current[i]})
			at = append(at, int32(i))
		}
	}
	if n < 0 || n > len(vs) {
		n = len(vs)
	}
	out := make([]int, n)
	for j, k := range firstInOrder(vs, n, ro.w) {
		out[j] = int(at[k])
	}
	return out
}
