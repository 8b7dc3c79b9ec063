package replicaset

import (
	"cmp"
	"fmt"
	"slices"
)

// inPlaceOn reports whether a pass under spec updates replicas in place:
// a rolling update, not paused, with an in-place Strategy.Method.
func inPlaceOn(spec *Spec) bool {
	return spec.Revision != "" && spec.Strategy.Method != UpdateReplace &&
		spec.Strategy.Type == RollingUpdate && !spec.Strategy.Paused
}

// inPlaceBar says why r, a live replica on an older revision, is not
// updated in place: "" when it can be. A replica the rules handle for
// another reason (fixed, marked for deletion, failed, unhealthy under
// remediation) is not, and neither is one whose change cannot be made in
// place, or needs a power cycle while MaxUnavailable allows no replica to
// be unavailable.
func (ps *pass) inPlaceBar(r *Replica, fixed bool) string {
	switch {
	case fixed:
		return "protected from scale-in"
	case r.MarkedForDeletion:
		return "marked for deletion"
	case r.Phase == PhaseFailed:
		return "failed"
	case ps.spec.Remediation != nil && r.Health != nil && r.Health.Unhealthy:
		return "unhealthy"
	case r.InPlace == InPlaceNone:
		return cmp.Or(r.InPlaceBlocker, "its change cannot be made in place")
	case r.InPlace == InPlacePowerCycle && ps.lim.Unavailable == 0:
		return cmp.Or(r.InPlaceBlocker, "its change needs a power cycle") +
			", and MaxUnavailable 0 lets no replica be unavailable for a power cycle"
	case r.InPlace != InPlaceLive && r.InPlace != InPlacePowerCycle:
		return fmt.Sprintf("its in-place kind %v is unknown", r.InPlace)
	}
	return ""
}

// stillUpdates reports whether r, preparing for an in-place update
// (Preparing.Update), is still to be updated: the spec updates in place,
// r is on an older revision, and its change can still be made in place.
// A rollback, a pause or a change that no longer fits takes it back
// (Plan.Cancel), so that no replica drains for an update that will not
// come (kruise#1156: a rollback while a pod prepared for an in-place
// update hung it).
func (ps *pass) stillUpdates(r *Replica) bool {
	return inPlaceOn(ps.spec) && !onRevision(ps.spec.Revision, r) && ps.inPlaceBar(r, r.Protected) == ""
}

// inPlace plans the in-place updates (the package documentation's
// In-place updates section): replicas on older revisions whose change can
// be made in place move onto the wanted revision without being replaced,
// as many as the partition allows, less those a scale-down will delete:
// live updates first, then power cycles, within the budget (a power cycle
// takes a replica out of service as a deletion does) and the per-pass
// cap. Each candidate, updated or waiting, is on the wanted revision from
// then on in the pass, so the rules replace none of them; what is left
// on older revisions is replaced (UpdateInPlaceIfPossible) or held
// (UpdateInPlaceOnly).
func (ps *pass) inPlace() {
	if !inPlaceOn(ps.spec) {
		return
	}
	ps.inPlaceOnly = ps.spec.Strategy.Method == UpdateInPlaceOnly
	var cands []int
	for i := range ps.cur {
		if ps.fl[i]&(fLive|fNew) != fLive {
			continue
		}
		if why := ps.inPlaceBar(&ps.cur[i], ps.fl[i]&fFixed != 0); why != "" {
			ps.fallback = append(ps.fallback, Fallback{Replica: ps.cur[i], Reason: why})
			continue
		}
		cands = append(cands, i)
	}
	slices.SortFunc(ps.fallback, func(a, b Fallback) int { return compareIdentity(&a.Replica, &b.Replica) })
	// Live updates first, then power cycles of replicas that cost the
	// budget nothing, then of those that may serve, then of those
	// available; by identity within each.
	costOf := func(i int) int {
		f, live := ps.fl[i], ps.cur[i].InPlace == InPlaceLive
		switch {
		case live && (f&fServe == 0 || f&fAvail != 0):
			return 0
		case live:
			return 1
		case f&fServe == 0:
			return 2
		case f&fAvail == 0:
			return 3
		}
		return 4
	}
	slices.SortFunc(cands, func(a, b int) int {
		if c := cmp.Compare(costOf(a), costOf(b)); c != 0 {
			return c
		}
		return compareIdentity(&ps.cur[a], &ps.cur[b])
	})
	// A scale-down takes replicas on older revisions first: those it
	// will delete are not updated. The rules choose which; as many as
	// the excess stay on their revision.
	excess := max(0, ps.live-ps.desired)
	move := min(len(cands), max(0, ps.old-ps.lim.Partition-excess))
	waiting, deferred := 0, 0
	for _, i := range cands[:move] {
		// Updated or waiting, it is on the wanted revision from now on in
		// the pass; one that waits still serves as it did.
		cost, f := costOf(i), ps.fl[i]|fNew|fNotMade
		switch {
		case len(ps.updates) == ps.limit:
			deferred++
		case !ps.afford(cost == 4, cost == 1 || cost == 3):
			waiting++
		default:
			switch {
			case ps.cur[i].InPlace == InPlacePowerCycle:
				f &^= fAvail | fServe // out of service while it cycles
			case f&fAvail == 0:
				f &^= fServe // not available: counted as no longer serving
			}
			ps.updates = append(ps.updates, i)
		}
		ps.set(i, f)
		ps.moved++
	}
	// The rules spend what the state now leaves.
	ps.resolveBudget()
	// The holds in the order of the checks: the cap, then the budget.
	if deferred > 0 {
		ps.p.Deferred += deferred
		ps.hold(HoldMaxPerPass, deferred, "%s to be updated in place on the next pass (MaxPerPass)", count(deferred, "replica waits", "replicas wait"))
	}
	if waiting > 0 {
		ps.hold(HoldMaxUnavailable, waiting, "%s to be updated in place: another power cycle (or live update of a replica not yet available) "+
			"would take the replicas available or serving below %d (Desired %d − MaxUnavailable %d)",
			count(waiting, "replica waits", "replicas wait"), ps.desired-ps.lim.Unavailable, ps.desired, ps.lim.Unavailable)
	}
}

// describeFallback names the first replicas that cannot be updated in
// place, each with why.
func (ps *pass) describeFallback() string {
	if len(ps.fallback) == 0 {
		return "none of them is a replica the rules may change"
	}
	return firstFew(len(ps.fallback), func(k int) string {
		return fmt.Sprintf("%s (%s)", ps.fallback[k].Replica.Name, ps.fallback[k].Reason)
	})
}
