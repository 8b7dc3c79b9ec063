package replicasettest

import (
	"slices"

	"github.com/replicakit/replicakit/replicaset"
)

// The rules of this file count the known replicas as the bounds do: a
// replica being deleted, or preparing to leave and not taken back, has
// left; one preparing for a power cycle and not taken back is on its way
// onto the wanted revision; one taken back (Cancel) is live as it is.

// leaving reports whether r, a known replica, has left before the pass:
// it is being deleted, or prepares to leave and is not taken back.
func (c *checker) leaving(r *replicaset.Replica) bool {
	return r.Deleting || c.lc != nil && r.Preparing != nil && !r.Preparing.Update && !c.cancel[r.Name]
}

// cycling reports whether r, a known live replica, prepares for a power
// cycle that is not taken back: on its way onto the wanted revision.
func (c *checker) cycling(r *replicaset.Replica) bool {
	return c.lc != nil && r.Preparing != nil && r.Preparing.Update && !c.cancel[r.Name]
}

// liveKnown counts the known replicas that have not left (those taken
// back included).
func (c *checker) liveKnown() int {
	n := 0
	for i := range c.in.Replicas {
		if r := &c.in.Replicas[i]; !c.unknown[r.Name] && !c.leaving(r) {
			n++
		}
	}
	return n
}

// rolloutHolds are the hold kinds that count replicas on older revisions
// left beyond the partition, and only those (while no scale-down is under
// way); sharedHolds count them too, or replicas due for remediation that
// wait (a remediation guard of the same name).
var (
	rolloutHolds = []replicaset.HoldKind{replicaset.HoldPaused, replicaset.HoldOnDelete,
		replicaset.HoldMaxUnavailable, replicaset.HoldMaxPerPass, replicaset.HoldLastAvailable,
		replicaset.HoldZoneByZone, replicaset.HoldUnreachable, replicaset.HoldInPlaceOnly}
	sharedHolds = []replicaset.HoldKind{replicaset.HoldProtected, replicaset.HoldZoneBackoff}
)

// holds states that the holds account for the replicas on older
// revisions left beyond the partition, while the live known replicas
// (those taken back included) are at most K: every hold has a reason and
// waits for at least one replica; and W, the known replicas on older
// revisions left after the pass (not in Delete, Prepare, Update,
// PrepareUpdate or Replace, nor preparing for a power cycle) beyond P,
// plus the live replicas on older revisions in unreachable zones, is
// within R ≤ W ≤ R + X ≤ W + h. R sums the holds of the rollout's own
// kinds (Paused, OnDelete, MaxUnavailable, MaxPerPass, LastAvailable,
// ZoneByZone, Unreachable, InPlaceOnly), X those of the kinds remediation
// shares with it (Protected, ZoneBackoff), and h bounds what remediation
// holds by those kinds: the known live replicas that are protected (with
// Spec.Remediation) or failed in a listed zone (with Spec.Remediation or
// Spec.ReplaceFailed). Without either, then, W = R + X exactly. Partition
// holds count the replicas the partition keeps, MaxSurge holds new
// replicas not yet made, PreDelete and HookAbandoned replicas preparing,
// and the other guards replicas due for remediation: none counts in W.
func (c *checker) holds() {
	spec := &c.in.Spec
	if c.liveKnown() > c.k {
		return // a scale-down: its holds count the replicas it waits to delete
	}
	r, x := 0, 0
	for _, h := range c.p.Holds {
		if h.Reason == "" || h.Waiting <= 0 {
			c.fail("holds", "hold %v waits for %d replicas, with reason %q", h.By, h.Waiting, h.Reason)
		}
		switch {
		case slices.Contains(rolloutHolds, h.By):
			r += h.Waiting
		case slices.Contains(sharedHolds, h.By):
			x += h.Waiting
		}
	}
	gone := setOf(slices.Concat(c.p.Delete, c.p.Prepare, c.p.PrepareUpdate, c.p.Replace, updated(c.p.Update)))
	restarted := setOf(c.p.Restart)
	known, unknown, slack, waitRestart := 0, 0, 0, 0
	for i := range c.in.Replicas {
		rr := &c.in.Replicas[i]
		switch {
		case c.unknown[rr.Name]:
			if !rr.Deleting && old(spec, rr) {
				unknown++
			}
			continue
		case c.leaving(rr):
			continue
		}
		if old(spec, rr) && !c.cycling(rr) && !gone[rr.Name] {
			known++
			if restarted[rr.Name] {
				waitRestart++
			}
		}
		if spec.Remediation != nil && rr.Protected ||
			(spec.Remediation != nil || spec.ReplaceFailed) && rr.Phase == replicaset.PhaseFailed && slices.Contains(spec.Zones, rr.Zone) {
			slack++
		}
	}
	w := max(0, known-c.lim.Partition) + unknown
	if w < r || w-min(w, waitRestart) > r+x || r+x > w+slack {
		c.fail("holds", "%d replicas on older revisions stay beyond partition %d (%d known left, %d unknown); the rollout's holds count %d and those it shares with remediation %d (remediation may hold %d of them): %v",
			w, c.lim.Partition, known, unknown, r, x, slack, c.p.Holds)
	}
}

