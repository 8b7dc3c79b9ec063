package replicaset

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// zoning is a rollout pass's view of the listed zones (Spec.Zones).
type zoning struct {
	// at holds, by index into current, each replica's zone: its index
	// into Spec.Zones, or -1 when in no listed zone.
	at []int32
	// live counts each zone's live replicas as the pass plans: victims
	// chosen leave, creates placed arrive.
	live []int
	// occ counts each zone's live replicas and those being deleted, with
	// creates placed.
	occ []int
	// old counts each zone's live, unprotected replicas on older
	// revisions not yet chosen.
	old []int
	// off reports each zone backing off (backingOff).
	off []bool
	// coming counts each zone's live replicas on the wanted revision not
	// yet available: replacements on their way.
	coming []int
	// onNew counts each zone's live replicas on the wanted revision, with
	// creates placed.
	onNew []int
	// strays counts the live, unprotected replicas on older revisions in
	// no listed zone.
	strays int
	// update is the zone a ZoneByZone rollout updates in this pass
	// (updateZone, once scaling is planned), or -1.
	update int
}

// zoned reports whether the pass spreads over zones.
func (ro *rollout) zoned() bool { return len(ro.spec.Zones) > 0 }

// zoneAt returns current[i]'s zone, or -1.
func (ro *rollout) zoneAt(i int) int { return int(ro.z.at[i]) }

// placeCreates places n creates and returns their zones: each in the
// listed zone with the fewest replicas on the wanted revision (those
// placed before it included), skipping zones backing off; on a tie, the
// zone with the most replicas on older revisions that no replacement is
// on its way for, so that zones keep the share they had; then the zone
// with the fewest replicas of any revision, counting those being deleted
// (a VM being destroyed holds its place until it is gone); then the
// earlier listed. Once replicas on older revisions are gone, only
// replicas on the wanted revision are left: placing by them is what ends
// a rollout with its zones within one of each other, wherever the
// replaced replicas were.
//
// A ZoneByZone rollout replaces replicas in one zone at a time, so the
// zones' live replicas are what its creates must keep level: each goes to
// the listed zone with the fewest live replicas that stay (those placed
// before it included; in the zone being updated, not its replicas on
// older revisions, which are to go), then the zone being updated, then by
// the order above. So a surge replica comes up in the zone whose replica
// it replaces, and a replica lost elsewhere is made again where the
// zones are fewest.
func (ro *rollout) placeCreates(n int) []string {
	out := make([]string, n)
	byLive, u := ro.spec.Strategy.ZoneByZone, ro.z.update
	if byLive && u < 0 {
		u = ro.updateZone()
	}
	stay := func(z int) int { // live replicas that stay in zone z
		if z == u {
			return ro.z.live[z] - ro.z.old[z]
		}
		return ro.z.live[z]
	}
	for i := range out {
		best := -1
		for z := range ro.z.occ {
			switch {
			case ro.z.off[z]:
			case best < 0:
				best = z
			case byLive && stay(z) != stay(best):
				if stay(z) < stay(best) {
					best = z
				}
			case byLive && (z == u || best == u):
				if z == u {
					best = z
				}
			case ro.z.onNew[z] < ro.z.onNew[best]:
				best = z
			case ro.z.onNew[z] > ro.z.onNew[best]:
			case ro.z.old[z]-ro.z.coming[z] > ro.z.old[best]-ro.z.coming[best]:
				best = z
			case ro.z.old[z]-ro.z.coming[z] < ro.z.old[best]-ro.z.coming[best]:
			case ro.z.occ[z] < ro.z.occ[best]:
				best = z
			}
		}
		ro.z.onNew[best]++
		ro.z.coming[best]++
		ro.z.live[best]++
		ro.z.occ[best]++
		out[i] = ro.spec.Zones[best]
	}
	return out
}

// updateZone returns the zone a ZoneByZone rollout updates now: the first
// listed zone, not backing off, that still holds replicas to replace; -1
// when none does.
func (ro *rollout) updateZone() int {
	for z, n := range ro.z.old {
		if n > 0 && !ro.z.off[z] {
			return z
		}
	}
	return -1
}

