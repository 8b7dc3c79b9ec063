package replicasettest

import (
	"slices"

	"github.com/replicakit/replicakit/replicaset"
)

// The tiers of the package documentation's Deletion order that a
// scale-down walks before the policy's rank, earliest first.
const (
	tierMarked      = iota // marked for deletion
	tierUnlisted           // with Spec.Zones, in no listed zone
	tierBroken             // PhasePending or PhaseFailed (with Spec.Rebalance, PhaseFailed only)
	tierUnavailable        // not available; compared inside a zone (none with Spec.Rebalance)
	tierRest
)

// rebalancing reports whether Spec.Rebalance applies to the pass: zones
// are listed and every one answers (a rollout is not in progress where
// the order is stated).
func (c *checker) rebalancing() bool {
	spec := &c.in.Spec
	return spec.Rebalance && len(spec.Zones) > 0 && len(spec.Unreachable) == 0
}

// tier returns r's tier in the deletion order.
func (c *checker) tier(r *replicaset.Replica) int {
	spec := &c.in.Spec
	rebalance := c.rebalancing()
	switch {
	case r.MarkedForDeletion:
		return tierMarked
	case len(spec.Zones) > 0 && !slices.Contains(spec.Zones, r.Zone):
		return tierUnlisted
	case r.Phase == replicaset.PhaseFailed || r.Phase == replicaset.PhasePending && !rebalance:
		return tierBroken
	case !rebalance && !r.Available(spec.MinReady, c.in.Now):
		return tierUnavailable
	}
	return tierRest
}

// deletionOrder states the package documentation's Deletion order of a
// scale-down, by its tiers: outside a rollout, while the live known
// replicas (preparations taken back included) are more than K, no
// replica the pass takes out (Delete, Prepare; not already preparing, not
// remediated, Replace) is taken while one ranked strictly earlier stays
// and could have been taken: a known live replica, not protected, not
// preparing, and not acted on otherwise in the pass (Cancel, Restart,
// Update, PrepareUpdate). The tiers are: marked for deletion; with
// Spec.Zones, in no listed zone; broken (PhasePending or PhaseFailed;
// when Spec.Rebalance applies, whose replicas still coming up are taken
// by zone like the rest, PhaseFailed only); then, unless Spec.Rebalance
// applies, not available before available, which with Spec.Zones
// compares only replicas of one zone (the zones are walked from the
// fullest). Spec.Rebalance applies with zones listed and none
// unreachable; then no scale-down takes the available replicas below the
// desired count, so while the available replicas that stay are K or
// fewer, none of them counts as one that could have been taken. The
// policy's rank, name and UID inside a tier are not stated.
func (c *checker) deletionOrder() {
	if c.rolloutInProgress() {
		return
	}
	live := 0
	for i := range c.in.Replicas {
		r := &c.in.Replicas[i]
		if !c.unknown[r.Name] && !r.Deleting && (c.lc == nil || r.Preparing == nil || r.Preparing.Update || c.cancel[r.Name] || r.Protected) {
			live++
		}
	}
	if live <= c.k {
		return
	}
	taken := setOf(slices.Concat(c.p.Delete, c.p.Prepare))
	other := setOf(slices.Concat(c.p.Cancel, c.p.Restart, updated(c.p.Update), c.p.PrepareUpdate, c.p.Replace))
	var chosen, stay []*replicaset.Replica
	for i := range c.in.Replicas {
		r := &c.in.Replicas[i]
		switch {
		case c.unknown[r.Name] || r.Deleting || r.Preparing != nil || c.p.Replace != nil && other[r.Name] && taken[r.Name]:
		case taken[r.Name]:
			if !other[r.Name] {
				chosen = append(chosen, r)
			}
		case !r.Protected && !other[r.Name]:
			stay = append(stay, r)
		}
	}
	if c.rebalancing() {
		// No scale-down takes the available replicas below the desired
		// count: while those that stay are at K or fewer, none of them
		// could have been taken.
		avail := 0
		for _, r := range stay {
			avail += b2i(r.Available(c.in.Spec.MinReady, c.in.Now))
		}
		if avail <= c.k {
			stay = slices.DeleteFunc(stay, func(r *replicaset.Replica) bool { return r.Available(c.in.Spec.MinReady, c.in.Now) })
		}
	}
	zoned := len(c.in.Spec.Zones) > 0
	for _, t := range chosen {
		tt := c.tier(t)
		for _, e := range stay {
			te := c.tier(e)
			if te < tt && (te < tierUnavailable || !zoned || e.Zone == t.Zone) {
				c.fail("deletion order", "%q (%s) is taken while %q (%s) stays", t.Name, tierNames[tt], e.Name, tierNames[te])
				break
			}
		}
	}
}

var tierNames = [...]string{tierMarked: "marked", tierUnlisted: "in no listed zone", tierBroken: "broken",
	tierUnavailable: "not available", tierRest: "available"}
