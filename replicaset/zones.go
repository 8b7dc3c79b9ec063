package replicaset

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// zoneIndexOf returns zone's position in zones, or -1. It looks the zone
// up by its key (zoneKey) in byKey, a table zoneIndex built once per
// call, and compares names only with the zone the key names; keys that
// several listed zones share fall back to a scan. A scan for every
// replica, whose exit a branch predictor cannot guess when replicas'
// zones alternate, made a zoned Compute at 100,000 replicas about 3 %
// slower (BenchmarkCompute_Zones).
func zoneIndexOf(byKey *[256]int8, zones []string, zone string) int {
	if zone == "" {
		return -1
	}
	k := int(byKey[zoneKey(zone)])
	if k >= 0 && zones[k] == zone {
		return k
	}
	if k == zoneKeyShared {
		return slices.Index(zones, zone)
	}
	return -1
}

// zoneKey is a byte of a non-empty zone name that its last byte and its
// length decide, so that the usual names of a set's few zones differ in it
// (zone-a to zone-z, zone-0 to zone-9, us-east-1a to us-east-1f). Names
// that share a key (zone-7 and zone-10, rack01 and rack11) are told apart
// by a scan.
func zoneKey(zone string) byte { return zone[len(zone)-1] + 7*byte(len(zone)) }

// Entries of a zone table besides a zone's index.
const (
	zoneKeyNone   = -1 // no listed zone has the key
	zoneKeyShared = -2 // several do
)

// zoneIndex fills byKey for zones.
func zoneIndex(byKey *[256]int8, zones []string) {
	for i := range byKey {
		byKey[i] = zoneKeyNone
	}
	for i, z := range zones {
		switch k := &byKey[zoneKey(z)]; {
		case *k == zoneKeyNone && i <= 127:
			*k = int8(i)
		default:
			*k = zoneKeyShared
		}
	}
}

// backingOff reports, per zone, whether backoff avoids it at now, and
// whether every zone backs off: then all are false, so that a set whose
// every zone failed still places and replaces in them all, and no zone is
// healthy for a failed replica's replacement (failedInZones).
func backingOff(zones []string, backoff []ZoneBackoff, now time.Time) (off []bool, all bool) {
	off = make([]bool, len(zones))
	all = len(zones) > 0
	for i, z := range zones {
		off[i] = slices.ContainsFunc(backoff, func(b ZoneBackoff) bool { return b.Zone == z && now.Before(b.Until) })
		all = all && off[i]
	}
	if all {
		clear(off)
	}
	return off, all
}

// create adds n creates to the plan, each placed in a zone (pick) when
// the spec lists zones; when it does and every one is unreachable, emit
// makes them wait (Plan.Deferred).
func (ps *pass) create(n int) {
	if n <= 0 {
		return
	}
	ps.p.Create += n
	for ; n > 0 && ps.zoned(); n-- {
		z := ps.pick()
		t := &ps.z[z]
		t.onNew++
		t.coming++
		t.live++
		t.occ++
		ps.p.CreateZones = append(ps.p.CreateZones, ps.zones[z])
	}
}

// pick returns the zone of the next create, the one zone picker of every
// create: the zone with the fewest replicas on the wanted revision (all
// live replicas, in a set without revisions), skipping zones backing off;
// on a tie, the zone with the most replicas on older revisions that no
// replacement is on its way for (a replica coming up is one: comes), so
// that zones keep the shares they had, and in a set without revisions
// the zone with the fewest replicas coming up; then the zone with the
// fewest replicas of any revision, counting those being deleted (a VM
// being destroyed holds its place until it is gone); then the earlier
// listed. Once replicas on older revisions are gone, only
// replicas on the wanted revision are left: placing by them is what ends
// a rollout with its zones within one of each other, wherever the
// replaced replicas were.
//
// A ZoneByZone rollout replaces replicas in one zone at a time, so the
// zones' live replicas are what its creates must keep level: each goes to
// the zone with the fewest live replicas that stay (in the zone being
// updated, not its replicas on older revisions, which are to go), then
// the zone being updated, then by the order above. So a surge replica
// comes up in the zone whose replica it replaces, and a replica lost
// elsewhere is made again where the zones are fewest.
func (ps *pass) pick() int {
	byLive, u := ps.spec.Strategy.ZoneByZone && ps.old > 0, ps.update
	if byLive && u < 0 {
		u = ps.updateZone()
	}
	// key is zone z's place in the picker's order, lowest first; the
	// earlier listed on a tie.
	key := func(z int) [5]int {
		t := &ps.z[z]
		stay, other := 0, 0 // with byLive: the live replicas that stay, and 1 outside the zone updated
		switch {
		case byLive && z == u:
			stay = t.live - t.old
		case byLive:
			stay, other = t.live, 1
		}
		return [5]int{stay, other, t.onNew, -(t.old - t.coming), t.occ}
	}
	best, bestKey := -1, [5]int{}
	for z := range ps.z {
		if k := key(z); !ps.off[z] && (best < 0 || slices.Compare(k[:], bestKey[:]) < 0) {
			best, bestKey = z, k
		}
	}
	return best
}

