package replicaset

import (
	"fmt"
	"slices"
	"strings"
)

// scale plans the pass's creates up to the desired count (within
// MaxSurge while a rollout is in progress) and its scale-down.
func (ps *pass) scale() {
	counted := ps.live + ps.gone
	if ps.spec.ReplaceDeleting {
		counted = ps.live
	}
	switch {
	case counted < ps.desired:
		want := ps.desired - counted
		n := min(want, ps.limit)
		ps.p.Deferred += want - n
		// Only with ReplaceDeleting: replicas being deleted still count
		// toward the surge bound while a rollout runs.
		held := 0
		if room := ps.surgeLeft(); ps.beyondPartition() && n > room {
			held = n - max(0, room)
		}
		ps.create(n - held)
		ps.surgeHold(held)
	case ps.live > ps.desired:
		ps.scaleDown(ps.live - ps.desired)
	}
}

// scaleDown chooses want victims (capped) in the deletion order: marked
// replicas, then replicas on older revisions while more than the
// partition remain, then those on the wanted revision (not while a
// rolling update still has replicas on older revisions to replace), then
// the older ones the partition would keep. While a rollout is in
// progress it keeps the budget and the last available replica on the
// wanted revision, passing over the candidates that would break them.
func (ps *pass) scaleDown(want int) {
	spec, p := ps.spec, &ps.p
	if want > ps.candidates {
		p.Shortfall = Shortfall{
			Count: want - ps.candidates,
			Reason: fmt.Sprintf("%d of %d live replicas are protected from scale-in; "+
				"remove the protection from %d of them to reach %d",
				ps.protect, ps.live, want-ps.candidates, ps.desired),
		}
		want = ps.candidates
	}
	room := max(0, ps.limit-ps.deletes)
	n := min(want, room)
	if ps.spec.Lifecycle == nil {
		// Plan.Delete is made now, before the walk, for release to fill:
		// a collection its allocation starts then marks while the walk
		// sorts, not while the list is filled, whose every pointer would
		// pass a write barrier. Made at release, a 50,000-replica
		// scale-down took 1.35 times as long (BenchmarkCompute, nocap).
		p.Delete = make([]Replica, 0, n+len(ps.replaced))
	}
	guarded := ps.inRollout() // its bounds apply
	oldLeft, oldCandidatesLeft, newAvailLeft := ps.old, ps.oldCandidates, ps.newAvail
	var byBudget, byServing, byLast, byRollout bool // why candidates were passed over
	taken := 0
	chosen := len(ps.chosen)
	ps.chosen = slices.Grow(ps.chosen, n)
	// take deletes current[i] unless a bound forbids it; false once n
	// are taken.
	take := func(i int) bool {
		if taken == n {
			return false
		}
		f := ps.fl[i]
		isNew, avail := f&fNew != 0, f&fAvail != 0
		if guarded && (avail && isNew && newAvailLeft == 1 && ps.desired > 0 || !ps.spend(i)) {
			switch { // passed over: why
			case avail && ps.budget == 0:
				byBudget = true
			case ps.serveBudget == 0:
				byServing = true
			default:
				byLast = true
			}
			return true
		}
		if avail && isNew {
			newAvailLeft--
		}
		if !isNew {
			oldLeft--
			oldCandidatesLeft--
		}
		ps.choose(i)
		taken++
		return taken < n // stop at once: the walk orders no more than it reads
	}
	// A rolling update that still has replicas on older revisions to
	// replace keeps its new replicas: scaling a surge replica down to make
	// room for the one it replaces would undo the rollout's every step.
	active := spec.Strategy.Type == RollingUpdate && !spec.Strategy.Paused && !ps.inPlaceOnly
	updating := -1 // the zone a ZoneByZone rollout updates: its replicas go first
	if ps.zoned() && active && spec.Strategy.ZoneByZone {
		updating = ps.updateZone()
	}
	old := order{mask: fMarked | fNew, tiered: true, updating: updating, need: n, budgeted: guarded, size: ps.oldCandidates}
	ps.each(order{mask: fMarked, want: fMarked, need: n, budgeted: guarded, size: ps.marked}, take)
	ps.each(old, func(i int) bool { return oldLeft > ps.lim.Partition && take(i) })
	ps.each(order{mask: fMarked | fNew, want: fNew, tiered: true, updating: -1, need: n, budgeted: guarded, size: ps.candidates - ps.oldCandidates},
		func(i int) bool {
			if active && oldLeft > ps.lim.Partition && oldCandidatesLeft > 0 {
				byRollout = true
				return false
			}
			return take(i)
		})
	old.updating = -1
	ps.each(old, take)
	if ps.rebalancing() {
		ps.keepAvailable(chosen)
		taken = len(ps.chosen) - chosen
	}
	held := want - taken
	if held <= 0 {
		return
	}
	// Only what the cap holds back is deferred; what a bound holds is a
	// Hold, as the Plan's documentation says.
	capped := min(held, max(0, want-room))
	p.Deferred += capped
	if ps.rebalancing() {
		ps.rebalanceHeld = held - capped // deletes wait for replicas coming up
		p.Deferred += ps.rebalanceHeld
		return
	}
	// A rolling update's surge excess held by the availability bounds is
	// the replacement that replace holds and explains: a hold of its own
	// would count it twice.
	surgeOnly := active && ps.beyondPartition() && want <= ps.lim.Surge && !byLast
	waiting := held - capped
	if waiting <= 0 || surgeOnly {
		return
	}
	var why []string
	kind := HoldMaxUnavailable
	if byBudget {
		why = append(why, fmt.Sprintf("deleting another available replica would take the %d available below %d (Desired − MaxUnavailable)",
			ps.avail, ps.desired-ps.lim.Unavailable))
	}
	if byServing {
		why = append(why, ps.servingNote())
	}
	if byRollout {
		why = append(why, fmt.Sprintf("replicas on revision %s are scaled down only once those on older revisions are replaced", spec.Revision))
	}
	if byLast {
		why = append(why, fmt.Sprintf("the last available replica on revision %s is kept", spec.Revision))
		if !byBudget && !byServing && !byRollout {
			kind = HoldLastAvailable
		}
	}
	ps.hold(kind, waiting, "%s to be scaled down: %s", count(waiting, "replica waits", "replicas wait"), strings.Join(why, "; "))
}

// surgeLeft is how many replicas may still be created within the one
// surge bound, Desired + MaxSurge, counting replicas live, being deleted
// and created in this pass; below zero when they are above it.
func (ps *pass) surgeLeft() int { return ps.desired + ps.lim.Surge - ps.live - ps.gone - ps.p.Create }

// surgeHold records the one MaxSurge hold, once the pass's creates are
// made: n new replicas wait (none: no hold).
func (ps *pass) surgeHold(n int) {
	if n > 0 {
		ps.hold(HoldMaxSurge, n, "%s: %s counting those being deleted and created, and MaxSurge allows %d (Desired + MaxSurge)",
			count(n, "new replica waits", "new replicas wait"), count(ps.live+ps.gone+ps.p.Create, "replica exists", "replicas exist"), ps.desired+ps.lim.Surge)
	}
}

// servingNote says why replicas that look unavailable were kept.
func (ps *pass) servingNote() string {
	return fmt.Sprintf("deleting a replica on an older revision that runs but is not seen available, and so may still serve, would take the %d that may serve below %d (Desired − MaxUnavailable)",
		ps.serving, ps.desired-ps.lim.Unavailable)
}
