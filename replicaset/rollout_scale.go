package replicaset

import (
	"fmt"
	"strings"
)

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
		if ro.zoned() {
			p.CreateZones = ro.placeCreates(n)
		}
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
	var byBudget, byServing, byLast, byRollout bool // why candidates were passed over
	// try deletes current[i] unless a bound forbids it, and reports
	// whether it did.
	try := func(i int) bool {
		r := &ro.current[i]
		if ro.isChosen(i) {
			return false
		}
		isNew := spec.onRevision(r)
		avail := r.Available(spec.MinReady, ro.env.Now)
		// passed records why a bound passed current[i] over.
		passed := func() bool {
			switch {
			case avail && ro.budget == 0:
				byBudget = true
			case ro.serveBudget == 0:
				byServing = true
			default:
				byLast = true
			}
			return false
		}
		if avail && isNew && newAvailLeft == 1 && spec.Desired > 0 {
			return passed()
		}
		if !ro.spend(i, isNew) {
			return passed()
		}
		if avail && isNew {
			newAvailLeft--
		}
		if !isNew {
			oldLeft--
			oldCandidatesLeft--
		}
		ro.choose(i)
		return true
	}
	take := func(i int) bool {
		if len(p.Delete) == n {
			return false
		}
		try(i)
		return true
	}
	oldAllowed := func() bool { return oldLeft > ro.lim.Partition }
	// A rolling update that still has replicas on older revisions to
	// replace keeps its new replicas: scaling a surge replica down to make
	// room for the one it replaces would undo the rollout's every step.
	active := spec.Strategy.Type == RollingUpdate && !spec.Strategy.Paused
	blocked := func() bool {
		if active && oldLeft > ro.lim.Partition && oldCandidatesLeft > 0 {
			byRollout = true
			return true
		}
		return false
	}
	ro.each(take, groupOldMarked, groupNewMarked)
	if ro.zoned() {
		u := -1 // the zone a ZoneByZone rollout updates: its replicas go first
		if active && spec.Strategy.ZoneByZone && ro.rolling() {
			u = ro.updateZone()
		}
		ro.scaleDownZoned(n, u, try, oldAllowed, blocked)
	} else {
		for _, g := range []int{groupOldBroken, groupOldUnavailable, groupOldRest} {
			ro.each(func(i int) bool { return oldAllowed() && take(i) }, g)
		}
		for _, g := range []int{groupNewBroken, groupNewUnavailable, groupNewRest} {
			ro.each(func(i int) bool { return !blocked() && take(i) }, g)
		}
		for _, g := range []int{groupOldBroken, groupOldUnavailable, groupOldRest} {
			ro.each(take, g)
		}
	}
	if held := want - len(p.Delete); held > 0 {
		// Only what the cap holds back is deferred; what a bound holds
		// is a Hold, as the Plan's documentation says.
		capped := min(held, max(0, want-spec.maxPerPass()))
		p.Deferred = capped
		// A rolling update's surge excess held by the availability bounds
		// is the replacement that replace holds and explains: a hold of
		// its own would count it twice.
		surgeOnly := active && ro.rolling() && want <= ro.lim.Surge && !byLast
		if waiting := held - capped; waiting > 0 && !surgeOnly {
			var why []string
			kind := HoldMaxUnavailable
			if byBudget {
				why = append(why, fmt.Sprintf("deleting another available replica would take the %d available below %d (Desired − MaxUnavailable)",
					ro.avail, spec.Desired-ro.lim.Unavailable))
			}
			if byServing {
				why = append(why, ro.servingNote())
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
			ro.hold(kind, waiting, fmt.Sprintf("%d replicas wait to be scaled down: %s", waiting, strings.Join(why, "; ")))
		}
	}
}