// rebalancing reports whether Spec.Rebalance applies to this pass: the
// spec lists zones, every zone and replica answers, and no rollout is in
// progress.
func (ps *pass) rebalancing() bool {
	return ps.spec.Rebalance && ps.zoned() && len(ps.spec.Unreachable) == 0 && ps.unknowns == 0 && !ps.inRollout()
}

// rebalance, with Spec.Rebalance, creates the one replica that moves the
// set toward balance: when the set is at its desired count with nothing
// being deleted and no live replica coming up, and the scale-down that
// follows can take a replica that is not protected either from no listed
// zone or from a zone holding at least two more than the one created in.
// Each move so found brings the zones strictly closer, so moves end.
func (ps *pass) rebalance() {
	if !ps.rebalancing() || ps.live != ps.desired || ps.gone > 0 || ps.p.Create > 0 || len(ps.chosen) > 0 || len(ps.back) > 0 {
		return
	}
	stray := false
	for i := range ps.cur {
		f := ps.fl[i]
		if f&fLive == 0 {
			continue
		}
		if ps.cur[i].Phase != PhaseFailed && f&fAvail == 0 {
			return // coming up
		}
		stray = stray || f&fFixed == 0 && ps.zoneAt(i) < 0
	}
	to := ps.pick()
	if stray || slices.ContainsFunc(ps.z, func(t zoneTally) bool { return t.free > 0 && t.live >= ps.z[to].live+2 }) {
		ps.create(1)
	}
}

// keepAvailable, with Spec.Rebalance, takes back the scale-down's victims
// (pass.chosen from the from'th) that would take the available replicas to
// the desired count or below: every victim that is not available goes,
// and available ones only while more than the desired count stay.
func (ps *pass) keepAvailable(from int) {
	avail := ps.avail
	kept := ps.chosen[:from]
	for _, i := range ps.chosen[from:] {
		if ps.fl[i]&fAvail != 0 {
			if avail <= ps.desired {
				ps.unchoose(i)
				continue
			}
			avail--
		}
		kept = append(kept, i)
	}
	ps.chosen = kept
}

// unbalanced says why the listed zones' live replicas will differ by more
// than one after the plan is carried out, or "" when they will not; held
// is how many deletes Spec.Rebalance held back.
func (ps *pass) unbalanced(held int) string {
	p := &ps.p
	if len(ps.spec.Zones) > 0 && !ps.zoned() {
		return fmt.Sprintf("every listed zone is unreachable (%s): no replica can be made or deleted in them",
			strings.Join(ps.spec.Zones, ", "))
	}
	if !ps.zoned() {
		return ""
	}
	lo, hi := ps.z[0].live, ps.z[0].live
	for _, t := range ps.z {
		lo, hi = min(lo, t.live), max(hi, t.live)
	}
	if hi-lo <= 1 {
		return ""
	}
	pinned := false // a zone above the rest has no candidate left
	parts := make([]string, len(ps.zones))
	var off []string // the zones backing off
	for z, t := range ps.z {
		pinned = pinned || t.live > lo+1 && t.free == 0
		parts[z] = fmt.Sprintf("%s=%d", ps.zones[z], t.live)
		if ps.off[z] {
			off = append(off, ps.zones[z])
		}
	}
	spread := fmt.Sprintf("zones hold %s live replicas", strings.Join(parts, " "))
	early := slices.ContainsFunc(ps.chosen, func(i int) bool {
		return ps.cur[i].MarkedForDeletion || ps.tierOf(i, &order{tiered: true, updating: -1}, ps.rebalancing()) != groupListed*3+healthUp
	})
	switch {
	case held > 0:
		return fmt.Sprintf("%s: rebalancing, deletes wait for replicas to become available", spread)
	case len(off) > 0 && p.Create > 0:
		return fmt.Sprintf("%s: creates avoid %s, backing off after failures", spread, strings.Join(off, ", "))
	case len(off) > 0 && ps.rebalancing() && p.Create == 0 && len(ps.chosen) == 0:
		return fmt.Sprintf("%s: rebalancing waits, creates avoid %s, backing off after failures", spread, strings.Join(off, ", "))
	case p.Deferred > 0:
		return fmt.Sprintf("%s: the per-pass cap deferred %d", spread, p.Deferred)
	case ps.rebalancing():
		return fmt.Sprintf("%s: rebalancing, one replica at a time, create before delete", spread)
	case p.Shortfall.Count > 0 || pinned && len(ps.chosen) > 0:
		return fmt.Sprintf("%s: protected replicas cannot go", spread)
	case early:
		return fmt.Sprintf("%s: marked, broken or unlisted replicas went first", spread)
	case ps.unlisted > 0:
		return fmt.Sprintf("%s, and %d in zones not listed: replicas are not moved between zones", spread, ps.unlisted)
	}
	return fmt.Sprintf("%s: replicas are not moved between zones", spread)
}
