package replicaset

import "strings"

// replace plans the rollout's own work once scaling is planned: surge
// creates on the wanted revision, and deletes of replicas on older
// revisions beyond the partition in the deletion order, within MaxSurge,
// the budget and the per-pass cap; and the holds of those that wait.
func (ps *pass) replace() {
	spec, p, lim := ps.spec, &ps.p, ps.lim
	if ps.old == 0 {
		return
	}
	oldLeft, newLeft := ps.old, ps.onNew+p.Create
	for _, i := range ps.chosen {
		if ps.fl[i]&fNew != 0 {
			newLeft--
		} else {
			oldLeft--
		}
	}
	if lim.Partition > 0 {
		n := min(oldLeft, lim.Partition)
		ps.hold(HoldPartition, n, "%s (Partition %s)", count(n, "replica stays on an older revision", "replicas stay on older revisions"), spec.Strategy.Partition)
	}
	excess := oldLeft - lim.Partition
	if excess <= 0 {
		return
	}
	switch {
	case spec.Strategy.Paused:
		ps.hold(HoldPaused, excess, "the rollout is paused: %s for it to resume", count(excess, "replica on an older revision waits", "replicas on older revisions wait"))
		return
	case spec.Strategy.Type == OnDelete:
		ps.hold(HoldOnDelete, excess, "%s (OnDelete)", count(excess, "replica on an older revision is replaced only when it is deleted", "replicas on older revisions are replaced only when they are deleted"))
		return
	case ps.inPlaceOnly:
		ps.hold(HoldInPlaceOnly, excess, "%s be updated in place, and the update method InPlaceOnly replaces none: %s",
			count(excess, "replica on an older revision cannot", "replicas on older revisions cannot"), ps.describeFallback())
		return
	}
	if ps.zoned() && spec.Strategy.ZoneByZone {
		ps.update = ps.updateZone() // one zone for the whole pass
	}

	// Surge: new replicas up to desired − Partition, within MaxSurge.
	if need := ps.desired - lim.Partition - newLeft; need > 0 {
		room := ps.surgeLeft()
		capped := max(0, min(need, room, ps.limit-p.Create))
		var n int
		if ps.zoned() {
			n = ps.surgeRoom(capped)
		} else {
			// One for each replica left to replace, less the new ones
			// coming up for them already (as surgeRoom): none for a
			// protected one, which no pass replaces.
			n = min(capped, max(0, ps.oldCandidates-(ps.old-oldLeft)-ps.coming))
		}
		ps.create(n)
		switch {
		case n < capped:
			// The zones or protection hold the rest: zoneHolds, or the
			// Protected hold, says which and why.
		case n < need && room > n:
			p.Deferred += min(need, room) - n // over the per-pass cap
		case n < need:
			ps.surgeHold(need - n)
		}
	}

	// Replacement deletes: at most excess, the cap, and the budget for
	// available replicas; none in a zone backing off, and with
	// ZoneByZone none outside the zone updated.
	k := max(0, min(excess, ps.limit-ps.deletes))
	replaced := 0
	take := func(i int) bool {
		if replaced == k {
			return false
		}
		if ps.spend(i) {
			ps.choose(i)
			replaced++
		}
		return replaced < k // chosen, or passed over: MaxUnavailable
	}
	ps.each(order{mask: fNew | fMarked, want: fMarked, need: k, budgeted: true, size: min(ps.marked, ps.oldCandidates)}, take)
	var replaceable func(i int) bool
	if ps.zoned() {
		replaceable = func(i int) bool { return ps.replaceable(ps.zoneAt(i)) }
	}
	ps.each(order{mask: fNew | fMarked, match: replaceable, tiered: true, updating: -1, need: k, budgeted: true, size: ps.oldCandidates}, take)
	waiting := excess - replaced
	if waiting <= 0 {
		return
	}
	if protectedOld := ps.old - ps.oldCandidates; protectedOld > 0 {
		n := min(waiting, protectedOld)
		ps.hold(HoldProtected, n, "%s", count(n, "replica on an older revision is protected from scale-in and is not replaced",
			"replicas on older revisions are protected from scale-in and are not replaced"))
		waiting -= n
	}
	if waiting = ps.zoneHolds(waiting); waiting <= 0 {
		return
	}
	if ps.deletes >= ps.limit {
		ps.hold(HoldMaxPerPass, waiting, "%s for the next pass (MaxPerPass)", count(waiting, "replica on an older revision waits", "replicas on older revisions wait"))
		p.Deferred += waiting
		return
	}
	var also string // what else holds them, and which setting would not
	if ps.heldServing {
		also = "; " + ps.servingNote()
	}
	const noSurge = "no replica is coming up to take their place: MaxUnavailable above 0 would let the rollout replace replicas without a surge replica, within it"
	switch {
	case lim.Unavailable > 0:
	case spec.History.CreatesFailing:
		also += "; creates are failing, so " + noSurge
	case ps.onNew-ps.newAvail == 0 && p.Create == 0:
		also += "; " + noSurge
	}
	ps.hold(HoldMaxUnavailable, waiting,
		"%s for replicas on revision %s to become available: %s, and at least %d (Desired − MaxUnavailable) must stay%s",
		count(waiting, "replica on an older revision waits", "replicas on older revisions wait"), spec.Revision,
		count(ps.avail, "is available", "are available"), ps.desired-lim.Unavailable, also)
}

