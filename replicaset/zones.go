package replicaset

import (
	"container/heap"
	"fmt"
	"slices"
	"strings"
	"time"
)

// zoneCounts holds the listed zones, each replica's zone (see of), and the
// live replicas (not being deleted, protected or not) in each zone.
type zoneCounts struct {
	zones []string
	// of holds, by index into current, each replica's zone (zone reads
	// it): -1 in no listed zone; its index into zones for a candidate in
	// the healthy tier; that plus len(zones) for any other replica, so
	// that the victims' pass skips those without reading them.
	of   []int32
	live []int
	// free counts each listed zone's live, unprotected replicas, and
	// healthy those of them in the healthy tier; stray counts the live
	// replicas in no listed zone; early indexes the candidates (live,
	// unprotected) in the tiers before the healthy one.
	free, healthy []int
	stray         int
	early         []int
	// rebalance is Spec.Rebalance: replicas coming up are not broken.
	rebalance bool
	// byKey finds a zone by its key (see index).
	byKey *[256]int8
}

// newZoneCounts returns empty counts for spec's zones and n replicas;
// Compute adds each replica (add), then finishes them (finish).
func newZoneCounts(spec Spec, n int, w *scratch) zoneCounts {
	k := len(spec.Zones)
	zc := zoneCounts{zones: spec.Zones, of: w.int32s(intsZones, n), rebalance: spec.Rebalance, byKey: &w.zoneKeys}
	zoneIndex(zc.byKey, zc.zones)
	counts := make([]int, 3*k)
	zc.live, zc.free, zc.healthy = counts[:k:k], counts[k:2*k:2*k], counts[2*k:]
	return zc
}

// add counts current[i], which is r.
func (zc *zoneCounts) add(i int, r *Replica) {
	z := zc.index(r.Zone)
	other := int32(z)
	if z >= 0 {
		other += int32(len(zc.zones))
	}
	zc.of[i] = other
	switch {
	case r.Deleting:
		return
	case z >= 0:
		zc.live[z]++
	default:
		zc.stray++
	}
	if r.Protected {
		return
	}
	if zc.tier(r, z) != zoneTierHealthy {
		zc.early = append(zc.early, i)
		return
	}
	zc.of[i] = int32(z)
	zc.free[z]++
	zc.healthy[z]++
}

// zone returns current[i]'s zone: its index into the listed zones, or -1.
func (zc zoneCounts) zone(i int) int {
	z := int(zc.of[i])
	if z >= len(zc.zones) {
		z -= len(zc.zones)
	}
	return z
}

// finish counts the early tiers' candidates into their zones' free ones.
func (zc *zoneCounts) finish() {
	for _, i := range zc.early {
		if z := zc.zone(i); z >= 0 {
			zc.free[z]++
		}
	}
}

// index returns zone's position in the listed zones, or -1. It looks the
// zone up by its key (zoneKey) in a table built once per call, and compares
// names only with the zone the key names; keys that several listed zones
// share fall back to a scan. A scan for every replica, whose exit a branch
// predictor cannot guess when replicas' zones alternate, made a zoned
// Compute at 100,000 replicas about 3 % slower (BenchmarkCompute_Zones).
func (zc zoneCounts) index(zone string) int {
	if zone == "" {
		return -1
	}
	k := int(zc.byKey[zoneKey(zone)])
	if k >= 0 && zc.zones[k] == zone {
		return k
	}
	if k == zoneKeyShared {
		return zc.scan(zone)
	}
	return -1
}

// scan returns zone's position in the listed zones, or -1, looking at each.
// It is index's fallback, kept apart so that index stays small enough to
// inline.
func (zc zoneCounts) scan(zone string) int {
	return slices.Index(zc.zones, zone)
}

// zoneKey is a byte of a non-empty zone name that its last byte and its
// length decide, so that the usual names of a set's few zones differ in it
// (zone-a to zone-z, zone-0 to zone-9, us-east-1a to us-east-1f). Names
// that share a key (zone-7 and zone-10, rack01 and rack11) are told apart
// by a scan. It reads one byte: a key from more of the name, which told
// those apart too, made index too large to inline, and a zoned Compute at
// 100,000 replicas 5 % slower.
func zoneKey(zone string) byte { return zone[len(zone)-1] + 7*byte(len(zone)) }