// drain calls f with the replicas of the groups not yet chosen: those in
// no listed zone first, in the policy's order, then one at a time from the
// listed zone with the most live replicas left (the later listed on a
// tie), the policy's order inside it. When replacing, zones backing off
// are passed over (their replicas are not replaced while no replacement
// can be made there), and with ZoneByZone every zone but the one being
// updated. f returns false to stop; true whether it chose the replica or
// passed it over.
func (ro *rollout) drain(f func(i int) bool, replacing bool, gs ...int) {
	k := len(ro.spec.Zones)
	lists := make([][]int, k)
	u := -2 // every zone
	if replacing && ro.spec.Strategy.ZoneByZone {
		u = ro.z.update
	}
	for _, i := range ro.first(-1, gs...) {
		z := ro.zoneAt(i)
		switch {
		case z < 0:
			if !f(i) {
				return
			}
		case replacing && (ro.z.off[z] || (u != -2 && z != u)):
		default:
			lists[z] = append(lists[z], i)
		}
	}
	for {
		best := -1
		for z := range lists {
			if len(lists[z]) > 0 && (best < 0 || ro.z.live[z] >= ro.z.live[best]) {
				best = z
			}
		}
		if best < 0 {
			return
		}
		i := lists[best][0]
		lists[best] = lists[best][1:]
		if !f(i) {
			return
		}
	}
}

// zoneSpread says how far apart the listed zones' live replicas will be
// once the plan is carried out, when more than one: "a=3 b=1". Replicas
// being deleted are not counted.
func (ro *rollout) zoneSpread() string {
	lo, hi := ro.z.live[0], ro.z.live[0]
	for _, n := range ro.z.live {
		lo, hi = min(lo, n), max(hi, n)
	}
	if hi-lo <= 1 {
		return ""
	}
	parts := make([]string, len(ro.z.live))
	for z, n := range ro.z.live {
		parts[z] = fmt.Sprintf("%s=%d", ro.spec.Zones[z], n)
	}
	return "live replicas per zone will be " + strings.Join(parts, " ")
}

// stagedEntry is a scale-down candidate with the stage of the order it
// stands in (see scaleDown).
type stagedEntry struct {
	stage int // stageOld, stageNew or stageKept
	i     int
}

// Scale-down stages after marked replicas.
const (
	stageOld  = iota // on older revisions, while more than the partition remain
	stageNew         // on the wanted revision, unless a rolling update holds them
	stageKept        // on older revisions the partition would keep
)

// scaleDownZoned chooses a zoned scale-down's victims after the marked
// ones: replicas in no listed zone first; then, when u is a zone (the one
// a ZoneByZone rollout updates), its replicas on older revisions that may
// go; then one at a time from the listed zone with the most live replicas
// left (the later listed on a tie), inside it the first candidate the
// stages allow, in stage order. try takes a candidate (true) or passes it
// over; blocked reports whether the rolling update holds the wanted
// revision's replicas for now.
func (ro *rollout) scaleDownZoned(n, u int, try func(i int) bool, oldAllowed, blocked func() bool) {
	k := len(ro.spec.Zones)
	lists := make([][]stagedEntry, k+1) // lists[k]: no listed zone
	add := func(stage int, gs ...int) {
		for _, g := range gs {
			for _, i := range ro.first(-1, g) {
				z := ro.zoneAt(i)
				if z < 0 {
					z = k
				}
				lists[z] = append(lists[z], stagedEntry{stage, i})
			}
		}
	}
	old := []int{groupOldBroken, groupOldUnavailable, groupOldRest}
	add(stageOld, old...)
	add(stageNew, groupNewBroken, groupNewUnavailable, groupNewRest)
	add(stageKept, old...)
	// next takes the first candidate of list z the stages allow, dropping
	// those passed over for good; it reports whether it took one.
	next := func(z int) bool {
		for len(lists[z]) > 0 {
			e := lists[z][0]
			switch {
			case ro.isChosen(e.i):
			case e.stage == stageOld && !oldAllowed():
			case e.stage == stageNew && blocked():
				return false // may be allowed once replicas on older revisions go
			default:
				if try(e.i) {
					lists[z] = lists[z][1:]
					return true
				}
			}
			lists[z] = lists[z][1:]
		}
		return false
	}
	// updated takes the first replica on an older revision of the zone
	// being updated that may go, dropping those passed over; it reports
	// whether it took one.
	updated := func() bool {
		for u >= 0 && len(lists[u]) > 0 && lists[u][0].stage == stageOld {
			e := lists[u][0]
			lists[u] = lists[u][1:]
			if !ro.isChosen(e.i) && oldAllowed() && try(e.i) {
				return true
			}
		}
		return false
	}
	order := make([]int, k)
	for len(ro.p.Delete) < n {
		if next(k) || updated() {
			continue
		}
		for z := range order {
			order[z] = z
		}
		// Fullest first, the later listed on a tie.
		slices.SortStableFunc(order, func(a, b int) int {
			if c := cmp.Compare(ro.z.live[b], ro.z.live[a]); c != 0 {
				return c
			}
			return cmp.Compare(b, a)
		})
		took := false
		for _, z := range order {
			if took = next(z); took {
				break
			}
		}
		if !took {
			return
		}
	}
}