// updateZone returns the zone a ZoneByZone rollout updates now: the first
// listed zone, not backing off, that still holds replicas to replace; -1
// when none does.
func (ps *pass) updateZone() int {
	for z := range ps.z {
		if ps.z[z].old > 0 && !ps.off[z] {
			return z
		}
	}
	return -1
}

// zoneHolds records the holds of replicas left on older revisions because
// of their zone, at most waiting of them, and returns how many of the
// waiting are left to explain: those in zones backing off, and with
// ZoneByZone those in zones not updated yet (none without zones).
func (ps *pass) zoneHolds(waiting int) int {
	var off, later []string
	nOff, nLater := 0, 0
	for z := range ps.z {
		switch n := ps.z[z].old; {
		case n == 0:
		case ps.off[z]:
			off, nOff = append(off, ps.zones[z]), nOff+n
		case ps.spec.Strategy.ZoneByZone && z != ps.update:
			later, nLater = append(later, ps.zones[z]), nLater+n
		}
	}
	if n := min(waiting, nOff); n > 0 {
		ps.hold(HoldZoneBackoff, n, "%s: creates there failed recently, so none is replaced there until the zone's backoff ends",
			count(n, "replica on an older revision in "+strings.Join(off, ", ")+" waits", "replicas on older revisions in "+strings.Join(off, ", ")+" wait"))
		waiting -= n
	}
	if n := min(waiting, nLater); n > 0 {
		ps.hold(HoldZoneByZone, n, "%s for zone %s to be updated first (ZoneByZone)",
			count(n, "replica on an older revision in "+strings.Join(later, ", ")+" waits", "replicas on older revisions in "+strings.Join(later, ", ")+" wait"),
			ps.zones[max(ps.update, 0)])
		waiting -= n
	}
	return waiting
}

// surgeRoom returns how many of n surge creates may be made: one for
// each replica on an older revision that may be replaced in this pass and
// that no replacement is on its way for. Replicas in zones backing off
// are not replaced, nor with ZoneByZone those outside the zone being
// updated, so no replacement is made for them elsewhere: a zone that
// cannot take VMs keeps its replicas on older revisions, and the zones
// stay within one of each other. Replicas in no listed zone are replaced
// anywhere.
func (ps *pass) surgeRoom(n int) int {
	room, coming := ps.strays, 0
	for z := range ps.z {
		coming += ps.z[z].coming
	}
	for z := range ps.z {
		// A ZoneByZone rollout's creates go where zones are fewest, not
		// always to the zone updated: a replacement on its way anywhere
		// is one for it.
		if c := ps.z[z].coming; ps.replaceable(z) {
			if ps.spec.Strategy.ZoneByZone {
				c = coming
			}
			room += max(0, ps.z[z].old-c)
		}
	}
	return min(n, room)
}

// replaceable reports whether the replicas on older revisions in zone z
// (-1: in no listed zone) may be replaced in this pass: not in a zone
// backing off, and with ZoneByZone only in the zone updated.
func (ps *pass) replaceable(z int) bool {
	return z < 0 || !ps.off[z] && (!ps.spec.Strategy.ZoneByZone || z == ps.update)
}