// Entries of zoneCounts.byKey besides a zone's index.
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

// backingOff reports, per listed zone, whether spec.ZoneBackoff avoids it
// at now; all false when every listed zone is backing off, so that a set
// whose every zone failed still tries them all.
func backingOff(spec Spec, now time.Time) []bool {
	off := make([]bool, len(spec.Zones))
	all := len(spec.Zones) > 0
	for i, z := range spec.Zones {
		for _, b := range spec.ZoneBackoff {
			if b.Zone == z && now.Before(b.Until) {
				off[i] = true
			}
		}
		all = all && off[i]
	}
	if all {
		clear(off)
	}
	return off
}

// assignZones returns the zone of each of n new replicas: each goes to the
// listed zone with the fewest live replicas (those already assigned
// included), skipping zones backing off, the earlier listed zone on a tie.
func assignZones(spec Spec, zc zoneCounts, n int, now time.Time) []string {
	if n == 0 || len(spec.Zones) == 0 {
		return nil
	}
	off := backingOff(spec, now)
	counts := slices.Clone(zc.live)
	out := make([]string, n)
	for i := range out {
		best := -1
		for z := range counts {
			if !off[z] && (best < 0 || counts[z] < counts[best]) {
				best = z
			}
		}
		counts[best]++
		out[i] = spec.Zones[best]
	}
	return out
}

// Zone tiers of the deletion order, lowest deleted first (see Compute).
const (
	zoneTierMarked   = iota // marked for deletion
	zoneTierUnlisted        // in no listed zone
	zoneTierBroken          // not provisioned or failed
	zoneTierHealthy         // the rest: taken from the most populated zone
)

// tier places a candidate in the zone tiers.
func (zc zoneCounts) tier(r *Replica, zone int) int {
	switch {
	case r.MarkedForDeletion:
		return zoneTierMarked
	case zone < 0:
		return zoneTierUnlisted
	case r.Phase == PhaseFailed, r.Phase == PhasePending && !zc.rebalance:
		return zoneTierBroken
	}
	return zoneTierHealthy
}

// zonedVictim is a deletion candidate with its tier and zone.
type zonedVictim struct {
	victim
	tier, zone int
}

func compareZoned(a, b zonedVictim) int {
	if a.tier != b.tier {
		return a.tier - b.tier
	}
	return compareVictims(a.victim, b.victim)
}

// chooseZonedVictims returns the first n deletion candidates in the zoned
// deletion order that Compute states: marked, then in no listed zone, then
// broken, each tier by policy and identity; then the healthy ones, each
// taken from the listed zone with the most live replicas left (the later
// listed zone on a tie), by policy and identity inside the zone.
//
// It ranks only what it may take: the early tiers (usually few), then,
// once counting has said how many victims each zone gives, the healthy
// candidates of those zones, each zone's ordered only as far as its
// victims go.
func chooseZonedVictims(current []Replica, zc zoneCounts, n int, policy Ranker, env Env, w *scratch) []Replica {
	if n == 0 {
		return nil
	}
	early := make([]zonedVictim, 0, len(zc.early))
	for _, i := range zc.early {
		r, z := &current[i], zc.zone(i)
		early = append(early, zonedVictim{victim{marked: r.MarkedForDeletion, rank: policy.Rank(*r, env), r: r}, zc.tier(r, z), z})
	}
	slices.SortFunc(early, compareZoned)
	if len(early) >= n {
		return replicasOf(early[:n])
	}
	counts := slices.Clone(zc.live)
	out := make([]Replica, 0, n)
	for _, v := range early {
		out = append(out, *v.r)
		if v.zone >= 0 {
			counts[v.zone]--
		}
	}
	order := drain(counts, zc.healthy, n-len(early))
	want := countEach(order, len(zc.zones))
	// The healthy candidates of each zone that gives victims, side by
	// side (vs[start[z]:start[z+1]]), each zone's ordered as far as its
	// victims go.
	start := make([]int, len(zc.zones)+1)
	for z := range zc.zones {
		start[z+1] = start[z]
		if want[z] > 0 {
			start[z+1] += zc.healthy[z]
		}
	}
	vs := w.victims(start[len(zc.zones)])[:start[len(zc.zones)]]
	next := slices.Clone(start[:len(zc.zones)])
	for i, z := range zc.of {
		if uint32(z) >= uint32(len(want)) || want[z] == 0 {
			continue // not a healthy candidate, or its zone gives none
		}
		r := &current[i]
		vs[next[z]] = victim{rank: policy.Rank(*r, env), r: r}
		next[z]++
	}
	chosen := make([][]*Replica, len(zc.zones))
	for z := range zc.zones {
		if want[z] == 0 {
			continue
		}
		part := vs[start[z]:start[z+1]]
		for _, j := range firstInOrder(part, want[z], w) {
			chosen[z] = append(chosen[z], part[j].r)
		}
	}
	taken := make([]int, len(zc.zones))
	for _, z := range order {
		out = append(out, *chosen[z][taken[z]])
		taken[z]++
	}
	return out
}