// countZones fills z: each replica's zone, each zone's live replicas and
// those on older revisions that may be replaced, and the zones backing off.
func (ro *rollout) countZones() {
	k := len(ro.spec.Zones)
	zc := zoneCounts{zones: ro.spec.Zones, byKey: &ro.w.zoneKeys}
	zoneIndex(zc.byKey, zc.zones)
	counts := make([]int, 5*k)
	ro.z = zoning{at: ro.w.int32s(intsZones, len(ro.current)), live: counts[:k:k], old: counts[k : 2*k : 2*k],
		coming: counts[2*k : 3*k : 3*k], occ: counts[3*k : 4*k : 4*k], onNew: counts[4*k:],
		off: backingOff(ro.spec, ro.env.Now), update: -1}
	for i := range ro.current {
		r := &ro.current[i]
		z := zc.index(r.Zone)
		ro.z.at[i] = int32(z)
		if r.Deleting {
			if z >= 0 {
				ro.z.occ[z]++
			}
			continue
		}
		if z < 0 {
			if !r.Protected && !ro.spec.onRevision(r) {
				ro.z.strays++
			}
			continue
		}
		ro.z.live[z]++
		ro.z.occ[z]++
		switch {
		case !ro.spec.onRevision(r):
			if !r.Protected {
				ro.z.old[z]++
			}
		default:
			ro.z.onNew[z]++
			if !r.Available(ro.spec.MinReady, ro.env.Now) {
				ro.z.coming[z]++
			}
		}
	}
}

// zoneHolds records the holds of replicas left on older revisions because
// of their zone, at most waiting of them, and returns how many of the
// waiting are left to explain: those in zones backing off, and with
// ZoneByZone those in zones not updated yet.
func (ro *rollout) zoneHolds(waiting int) int {
	var off, later []string
	nOff, nLater := 0, 0
	u := ro.z.update
	for z, n := range ro.z.old {
		switch {
		case n == 0:
		case ro.z.off[z]:
			off, nOff = append(off, ro.spec.Zones[z]), nOff+n
		case ro.spec.Strategy.ZoneByZone && z != u:
			later, nLater = append(later, ro.spec.Zones[z]), nLater+n
		}
	}
	if n := min(waiting, nOff); n > 0 {
		ro.hold(HoldZoneBackoff, n, fmt.Sprintf(
			"%d replicas on older revisions in %s wait: creates there failed recently, so none is replaced there until the zone's backoff ends",
			n, strings.Join(off, ", ")))
		waiting -= n
	}
	if n := min(waiting, nLater); n > 0 {
		ro.hold(HoldZoneByZone, n, fmt.Sprintf(
			"%d replicas on older revisions in %s wait for zone %s to be updated first (ZoneByZone)",
			n, strings.Join(later, ", "), ro.spec.Zones[max(u, 0)]))
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
func (ro *rollout) surgeRoom(n int) int {
	room := ro.z.strays
	if u := ro.z.update; ro.spec.Strategy.ZoneByZone {
		// Its creates go where zones are fewest, not always to the zone
		// updated: a replacement on its way anywhere is one for it.
		coming := 0
		for _, c := range ro.z.coming {
			coming += c
		}
		if u >= 0 {
			room += max(0, ro.z.old[u]-coming)
		}
		return min(n, room)
	}
	for z, old := range ro.z.old {
		if !ro.z.off[z] {
			room += max(0, old-ro.z.coming[z])
		}
	}
	return min(n, room)
}
