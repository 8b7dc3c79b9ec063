package replicaset

import (
	"fmt"
	"slices"
	"time"
)

// onRevision reports whether r is on the wanted revision: its revision is
// Spec.Revision, or unknown.
func (s *Spec) onRevision(r *Replica) bool {
	return onRevision(s.Revision, r)
}

// replacing reports whether some live replica of current is on a revision
// other than rev: whether a pass has anything to replace.
func replacing(rev string, current []Replica) bool {
	for i := range current {
		if r := &current[i]; !r.Deleting && !onRevision(rev, r) {
			return true
		}
	}
	return false
}

// onRevision reports whether r is on revision rev: its revision is rev or
// unknown. It takes the revision alone, so that a loop over many replicas
// copies no Spec.
func onRevision(rev string, r *Replica) bool {
	return r.Revision == "" || r.Revision == rev
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
func groupOf(r *Replica, avail, onNew bool) int {
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
	if onNew {
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
	// serveBudget is how many replicas that may serve this pass may
	// still delete: those that may serve − (Desired − Unavailable), never
	// below zero; at least budget, and spent with it (see mayServe).
	serveBudget int
	// heldServing is set when the pass kept a replica that may serve for
	// serveBudget alone.
	heldServing bool
	// of is each replica's group, by index in current, and size each
	// group's number of replicas.
	of   []int32
	size [groups + 1]int
	// chosen has bit i set when this pass deletes current[i].
	chosen []uint64
	// z is the pass's view of the listed zones, when the spec lists any.
	z zoning

	p Plan
}

// liveCounts are a rollout pass's counts of the live replicas.
type liveCounts struct {
	live, avail         int // live replicas, and those available
	serving             int // those that may serve (mayServe)
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
	if avail || mayServe(r, onNew) {
		c.serving++
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
		avail := available(r, spec.MinReady, now)
		onNew := onRevision(spec.Revision, r)
		g := groupOf(r, avail, onNew)
		of[i] = int32(g)
		size[min(g, groups)]++
		if r.Deleting {
			deleting = append(deleting, *r)
			continue
		}
		c.add(r, avail, onNew)
	}
	if err := v.err(); err != nil {
		return Plan{}, err
	}
	ro.liveCounts, ro.size, ro.p.Deleting = c, size, deleting
	if ro.zoned() {
		ro.countZones()
	}
	slices.SortFunc(ro.p.Deleting, func(a, b Replica) int { return compareIdentity(&a, &b) })
	ro.chosen = w.uint64s(wordsChosen, (len(current)+63)/64)
	clear(ro.chosen)
	ro.budget = max(0, ro.avail-(spec.Desired-ro.lim.Unavailable))
	ro.serveBudget = max(0, ro.serving-(spec.Desired-ro.lim.Unavailable))
	ro.scale()
	ro.replace()
	if ro.zoned() {
		ro.p.Unbalanced = ro.zoneSpread()
	}
	return ro.p, nil
}

// rolling reports whether replicas on older revisions remain beyond the
// partition: a rollout is in progress, or would be without Paused or
// OnDelete.
func (ro *rollout) rolling() bool { return ro.old > ro.lim.Partition }

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
	if ro.zoned() {
		ro.z.update = ro.updateZone() // one zone for the whole pass
	}

	// Surge: new replicas up to Desired − Partition, within MaxSurge.
	total := ro.live + len(p.Deleting) + p.Create
	if need := spec.Desired - lim.Partition - newLeft; need > 0 {
		room := spec.Desired + lim.Surge - total
		capped := max(0, min(need, room, limit-p.Create))
		n := capped
		if ro.zoned() {
			n = ro.surgeRoom(capped)
		}
		p.Create += n
		if ro.zoned() {
			p.CreateZones = append(p.CreateZones, ro.placeCreates(n)...)
		}
		switch {
		case n < capped:
			// The zones hold the rest: zoneHolds says which and why.
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
		if ro.spend(i, false) {
			ro.choose(i)
		}
		return true // chosen, or skipped: MaxUnavailable
	}
	switch {
	case k == 0:
	case ro.zoned():
		// Marked replicas first, wherever they are; then by zone.
		ro.each(take, groupOldMarked)
		for _, g := range []int{groupOldBroken, groupOldUnavailable, groupOldRest} {
			ro.drain(take, true, g)
		}
	default:
		// Marked, broken or unavailable replicas cost no availability,
		// unless one is available all the same.
		ro.each(take, groupOldMarked)
		ro.each(take, groupOldBroken)
		ro.each(take, groupOldUnavailable)
		// Every replica in the last group is available: the first ones
		// the budget allows, without ordering the rest.
		if n := min(k-(len(p.Delete)-before), ro.budget, ro.serveBudget); n > 0 {
			for _, i := range ro.first(n, groupOldRest) {
				take(i)
			}
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
	if ro.zoned() {
		waiting = ro.zoneHolds(waiting)
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
	if ro.heldServing {
		reason += fmt.Sprintf("; %s", ro.servingNote())
	}
	switch {
	case lim.Unavailable > 0:
	case spec.CreatesFailing:
		reason += "; creates are failing, so no replica is coming up to take their place: MaxUnavailable above 0 would let the rollout replace replicas without a surge replica, within it"
	case ro.onNew-ro.newAvail == 0 && p.Create == 0:
		reason += "; no replica is coming up to take their place: MaxUnavailable above 0 would let the rollout replace replicas without a surge replica, within it"
	}
	ro.hold(HoldMaxUnavailable, waiting, reason)
}

// mayServe reports whether a live replica that is not available may serve
// all the same: it is on an older revision and neither broken (not
// provisioned, or failed) nor seen to be anything but running. A VM whose
// guest agent is late or whose readiness the binding failed to observe
// serves while it looks unavailable; a replica on the wanted revision
// that was never available has served nothing yet.
func mayServe(r *Replica, onNew bool) bool {
	return !onNew && r.Phase != PhasePending && r.Phase != PhaseFailed
}

// spend charges the deletion of current[i] to the pass's budgets and
// reports whether they allow it: an available replica costs one of each,
// a replica that may serve one of serveBudget, any other nothing. onNew
// is whether the replica is on the wanted revision.
func (ro *rollout) spend(i int, onNew bool) bool {
	r := &ro.current[i]
	switch {
	case r.Available(ro.spec.MinReady, ro.env.Now):
		if ro.budget == 0 || ro.serveBudget == 0 {
			return false
		}
		ro.budget--
		ro.serveBudget--
	case mayServe(r, onNew):
		if ro.serveBudget == 0 {
			ro.heldServing = true
			return false
		}
		ro.serveBudget--
	}
	return true
}

// servingNote says why replicas that look unavailable were kept.
func (ro *rollout) servingNote() string {
	return fmt.Sprintf("deleting a replica on an older revision that runs but is not seen available, and so may still serve, would take the %d that may serve below %d (Desired − MaxUnavailable)",
		ro.serving, ro.spec.Desired-ro.lim.Unavailable)
}

// hold records a Hold.
func (ro *rollout) hold(by HoldKind, waiting int, reason string) {
	ro.p.Holds = append(ro.p.Holds, Hold{By: by, Waiting: waiting, Reason: reason})
}

// choose adds current[i] to the plan's deletes.
func (ro *rollout) choose(i int) {
	ro.chosen[i/64] |= 1 << (i % 64)
	ro.p.Delete = append(ro.p.Delete, ro.current[i])
	if ro.zoned() {
		if z := ro.zoneAt(i); z >= 0 {
			ro.z.live[z]--
			if ro.spec.onRevision(&ro.current[i]) {
				ro.z.onNew[z]--
			} else {
				ro.z.old[z]--
			}
		}
	}
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
