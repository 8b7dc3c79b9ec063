package replicasettest

import (
	"slices"

	"github.com/replicakit/replicakit/replicaset"
)

// rollout states what a rollout may replace, while the live known
// replicas (those taken back included) are at most K, so that no
// scale-down is under way: a replica leaves (Delete or Prepare, not
// already preparing, and not replaced by remediation) only when it is on
// an older revision, and then not while the rollout is paused or
// OnDelete; the replicas on older revisions stay at least min(before, P),
// counting those updated in place, or preparing for it, as moved; and with zones, none leaves
// from a listed zone that backs off while another listed zone that
// answers does not, nor with ZoneByZone from another zone than the one
// updated (a replica marked for deletion, or pending or failed, leaves
// wherever it is).
func (c *checker) rollout() {
	spec := &c.in.Spec
	if spec.Revision == "" {
		return
	}
	replaced := setOf(c.p.Replace)
	moved := setOf(updated(c.p.Update))
	for _, r := range c.p.PrepareUpdate {
		moved[r.Name] = true
	}
	live, before, after := 0, 0, 0
	for i := range c.in.Replicas {
		r := &c.in.Replicas[i]
		if c.unknown[r.Name] || r.Deleting || c.lc != nil && r.Preparing != nil && !r.Preparing.Update && !c.cancel[r.Name] {
			continue
		}
		live++
		cycling := c.lc != nil && r.Preparing != nil && !c.cancel[r.Name] // on its way onto the wanted revision
		if old(spec, r) && !cycling && !replaced[r.Name] {
			before++
			if !moved[r.Name] {
				after++
			}
		}
	}
	if live > c.k {
		return // a scale-down: the deletion order chooses
	}
	allOff := c.allBackingOff()
	update := c.zoneUpdated(nil)
	for _, l := range []list{{"Delete", c.p.Delete}, {"Prepare", c.p.Prepare}} {
		for _, d := range l.rs {
			r := c.byName[d.Name]
			if r == nil || c.lc != nil && r.Preparing != nil || replaced[r.Name] {
				continue
			}
			switch {
			case !old(spec, r):
				c.fail("rollout", "%q on the wanted revision is in %s with %d live of %d known desired", r.Name, l.name, live, c.k)
			case spec.Strategy.Paused || spec.Strategy.Type == replicaset.OnDelete:
				c.fail("rollout", "%q is in %s, yet the rollout is paused or OnDelete", r.Name, l.name)
			case r.MarkedForDeletion || !ran(r) || !slices.Contains(spec.Zones, r.Zone):
				// Marked, broken and unlisted replicas go first, wherever.
			case !allOff && c.backingOff(r.Zone):
				c.fail("rollout", "%q is in %s in zone %s, which backs off", r.Name, l.name, r.Zone)
			case spec.Strategy.ZoneByZone && r.Zone != update:
				c.fail("rollout", "ZoneByZone, yet %q is in %s in zone %s while zone %q is updated", r.Name, l.name, r.Zone, update)
			}
			after--
		}
	}
	if after < min(before, c.lim.Partition) {
		c.fail("rollout", "replicas on older revisions %d → %d, below the partition %d", before, after, c.lim.Partition)
	}
}

// allBackingOff reports whether every listed zone that answers backs
// off (or none answers).
func (c *checker) allBackingOff() bool {
	allOff := true
	for _, z := range c.in.Spec.Zones {
		allOff = allOff && (slices.Contains(c.in.Spec.Unreachable, z) || c.backingOff(z))
	}
	return allOff
}

// zoneUpdated returns the zone a ZoneByZone rollout updates: the first
// listed zone that answers, does not back off (unless all do) and holds a
// replica on an older revision still to replace: not one the strategy
// updates in place (in this pass or a later one: in-place updates are not
// ordered by zone), nor one remediation replaces, nor one in skip; ""
// when none does.
func (c *checker) zoneUpdated(skip map[string]bool) string {
	spec := &c.in.Spec
	replaced := setOf(c.p.Replace)
	moved := setOf(slices.Concat(c.p.PrepareUpdate, updated(c.p.Update)))
	allOff := c.allBackingOff()
	for _, z := range spec.Zones {
		if slices.Contains(spec.Unreachable, z) || !allOff && c.backingOff(z) {
			continue
		}
		if slices.ContainsFunc(c.in.Replicas, func(r replicaset.Replica) bool {
			return r.Zone == z && !r.Deleting && !r.Protected && old(spec, &r) && (c.lc == nil || r.Preparing == nil) &&
				!moved[r.Name] && !replaced[r.Name] && !skip[r.Name] && !c.inPlaceable(&r)
		}) {
			return z
		}
	}
	return ""
}

// backingOff reports whether creates avoid zone at the pass's time.
func (c *checker) backingOff(zone string) bool {
	return slices.ContainsFunc(c.in.Spec.History.ZoneBackoff, func(b replicaset.ZoneBackoff) bool {
		return b.Zone == zone && c.in.Now.Before(b.Until)
	})
}

// inPlaceable reports whether the strategy updates r in place rather than
// leave it to the rules: a method other than UpdateReplace, r neither
// protected, marked for deletion, failed nor (with Remediation)
// unhealthy, and its change made live, or with a power cycle while
// MaxUnavailable (resolved for K) allows one.
func (c *checker) inPlaceable(r *replicaset.Replica) bool {
	spec := &c.in.Spec
	switch {
	case spec.Strategy.Method == replicaset.UpdateReplace, r.Protected, r.MarkedForDeletion, r.Phase == replicaset.PhaseFailed,
		spec.Remediation != nil && r.Health != nil && r.Health.Unhealthy:
		return false
	}
	return r.InPlace == replicaset.InPlaceLive || r.InPlace == replicaset.InPlacePowerCycle && c.lim.Unavailable > 0
}