// drain returns the zone of each of up to n healthy victims in turn: the
// zone with the most live replicas left among those with a candidate left,
// the later listed on a tie.
func drain(counts, healthy []int, n int) []int {
	h := &zoneHeap{counts: counts}
	left := slices.Clone(healthy)
	for z := range counts {
		if left[z] > 0 {
			h.zones = append(h.zones, z)
		}
	}
	heap.Init(h)
	var order []int
	for len(order) < n && h.Len() > 0 {
		z := h.zones[0]
		order = append(order, z)
		counts[z]--
		if left[z]--; left[z] == 0 {
			heap.Pop(h)
		} else {
			heap.Fix(h, 0)
		}
	}
	return order
}

func countEach(order []int, zones int) []int {
	k := make([]int, zones)
	for _, z := range order {
		k[z]++
	}
	return k
}

func replicasOf(vs []zonedVictim) []Replica {
	out := make([]Replica, len(vs))
	for i := range vs {
		out[i] = *vs[i].r
	}
	return out
}

// zoneHeap orders zones by live replicas, most first, the later listed
// first on a tie.
type zoneHeap struct {
	zones  []int
	counts []int
}

func (h *zoneHeap) Len() int { return len(h.zones) }
func (h *zoneHeap) Less(i, j int) bool {
	a, b := h.zones[i], h.zones[j]
	if h.counts[a] != h.counts[b] {
		return h.counts[a] > h.counts[b]
	}
	return a > b
}
func (h *zoneHeap) Swap(i, j int) { h.zones[i], h.zones[j] = h.zones[j], h.zones[i] }
func (h *zoneHeap) Push(x any)    { h.zones = append(h.zones, x.(int)) }
func (h *zoneHeap) Pop() any {
	z := h.zones[len(h.zones)-1]
	h.zones = h.zones[:len(h.zones)-1]
	return z
}

