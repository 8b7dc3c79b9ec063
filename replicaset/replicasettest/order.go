package replicasettest

import (
	"fmt"
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
// are listed and every zone and replica answers (a rollout is not in
// progress where the order is stated).
func (c *checker) rebalancing() bool {
	spec := &c.in.Spec
	return spec.Rebalance && len(spec.Zones) > 0 && len(spec.Unreachable) == 0 && len(c.unknown) == 0
}

// tier returns r's tier in the deletion order.
func (c *checker) tier(r *replicaset.Replica) int {
	spec := &c.in.Spec
	switch {
	case r.MarkedForDeletion:
		return tierMarked
	case len(spec.Zones) > 0 && !slices.Contains(spec.Zones, r.Zone):
		return tierUnlisted
	}
	return c.health(r)
}

// health returns the tier r would be in by its health alone: broken, not
// available, or the rest. Replicas in no listed zone are taken in this
// order too, inside their tier.
func (c *checker) health(r *replicaset.Replica) int {
	spec := &c.in.Spec
	rebalance := c.rebalancing()
	switch {
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
// fullest); inside the tier of replicas in no listed zone, broken ones
// first, then those not available (as above). Spec.Rebalance applies with
// zones listed and none unreachable; then no scale-down takes the
// available replicas below the desired count, so while the available
// replicas that stay are K or fewer, none of them counts as one that
// could have been taken. With Input.Policy, the order inside a tier is stated too: no replica
// is taken while one of its tier (with Spec.Zones, in a listed zone, of
// its zone) ranked strictly earlier by the policy's rank, then name, then
// UID stays and could have been taken. Delete and Prepare each list the
// replicas so taken in that order.
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
	for _, t := range chosen {
		for _, e := range stay {
			if why := c.before(e, t); why != "" {
				c.fail("deletion order", "%q is taken while %q stays: %s", t.Name, e.Name, why)
				break
			}
		}
	}
	// Delete and Prepare each list the replicas chosen in the order.
	isChosen := map[string]bool{}
	for _, r := range chosen {
		isChosen[r.Name] = true
	}
	for _, list := range [][]replicaset.Replica{c.p.Delete, c.p.Prepare} {
		var seq []*replicaset.Replica
		for _, r := range list {
			if isChosen[r.Name] {
				seq = append(seq, c.byName[r.Name])
			}
		}
		for i, t := range seq {
			for _, e := range seq[i+1:] {
				if why := c.before(e, t); why != "" {
					c.fail("deletion order", "%q is listed before %q: %s", t.Name, e.Name, why)
				}
			}
		}
	}
}

// before says why the deletion order takes e before t, or "" when it
// does not (or does not say: another zone's replicas from the broken tier
// on, with zones).
func (c *checker) before(e, t *replicaset.Replica) string {
	zoned := len(c.in.Spec.Zones) > 0
	te, tt := c.tier(e), c.tier(t)
	switch {
	case te < tt && (te < tierUnavailable || !zoned || e.Zone == t.Zone):
		return fmt.Sprintf("%s before %s", tierNames[te], tierNames[tt])
	case te != tt || te >= tierBroken && zoned && e.Zone != t.Zone:
		return ""
	case te == tierUnlisted && c.health(e) < c.health(t):
		return fmt.Sprintf("%s, %s before %s, %s", tierNames[te], tierNames[c.health(e)], tierNames[tt], tierNames[c.health(t)])
	case (te != tierUnlisted || c.health(e) == c.health(t)) && c.rankedBefore(e, t):
		return fmt.Sprintf("both %s, and the policy ranks %q first", tierNames[te], e.Name)
	}
	return ""
}

// rankedBefore reports whether Input.Policy ranks a strictly before b,
// then by name, then by UID; false without a policy.
func (c *checker) rankedBefore(a, b *replicaset.Replica) bool {
	if c.in.Policy == nil {
		return false
	}
	env := replicaset.Env{Now: c.in.Now, MinReady: c.in.Spec.MinReady, Seed: c.in.Spec.Seed}
	if r := c.in.Policy.Rank(*a, env).Compare(c.in.Policy.Rank(*b, env)); r != 0 {
		return r < 0
	}
	return a.Name < b.Name || a.Name == b.Name && a.UID < b.UID
}

var tierNames = [...]string{tierMarked: "marked", tierUnlisted: "in no listed zone", tierBroken: "broken",
	tierUnavailable: "not available", tierRest: "available"}
