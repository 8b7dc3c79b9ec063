package replicaset

import "slices"

// The deletion order's tiers, lowest deleted first, after the marked
// replicas and a rollout's stage (which callers of each walk apart): a
// group (in no listed zone; in the zone a ZoneByZone rollout updates;
// the rest), and inside it, health (broken: not provisioned or failed;
// not available; the rest). Replicas of the last group that are not
// broken are taken zone by zone, those not available first inside a
// zone: a scale-down keeps the zones level before it prefers one
// replica to another.
const (
	groupUnlisted = iota
	groupUpdating
	groupListed
	healthBroken = 0
	healthDown   = 1
	healthUp     = 2
	tiers        = 9
)

// order is how one walk of the deletion order reads its candidates.
type order struct {
	// match selects the candidates (live, not fixed, not chosen) walked,
	// by their flags: with mask, those whose flags masked are want.
	mask, want flags
	// match, when set, selects further.
	match func(i int) bool
	// size is how many candidates may match at most; a walk of none is
	// skipped.
	size int
	// tiered walks the tiers; without it, the policy's rank and identity
	// alone order the walk (marked replicas).
	tiered bool
	// updating is the zone a ZoneByZone rollout updates, whose replicas
	// form a group of their own; -1 for none.
	updating int
	// need is how many the caller expects to take, a hint.
	need int
	// budgeted says f takes available replicas only within the pass's
	// budget: once it is spent, a tier of available replicas is left
	// after its first candidate (which f passes over, and so says why).
	budgeted bool
}

// tierOf returns current[i]'s tier under o; rebalancing is
// ps.rebalancing().
func (ps *pass) tierOf(i int, o *order, rebalancing bool) uint8 {
	if !o.tiered {
		return 0
	}
	r, group, health := &ps.cur[i], groupListed, healthUp
	if ps.zoneOf != nil {
		switch z := ps.zoneOf[i]; {
		case z < 0:
			group = groupUnlisted
		case int(z) == o.updating:
			group = groupUpdating
		}
	}
	f := ps.fl[i]
	if ps.lazy {
		f = ps.readyFlags(r, f)
	}
	broken, avail := f&fBroken != 0, f&fAvail != 0
	switch {
	case broken && (r.Phase == PhaseFailed || !rebalancing):
		health = healthBroken
	case !avail && !rebalancing:
		health = healthDown
	}
	return uint8(group*3 + health)
}

// each calls f with the candidates o matches in the deletion order, until
// f returns false: by tier, and inside a tier of replicas in listed zones
// (with zones), one at a time from the zone with the most live replicas
// left (the later listed on a tie), skipping zones with no candidate
// left; inside a zone, or without zones, by the policy's rank, then name,
// then UID. f takes the candidate (choose) or passes it over; either way
// the walk goes on to the next.
func (ps *pass) each(o order, f func(i int) bool) {
	if o.size == 0 {
		return
	}
	vs := ps.w.victims(0, o.size)
	mask, want := o.mask|fLive|fFixed|fChosen, o.want|fLive
	rebalancing := ps.rebalancing()
	for i, f := range ps.fl[:len(ps.cur)] {
		if f&mask == want && (o.match == nil || o.match(i)) {
			vs = append(vs, victim{tier: ps.tierOf(i, &o, rebalancing), rank: ps.policy.Rank(ps.cur[i], ps.env), r: &ps.cur[i], i: int32(i)})
		}
	}
	if len(vs) == 0 {
		return
	}
	idx := ps.w.int32s(intsOrder, len(vs))
	// spent reports whether a tier of available replicas is out of the
	// budget's reach.
	spent := func(t int) bool {
		return o.budgeted && t%3 == healthUp && !rebalancing && (ps.budget == 0 || ps.serveBudget == 0)
	}
	// drain walks q in order; false once f stops the walk.
	drain := func(q *queue) bool {
		for j := q.pop(o.need, ps.w); j >= 0; j = q.pop(o.need, ps.w) {
			if !f(int(q.vs[j].i)) {
				return false
			}
			if spent(int(q.vs[j].tier)) {
				break
			}
		}
		return true
	}
	if !o.tiered || !ps.zoned() {
		// The tier is the first column of the order, and the tier of
		// available replicas the last: one queue.
		drain(&queue{vs: vs, idx: idx})
		return
	}
	// Buckets side by side: each tier, and each listed zone of the tiers
	// whose replicas are taken zone by zone.
	k := len(ps.zones)
	bucket := func(v *victim) int {
		t := int(v.tier)
		if t/3 == groupListed && t%3 == healthUp {
			t-- // one drain for the replicas not broken
		}
		b := t * (k + 1)
		if t/3 == groupListed {
			b += 1 + ps.zoneAt(int(v.i))
		}
		return b
	}
	start := make([]int, tiers*(k+1)+1)
	for j := range vs {
		start[bucket(&vs[j])+1]++
	}
	for b := 1; b < len(start); b++ {
		start[b] += start[b-1]
	}
	sorted := ps.w.victims(1, len(vs))[:len(vs)]
	next := slices.Clone(start)
	for j := range vs {
		b := bucket(&vs[j])
		sorted[next[b]] = vs[j]
		next[b]++
	}
	qs := make([]queue, len(start)-1)
	for b := range qs {
		qs[b] = queue{vs: sorted[start[b]:start[b+1]], idx: idx[start[b]:start[b+1]]}
	}
	for t := range tiers {
		base := t * (k + 1)
		if t/3 != groupListed {
			if !drain(&qs[base]) {
				return
			}
			continue
		}
		for {
			best := -1
			for z := range k {
				if q := &qs[base+1+z]; q.next < len(q.vs) && (best < 0 || ps.z[z].live >= ps.z[best].live) {
					best = z
				}
			}
			if best < 0 {
				break
			}
			q := &qs[base+1+best]
			v := &q.vs[q.pop(o.need, ps.w)]
			if !f(int(v.i)) {
				return
			}
			if spent(int(v.tier)) {
				q.next = len(q.vs) // the rest of the zone's are available too
			}
		}
	}
}