// lastAvailable states that while a rollout is in progress and K is above
// zero, a pass never takes (Delete, Prepare) the last available known
// replicas on the wanted revision (those that have not left, are not
// remediated (Replace) and are not preparing for a power cycle) unless
// an available replica updated live in the pass (Update, not PowerCycle)
// takes their place, or one waiting for its in-place update (one the
// strategy updates in place, a rolling update not paused, that the pass
// neither takes, updates nor prepares): the package documentation's
// In-place updates count it on the wanted revision, serving as before.
func (c *checker) lastAvailable() {
	spec := &c.in.Spec
	if spec.Revision == "" || c.k == 0 {
		return
	}
	taken := setOf(slices.Concat(c.p.Delete, c.p.Prepare))
	replaced := setOf(c.p.Replace)
	live := map[string]bool{}
	for _, u := range c.p.Update {
		live[u.Replica.Name] = !u.PowerCycle
	}
	// A replica waiting for its in-place update (the per-pass cap or the
	// budget defers it) is on the wanted revision from then on in the
	// pass, serving as before (the package documentation's In-place
	// updates), so it is one of the available replicas on it.
	moved := setOf(slices.Concat(c.p.PrepareUpdate, updated(c.p.Update)))
	waiting := spec.Strategy.Type != replicaset.OnDelete && !spec.Strategy.Paused
	olds, before, after := 0, 0, 0
	for i := range c.in.Replicas {
		r := &c.in.Replicas[i]
		if c.unknown[r.Name] || c.leaving(r) || c.cycling(r) || replaced[r.Name] {
			continue
		}
		if old(spec, r) {
			olds++
			if (live[r.Name] || waiting && c.inPlaceable(r) && !taken[r.Name] && !moved[r.Name]) && r.Available(spec.MinReady, c.in.Now) {
				after++
			}
		} else if r.Available(spec.MinReady, c.in.Now) {
			before++
			if !taken[r.Name] {
				after++
			}
		}
	}
	if olds > 0 && before > 0 && after == 0 {
		c.fail("last available", "a rollout is in progress (%d replicas on older revisions), yet the last available replicas on revision %q leave (%v)",
			olds, spec.Revision, sortedNames(slices.Concat(c.p.Delete, c.p.Prepare)))
	}
}

// surgeCreates states that while a rollout is in progress, the creates
// beyond those the desired count misses (surge creates: Create less
// K − the known replicas that have not left) are at most the replicas
// left to replace: those remediation replaces (Replace), with
// Spec.Remediation those preparing for a power cycle (remediation may
// replace one while its hooks hold it: the replacement comes at once, the
// replica in Replace once it goes), and the known live replicas on older
// revisions that are not protected, not preparing for a power cycle, not
// remediated and not updated in place in the pass (Update,
// PrepareUpdate), and, with listed zones, in no listed zone, or
// in one that does not back off (unless every listed zone that answers
// does) and, with ZoneByZone, in the zone updated (see rollout), before
// the pass's deletions or after them (a scale-down may take the last
// replicas to replace of the zone updated, and the next zone's surge
// comes at once). Surge replicas made in earlier passes that are still
// coming up count against the replicas left in a listed zone: the known
// live replicas made on the wanted revision (Revision is Spec.Revision,
// not empty) not available (not preparing for a power cycle, remediated
// or updated in place in the pass), each
// against those left in its zone (in any listed zone with ZoneByZone,
// and any replica without zones), none against those in no listed zone
// nor below zero.
func (c *checker) surgeCreates() {
	spec := &c.in.Spec
	if spec.Revision == "" || c.p.Create == 0 {
		return
	}
	replaced := setOf(c.p.Replace)
	moved := setOf(slices.Concat(c.p.PrepareUpdate, updated(c.p.Update)))
	live, olds := 0, 0
	for i := range c.in.Replicas {
		r := &c.in.Replicas[i]
		if c.unknown[r.Name] || c.leaving(r) {
			continue
		}
		live++
		if old(spec, r) && !c.cycling(r) && !replaced[r.Name] {
			olds++
		}
	}
	if olds == 0 {
		return // no rollout in progress: creates are the count's
	}
	allOff := c.allBackingOff()
	update, next := c.zoneUpdated(nil), c.zoneUpdated(setOf(slices.Concat(c.p.Delete, c.p.Prepare)))
	left := len(c.p.Replace)
	zoned := len(spec.Zones) > 0
	toReplace, coming := map[string]int{}, map[string]int{} // by listed zone ("" without zones)
	for i := range c.in.Replicas {
		r := &c.in.Replicas[i]
		switch {
		case c.unknown[r.Name] || c.leaving(r) || replaced[r.Name]:
		case c.cycling(r):
			if spec.Remediation != nil {
				left++
			}
		case moved[r.Name]:
		case !old(spec, r):
			if r.Revision == spec.Revision && !r.Available(spec.MinReady, c.in.Now) && (!zoned || slices.Contains(spec.Zones, r.Zone)) {
				coming[r.Zone]++ // a surge replica on its way
			}
		case r.Protected:
		case zoned && !slices.Contains(spec.Zones, r.Zone):
			left++
		case zoned && !allOff && c.backingOff(r.Zone):
		case zoned && spec.Strategy.ZoneByZone && r.Zone != update && r.Zone != next:
		default:
			toReplace[r.Zone]++
		}
	}
	if !zoned || spec.Strategy.ZoneByZone {
		// Without zones, and for a ZoneByZone rollout, a replica coming
		// up anywhere is on its way for any replica left.
		n, m := 0, 0
		for _, k := range toReplace {
			n += k
		}
		for _, k := range coming {
			m += k
		}
		left += max(0, n-m)
	} else {
		for z, n := range toReplace {
			left += max(0, n-coming[z])
		}
	}
	if surge := c.p.Create - max(0, c.k-live); surge > left {
		c.fail("surge creates", "%d creates, %d of them beyond the %d known desired (%d live), for %d replicas left to replace (%d remediated)",
			c.p.Create, surge, c.k, live, left, len(c.p.Replace))
	}
}
