package replicasettest

import (
	"fmt"
	"slices"
)

// counting states the package documentation's Counting invariant: with
// nothing capped, short or held, the plan lands on the desired count.
//
// It is stated of the known replicas and K, outside a rollout (no live
// known replica on an older revision, counting one the pass prepares or
// updates in place). Before the pass, live are the known replicas neither
// being deleted nor preparing to leave (a protected one preparing, which
// the plan takes back whatever the count, is live), and deleting are the
// known replicas being deleted or preparing to leave, those counting
// toward K (none with Spec.ReplaceDeleting). The plan lands on
//
//	K            when live > K (a scale-down deletes live − K);
//	K − deleting when live + deleting < K (a scale-up, without
//	             Spec.ReplaceDeleting);
//	live         otherwise;
//
// and the live known replicas after the pass are live, plus Create, plus
// those it takes back (Cancel) of the ones preparing to leave, minus
// those that begin to leave (Delete, Prepare, of replicas not leaving
// already). A scale-up takes preparations back (Cancel) before it
// creates, and only as many as bring live to K: those taken back are
// live again and no longer deleting: the count above is taken of live
// plus them, which is at most K. With Spec.Rebalance, a pass whose live
// known replicas are K, with none leaving and none taken back, may land
// one above it, creating one replica to move (create before delete).
// Nothing is capped, short or held when the plan has no
// Holds, Deferred 0 and no Shortfall. A pass that replaces (Replace) is
// left to the rules of remediation, whose replacements the surge bounds.
//
// Whether or not anything is held, the pass never overshoots: outside a
// rollout and without Replace, live after the pass is at most
// max(live, the count it lands on) and at least min(live, the count it
// lands on), and no replica leaves (Delete, Prepare) in a pass that
// creates or takes back.
func (c *checker) counting() {
	if c.rolloutInProgress() || len(c.p.Replace) > 0 {
		return
	}
	spec := &c.in.Spec
	live, deleting, gone := 0, 0, 0
	leaving := map[string]bool{}
	for i := range c.in.Replicas {
		r := &c.in.Replicas[i]
		switch {
		case c.unknown[r.Name]:
		case r.Deleting || c.lc != nil && r.Preparing != nil && !r.Preparing.Update && !r.Protected:
			leaving[r.Name] = true
			gone++
			if !spec.ReplaceDeleting {
				deleting++
			}
		default:
			live++
		}
	}
	back := 0 // preparations to leave taken back
	for _, r := range c.p.Cancel {
		if leaving[r.Name] {
			back++
		}
	}
	if back > 0 && live+back > max(live, c.k) {
		c.fail("counting", "%d live known replicas, and %d preparing taken back, beyond the %d desired", live, back, c.k)
	}
	// Those taken back are live again, and no longer deleting.
	lb, db := live+back, deleting
	if !spec.ReplaceDeleting {
		db -= back
	}
	target := lb
	switch {
	case lb > c.k:
		target = c.k
	case lb+db < c.k:
		target = c.k - db
	}
	if spec.Rebalance && len(spec.Zones) > 0 && lb == c.k && gone == 0 && back == 0 && c.p.Create == 1 {
		target++ // a move, create before delete (Spec.Rebalance)
	}
	after, added, taken := live+back+c.p.Create, back+c.p.Create, 0
	for _, r := range slices.Concat(c.p.Delete, c.p.Prepare) {
		if c.byName[r.Name] != nil && !c.unknown[r.Name] && !leaving[r.Name] { // identity and unreachable judge the rest
			after--
			taken++
		}
	}
	pass := fmt.Sprintf("%d live known replicas (%d being deleted) → %d after the pass (%d created, %d taken back, %d leaving)",
		live, deleting, after, c.p.Create, back, taken)
	if after > max(lb, target) || after < min(lb, target) {
		c.fail("counting", "%s; the desired count %d lands on %d", pass, c.k, target)
	}
	if added > 0 && taken > 0 {
		c.fail("counting", "%d created or taken back and %d leaving in one pass outside a rollout", added, taken)
	}
	if len(c.p.Holds) > 0 || c.p.Deferred > 0 || c.p.Shortfall.Count > 0 {
		return // capped, short or held
	}
	if after != target {
		c.fail("counting", "nothing capped, short or held, yet %s, not the %d the desired count %d lands on: %s",
			pass, target, c.k, map[bool]string{true: "a create is missing", false: "a replica leaves too many"}[after < target])
	}
}

// rolloutInProgress reports whether a rollout is in progress: Spec.Revision
// is set and a live known replica is on an older revision.
func (c *checker) rolloutInProgress() bool {
	spec := &c.in.Spec
	if spec.Revision == "" {
		return false
	}
	for i := range c.in.Replicas {
		if r := &c.in.Replicas[i]; !c.unknown[r.Name] && !r.Deleting && old(spec, r) &&
			(c.lc == nil || r.Preparing == nil || r.Preparing.Update || c.cancel[r.Name]) {
			return true
		}
	}
	return false
}