// unbalanced says why the listed zones' live replicas will differ by more
// than one after p is carried out, or "" when they will not; held is how
// many deletes Spec.Rebalance held back.
func unbalanced(spec Spec, zc zoneCounts, p Plan, held int, now time.Time) string {
	// after counts each listed zone's live replicas once p is carried out,
	// left its candidates (live, unprotected), stray the live replicas in
	// no listed zone.
	after := slices.Clone(zc.live)
	left, stray := slices.Clone(zc.free), zc.stray
	for _, r := range p.Delete {
		if z := zc.index(r.Zone); z >= 0 {
			after[z]--
			left[z]--
		}
	}
	for _, zone := range p.CreateZones {
		after[zc.index(zone)]++
	}
	lo, hi := slices.Min(after), slices.Max(after)
	if hi-lo <= 1 {
		return ""
	}
	spread := fmt.Sprintf("zones hold %s live replicas", counts(spec.Zones, after))
	var off []string
	for z, b := range backingOff(spec, now) {
		if b {
			off = append(off, spec.Zones[z])
		}
	}
	pinned := false // a zone above the rest has no candidate left
	for z := range after {
		pinned = pinned || after[z] > lo+1 && left[z] == 0
	}
	early := slices.ContainsFunc(p.Delete, func(r Replica) bool { return zc.tier(&r, zc.index(r.Zone)) != zoneTierHealthy })
	switch {
	case held > 0:
		return fmt.Sprintf("%s: rebalancing, deletes wait for replicas to become available", spread)
	case len(off) > 0 && p.Create > 0:
		return fmt.Sprintf("%s: creates avoid %s, backing off after failures", spread, strings.Join(off, ", "))
	case len(off) > 0 && spec.Rebalance && p.Create == 0 && len(p.Delete) == 0:
		return fmt.Sprintf("%s: rebalancing waits, creates avoid %s, backing off after failures", spread, strings.Join(off, ", "))
	case p.Deferred > 0:
		return fmt.Sprintf("%s: the per-pass cap deferred %d", spread, p.Deferred)
	case spec.Rebalance:
		return fmt.Sprintf("%s: rebalancing, one replica at a time, create before delete", spread)
	case p.Shortfall.Count > 0 || pinned && len(p.Delete) > 0:
		return fmt.Sprintf("%s: protected replicas cannot go", spread)
	case early:
		return fmt.Sprintf("%s: marked, broken or unlisted replicas went first", spread)
	case stray > 0:
		return fmt.Sprintf("%s, and %d in zones not listed: replicas are not moved between zones", spread, stray)
	}
	return fmt.Sprintf("%s: replicas are not moved between zones", spread)
}

// counts renders zones and their counts as "a=2 b=1".
func counts(zones []string, n []int) string {
	parts := make([]string, len(zones))
	for i, z := range zones {
		parts[i] = fmt.Sprintf("%s=%d", z, n[i])
	}
	return strings.Join(parts, " ")
}

// surge returns, with Spec.Rebalance, the zone of the one replica to create
// to move the set toward balance: when the set is at its desired count
// with nothing being deleted and no live replica coming up, and the
// scale-down that follows can take a replica that is not protected either
// from no listed zone or from a zone holding at least two more than the
// one created in. Else "". Each move so found brings the zones strictly
// closer, so moves end.
func surge(spec Spec, current []Replica, zc zoneCounts, now time.Time) string {
	stray := false
	free := make([]bool, len(zc.zones)) // the zone has an unprotected replica
	for i := range current {
		r := &current[i]
		if r.Deleting || comingUp(r, spec.MinReady, now) {
			return ""
		}
		switch z := zc.zone(i); {
		case r.Protected:
		case z < 0:
			stray = true
		default:
			free[z] = true
		}
	}
	zone := assignZones(spec, zc, 1, now)[0]
	if stray {
		return zone
	}
	to := zc.live[zc.index(zone)]
	for z, n := range zc.live {
		if free[z] && n >= to+2 {
			return zone
		}
	}
	return ""
}

// comingUp reports whether live replica r is not yet available but has not
// failed either.
func comingUp(r *Replica, minReady time.Duration, now time.Time) bool {
	return r.Phase != PhaseFailed && !r.Available(minReady, now)
}

// keepAvailable returns the victims, in order, that Spec.Rebalance lets go
// in this pass: every one that is not available, and available ones only
// while the available live replicas stay above the desired count; and how
// many it held back.
func keepAvailable(spec Spec, current, victims []Replica, now time.Time) ([]Replica, int) {
	avail := 0
	for i := range current {
		if current[i].Available(spec.MinReady, now) {
			avail++
		}
	}
	out := victims[:0:0]
	for _, v := range victims {
		if v.Available(spec.MinReady, now) {
			if avail <= spec.Desired {
				continue
			}
			avail--
		}
		out = append(out, v)
	}
	return out, len(victims) - len(out)
}
