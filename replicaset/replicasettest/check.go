package replicasettest

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/replicakit/replicakit/replicaset"
)

// Check judges one plan of replicaset.Compute against its input and
// returns an error joining every violation of the per-pass invariants the
// replicaset package documents, each stated once, or nil. Each message
// starts with the invariant's name and names the replicas concerned:
//
//   - "identity": every replica the plan names is one of the input's
//     (same Name and UID); none is twice in one of Delete, Prepare,
//     Cancel, Update, PrepareUpdate, Restart, Deleting, Unknown, Replace
//     and Fallback, nor in two of the first eight; Replace is within
//     Delete and Prepare.
//   - "unreachable": nothing is acted on (Delete, Prepare, Cancel,
//     Update, PrepareUpdate, Restart) that is unreachable
//     (Replica.Unreachable) or in an unreachable zone, nor is a replica
//     already being deleted; no create goes to an unreachable zone;
//     Unknown is exactly the replicas unreachable or in unreachable
//     zones, and Deleting lists only known replicas being deleted.
//   - "caps": Create, Delete, Prepare, Update and PrepareUpdate are each
//     within the per-pass cap (Spec.MaxPerPass, DefaultMaxPerPass when
//     zero); with Spec.Zones every create has a listed zone, never one
//     that backs off (History.ZoneBackoff) while a listed zone that
//     answers does not; without them none has. With no Holds, Deferred
//     is above zero only when something reached the cap (Create; Delete,
//     Prepare and Replace together; Update and PrepareUpdate together),
//     with Spec.Rebalance (deletes held until replicas come up), or when
//     every listed zone is unreachable (creates wait for one).
//   - "protected": no protected replica is in Delete, Prepare, Update or
//     PrepareUpdate.
//   - "hooks": without Spec.Lifecycle, Prepare and PrepareUpdate are
//     empty, and Cancel takes back exactly the known replicas that record
//     a preparation (Replica.Preparing) and are neither being deleted nor
//     deleted or updated in place by the plan (the spec dropped its
//     Lifecycle); with it, no replica that ran (its phase neither
//     PhasePending nor PhaseFailed) is in Delete unless it was preparing
//     and Lifecycle.Hold holds it no more, nor power-cycled (Update)
//     unless it prepared for that update and nothing holds it; only
//     replicas not preparing begin to (Prepare, PrepareUpdate), and only
//     preparing ones are taken back (Cancel). A known replica that
//     prepares to leave and is protected is taken back; and while the
//     live known replicas (those taken back included) are fewer than K,
//     none the rules would keep (running, ready, not on an older revision,
//     in a listed zone when there are zones, not marked for deletion, and
//     with Spec.Remediation neither unhealthy nor asked to be remediated)
//     is left preparing.
//   - "in place": Update and PrepareUpdate are empty under
//     UpdateReplace; each update is of a live replica on an older
//     revision whose change can be made in place, a power cycle exactly
//     when its change needs one, and only when MaxUnavailable, resolved
//     for the known replicas' desired count, is above zero. Under
//     UpdateInPlaceOnly, while the live known replicas (those taken back
//     included) are at most K, no
//     replica on an older revision leaves (Delete, Prepare) unless
//     remediation replaces it (Replace).
//   - "remediation": only a set with Spec.Remediation restarts, and only
//     with Remediation.Restart; without it only failed replicas in a
//     listed zone are replaced (Spec.ReplaceFailed); with it no replica
//     that opted out (Health.Skip) is remediated.
//   - "availability" and "serving": while a rollout is in progress, the
//     available replicas (and the replicas that may serve) after the
//     pass are at least min(before, K − U), with deletions, preparations
//     and power cycles counted together (see below).
//   - "surge": while replicas on older revisions remain beyond the
//     partition, the known replicas (live, being deleted and preparing)
//     plus Create are at most max(K + S, what they were).
//   - "rollout": while the live known replicas (those taken back
//     included) are at most K, a replica leaves (Delete or Prepare, not
//     already preparing, not in Replace) only when it is on an older
//     revision, and then not while the rollout is paused or OnDelete, nor
//     from a listed zone that backs off (History.ZoneBackoff) while
//     another listed zone that answers does not, nor with
//     Strategy.ZoneByZone from another zone than the one updated (the
//     first listed zone that answers, does not back off unless all do,
//     and holds a replica on an older revision still to replace, not one
//     the strategy updates in place: see the package documentation's
//     in-place rules), unless
//     it is marked for deletion, PhasePending or PhaseFailed; and the
//     replicas on older revisions stay at least
//     min(before, P), those updated in place or preparing for it
//     counted as moved.
//   - "holds": while the live known replicas (those taken back
//     included) are at most K, every hold has a reason and waits for at
//     least one replica, and the holds account for the replicas on older
//     revisions that stay beyond the partition. W, those left after the
//     pass (not in Delete, Prepare, Update, PrepareUpdate or Replace, nor
//     preparing for a power cycle) beyond P plus the live ones in
//     unreachable zones, is within R ≤ W ≤ R + X ≤ W + h: R sums the
//     holds of the rollout's own kinds (Paused, OnDelete,
//     MaxUnavailable, MaxPerPass, LastAvailable, ZoneByZone, Unreachable,
//     InPlaceOnly), X those of the kinds remediation shares with it
//     (Protected, ZoneBackoff), and h bounds what remediation holds by
//     those kinds (the known live replicas protected, with
//     Spec.Remediation, or failed in a listed zone, with it or
//     Spec.ReplaceFailed), so that without either W = R + X. The
//     Partition, MaxSurge, PreDelete and HookAbandoned holds and the
//     other remediation guards count other replicas. A replica restarted
//     in the pass (Restart) waits on its restart: it may go uncounted.
//   - "last available": while a rollout is in progress and K is above
//     zero, no pass takes (Delete, Prepare) the last available known
//     replicas on the wanted revision (not remediated, not preparing for
//     a power cycle), unless a replica updated live in the pass takes
//     their place.
//   - "surge creates": while a rollout is in progress, the creates
//     beyond K − the known live replicas are at most the replicas left
//     to replace: those remediation replaces (with Spec.Remediation,
//     those preparing for a power cycle too, which it may replace while
//     their hooks hold them), and the known live replicas
//     on older revisions neither protected, preparing for a power cycle,
//     remediated nor updated in place in the pass, and with zones in no
//     listed zone, or in one that does not back off (unless all do) and,
//     with ZoneByZone, in the zone updated before or after the pass's
//     deletions; less the surge replicas still coming up (known, live,
//     made on the wanted revision, not available), each against those left
//     in its listed zone (any, with ZoneByZone or without zones).
//   - "fallback": Plan.Fallback lists each replica at most once, with a
//     reason, only
//     under UpdateInPlaceIfPossible, and only replicas on older revisions
//     not updated in this pass.
//   - "counting": outside a rollout and when nothing is replaced
//     (Replace), the live known replicas after the pass lie between
//     those before it and the count the pass lands on: K when more are
//     live, K − deleting (the known replicas being deleted or preparing
//     to leave, none with Spec.ReplaceDeleting) when fewer are live or
//     deleting, as many as are live otherwise; preparations taken back
//     (Cancel) count as live and no longer deleting, and take the live
//     ones to K at most; one pass does not both add replicas and take
//     some out. With nothing capped, short or held (no Holds, Deferred
//     0, no Shortfall), it lands on that count exactly; a Spec.Rebalance
//     move may land one above it (create before delete).
//   - "deletion order": outside a rollout, while the live known replicas
//     are more than K (a scale-down), no replica the pass takes out
//     (Delete, Prepare; not already preparing, not in Replace) is taken
//     while a replica ranked strictly earlier by the tiers of the package
//     documentation's Deletion order stays and could have been taken
//     (known, live, not protected, not preparing, not otherwise acted
//     on): marked for deletion; with zones, in no listed zone (inside
//     it broken, then not available, then the rest); broken
//     (PhasePending or PhaseFailed; PhaseFailed only when Spec.Rebalance
//     applies, with zones listed and none unreachable); then, unless
//     Spec.Rebalance applies, not available, compared with Spec.Zones
//     only inside one zone. When Spec.Rebalance applies and the
//     available replicas that stay are K or fewer, no available one could
//     have been taken. With Input.Policy, inside a tier (with zones and
//     from broken on, inside one zone) no replica is taken while one
//     ranked strictly earlier by the policy's rank, then name, then UID
//     stays and could have been taken. Delete and Prepare each list the
//     replicas so taken in that order.
//
// The bounds are stated of the known replicas (those neither unreachable
// nor in a zone of Spec.Unreachable), with the desired count K = max(0, D − u) +
// min(u, S, D) of the package documentation's Unreachable zones section
// (u the unknown replicas that count toward D, S the surge resolved for
// D), and S, U and the partition P resolved for K by Strategy.Limits. A
// rollout is in progress while Spec.Revision is set and a live known
// replica is on an older revision. A replica leaves when it is being
// deleted or prepares to leave; one that prepares for a power cycle
// counts as on the wanted revision and not available, as the planner
// plans it. A replica the plan takes back (Cancel) counts on both sides
// as it is, live, as the planner plans it once its preparation is
// cancelled. Replicas the plan remediates
// (Replace, Restart) count as gone on both sides. A replica may serve
// when it is available, or live on an older revision and neither
// PhasePending nor PhaseFailed.
//
// Check is for the plans of Compute, not of Drain, which deletes
// protected replicas.
func Check(in Input, p replicaset.Plan) error {
	c := newChecker(in, p)
	c.identity()
	c.unreachable()
	c.caps()
	c.protected()
	c.hooks()
	c.inPlace()
	c.remediation()
	c.bounds()
	c.rollout()
	c.holds()
	c.lastAvailable()
	c.surgeCreates()
	c.fallback()
	c.counting()
	c.deletionOrder()
	return errors.Join(c.errs...)
}

// checker holds what the invariants are stated in.
type checker struct {
	in      Input
	p       replicaset.Plan
	byName  map[string]*replicaset.Replica
	unknown map[string]bool // by name: unreachable, or in an unreachable zone
	lc      *replicaset.Lifecycle
	k       int // the known replicas' desired count
	lim     replicaset.Limits
	cancel  map[string]bool
	errs    []error
}

func newChecker(in Input, p replicaset.Plan) *checker {
	c := &checker{in: in, p: p, byName: map[string]*replicaset.Replica{}, unknown: map[string]bool{},
		lc: in.Spec.Lifecycle, cancel: setOf(p.Cancel)}
	u := 0
	for i := range in.Replicas {
		r := &in.Replicas[i]
		c.byName[r.Name] = r
		if r.Unreachable || slices.Contains(in.Spec.Unreachable, r.Zone) {
			c.unknown[r.Name] = true
			if !r.Deleting || !in.Spec.ReplaceDeleting {
				u++
			}
		}
	}
	d := in.Spec.Desired
	c.k = max(0, d-u) + min(u, in.Spec.Strategy.Limits(d).Surge, d)
	c.lim = in.Spec.Strategy.Limits(c.k)
	return c
}

func (c *checker) fail(invariant, format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("%s: %s", invariant, fmt.Sprintf(format, args...)))
}

// list is one of the plan's lists of replicas, by its field's name.
type list struct {
	name string
	rs   []replicaset.Replica
}

// exclusive are the lists a replica is in at most one of.
func (c *checker) exclusive() []list {
	return []list{{"Delete", c.p.Delete}, {"Prepare", c.p.Prepare}, {"Cancel", c.p.Cancel},
		{"Update", updated(c.p.Update)}, {"PrepareUpdate", c.p.PrepareUpdate}, {"Restart", c.p.Restart},
		{"Deleting", c.p.Deleting}, {"Unknown", c.p.Unknown}}
}

// acted are the lists of replicas a plan acts on.
func (c *checker) acted() []list { return c.exclusive()[:6] }

func (c *checker) identity() {
	reports := []list{{"Replace", c.p.Replace}, {"Fallback", fallen(c.p.Fallback)},
		{"Lifecycle.Waiting", c.p.Lifecycle.Waiting}, {"Lifecycle.TimedOut", c.p.Lifecycle.TimedOut},
		{"Lifecycle.Abandoned", c.p.Lifecycle.Abandoned}}
	in := map[string]string{}
	for _, l := range append(c.exclusive(), reports...) {
		seen := map[string]bool{}
		for _, r := range l.rs {
			if o, ok := c.byName[r.Name]; !ok || o.UID != r.UID {
				c.fail("identity", "%s names %q (UID %q), which is not an input replica", l.name, r.Name, r.UID)
			}
			if seen[r.Name] && l.name != "Fallback" { // Fallback's own invariant says it
				c.fail("identity", "%s lists %q twice", l.name, r.Name)
			}
			seen[r.Name] = true
			if !strings.Contains(l.name, ".") && l.name != "Replace" && l.name != "Fallback" {
				if prev, ok := in[r.Name]; ok && prev != l.name {
					c.fail("identity", "%q is in both %s and %s", r.Name, prev, l.name)
				}
				in[r.Name] = l.name
			}
		}
	}
	for _, r := range c.p.Replace {
		if l := in[r.Name]; l != "Delete" && l != "Prepare" {
			c.fail("identity", "%q is in Replace but in neither Delete nor Prepare", r.Name)
		}
	}
}

func (c *checker) unreachable() {
	for _, l := range c.acted() {
		for _, r := range l.rs {
			switch o := c.byName[r.Name]; {
			case o != nil && o.Unreachable:
				c.fail("unreachable", "%q, unreachable, is in %s", r.Name, l.name)
			case c.unknown[r.Name]:
				c.fail("unreachable", "%q in unreachable zone %q is in %s", r.Name, r.Zone, l.name)
			}
			if o := c.byName[r.Name]; o != nil && o.Deleting {
				c.fail("unreachable", "%q, already being deleted, is in %s", r.Name, l.name)
			}
		}
	}
	for _, z := range c.p.CreateZones {
		if slices.Contains(c.in.Spec.Unreachable, z) {
			c.fail("unreachable", "a create goes to unreachable zone %q (CreateZones %v)", z, c.p.CreateZones)
		}
	}
	var want []string
	for _, r := range c.in.Replicas {
		if c.unknown[r.Name] {
			want = append(want, r.Name)
		}
	}
	got := sortedNames(c.p.Unknown)
	if slices.Sort(want); !slices.Equal(got, want) {
		c.fail("unreachable", "Unknown is %v, want the unknown replicas (unreachable, or in unreachable zones) %v", got, want)
	}
	for _, r := range c.p.Deleting {
		if o := c.byName[r.Name]; o != nil && (!o.Deleting || c.unknown[r.Name]) {
			c.fail("unreachable", "Deleting lists %q, which is not a known replica being deleted", r.Name)
		}
	}
}

func (c *checker) caps() {
	limit := c.in.Spec.MaxPerPass
	if limit == 0 {
		limit = replicaset.DefaultMaxPerPass
	}
	for _, n := range []struct {
		name string
		n    int
	}{{"Create", c.p.Create}, {"Delete", len(c.p.Delete)}, {"Prepare", len(c.p.Prepare)},
		{"Update", len(c.p.Update)}, {"PrepareUpdate", len(c.p.PrepareUpdate)}} {
		if n.n > limit {
			c.fail("caps", "%s is %d, over the per-pass cap %d", n.name, n.n, limit)
		}
	}
	zones := c.in.Spec.Zones
	if c.p.Deferred > 0 && len(c.p.Holds) == 0 { // a hold may take what the cap left
		deletes := len(setOf(slices.Concat(c.p.Delete, c.p.Prepare, c.p.Replace)))
		updates := len(c.p.Update) + len(c.p.PrepareUpdate)
		allUnreachable := len(zones) > 0 && !slices.ContainsFunc(zones, func(z string) bool { return !slices.Contains(c.in.Spec.Unreachable, z) })
		if c.p.Create < limit && deletes < limit && updates < limit && !(c.in.Spec.Rebalance && len(zones) > 0) && !allUnreachable {
			c.fail("caps", "Deferred is %d, yet nothing reached the per-pass cap %d (%d creates, %d deletes, %d updates in place)",
				c.p.Deferred, limit, c.p.Create, deletes, updates)
		}
	}
	switch {
	case len(zones) > 0 && len(c.p.CreateZones) != c.p.Create:
		c.fail("caps", "%d creates, %d zones (CreateZones %v)", c.p.Create, len(c.p.CreateZones), c.p.CreateZones)
	case len(zones) == 0 && len(c.p.CreateZones) > 0:
		c.fail("caps", "no zones listed, yet CreateZones %v", c.p.CreateZones)
	}
	allOff := c.allBackingOff()
	for _, z := range c.p.CreateZones {
		if !slices.Contains(zones, z) {
			c.fail("caps", "a create goes to zone %q, which is not listed (%v)", z, zones)
		} else if !allOff && c.backingOff(z) {
			c.fail("caps", "a create goes to zone %q, which backs off while a listed zone that answers does not", z)
		}
	}
}

func (c *checker) protected() {
	for _, l := range []list{{"Delete", c.p.Delete}, {"Prepare", c.p.Prepare},
		{"Update", updated(c.p.Update)}, {"PrepareUpdate", c.p.PrepareUpdate}} {
		for _, r := range l.rs {
			if o := c.byName[r.Name]; o != nil && o.Protected {
				c.fail("protected", "protected %q is in %s", r.Name, l.name)
			}
		}
	}
}

// ran reports whether r ran: it is neither PhasePending nor PhaseFailed.
func ran(r *replicaset.Replica) bool {
	return r.Phase != replicaset.PhasePending && r.Phase != replicaset.PhaseFailed
}

func (c *checker) hooks() {
	if c.lc == nil {
		for _, l := range []list{{"Prepare", c.p.Prepare}, {"PrepareUpdate", c.p.PrepareUpdate}} {
			if len(l.rs) > 0 {
				c.fail("hooks", "no Lifecycle, yet %s is %v", l.name, sortedNames(l.rs))
			}
		}
		gone := setOf(append(slices.Clone(c.p.Delete), updated(c.p.Update)...))
		var want []string
		for i := range c.in.Replicas {
			if r := &c.in.Replicas[i]; r.Preparing != nil && !r.Deleting && !c.unknown[r.Name] && !gone[r.Name] {
				want = append(want, r.Name)
			}
		}
		slices.Sort(want)
		if got := sortedNames(c.p.Cancel); !slices.Equal(got, want) {
			c.fail("hooks", "no Lifecycle, yet Cancel is %v; want the known replicas that record a preparation, %v", got, want)
		}
		return
	}
	for _, d := range c.p.Delete {
		if r := c.byName[d.Name]; r != nil && ran(r) {
			if r.Preparing == nil {
				c.fail("hooks", "%q ran (%v) and is deleted without preparing", r.Name, r.Phase)
			} else if by, _ := c.lc.Hold(*r.Preparing, c.in.Now); by != 0 {
				c.fail("hooks", "%q is deleted while hooks %v hold it (%v)", r.Name, r.Preparing.Hooks, by)
			}
		}
	}
	for _, u := range c.p.Update {
		if r := c.byName[u.Replica.Name]; r != nil && u.PowerCycle && ran(r) {
			if r.Preparing == nil || !r.Preparing.Update {
				c.fail("hooks", "%q ran (%v) and is power-cycled without preparing for it", r.Name, r.Phase)
			} else if by, _ := c.lc.Hold(*r.Preparing, c.in.Now); by != 0 {
				c.fail("hooks", "%q is power-cycled while hooks %v hold it (%v)", r.Name, r.Preparing.Hooks, by)
			}
		}
	}
	for _, l := range []list{{"Prepare", c.p.Prepare}, {"PrepareUpdate", c.p.PrepareUpdate}} {
		for _, r := range l.rs {
			if o := c.byName[r.Name]; o != nil && o.Preparing != nil {
				c.fail("hooks", "%q is in %s, yet already prepares (since %v)", r.Name, l.name, o.Preparing.Since)
			}
		}
	}
	for _, r := range c.p.Cancel {
		if o := c.byName[r.Name]; o != nil && o.Preparing == nil {
			c.fail("hooks", "%q is taken back (Cancel), yet does not prepare", r.Name)
		}
	}
	c.takeBack()
}

// takeBack states the rule of a scale-up while replicas prepare to leave:
// a protected one is taken back whatever the count, and while the live
// known replicas (those taken back included) are fewer than K, none the
// rules would keep is left preparing.
func (c *checker) takeBack() {
	spec := &c.in.Spec
	live := 0
	var keep []string
	for i := range c.in.Replicas {
		r := &c.in.Replicas[i]
		switch {
		case c.unknown[r.Name] || r.Deleting:
		case r.Preparing == nil || r.Preparing.Update || c.cancel[r.Name]:
			live++
		case r.Protected:
			c.fail("hooks", "%q is protected and prepares to leave, yet is not taken back (Cancel)", r.Name)
		case r.Phase == replicaset.PhaseRunning && r.Ready && !r.MarkedForDeletion && !old(spec, r) &&
			(len(spec.Zones) == 0 || slices.Contains(spec.Zones, r.Zone)) &&
			(spec.Remediation == nil || r.Health == nil || !r.Health.Unhealthy && !r.Health.RemediateNow):
			keep = append(keep, r.Name)
		}
	}
	if live < c.k && len(keep) > 0 {
		slices.Sort(keep)
		c.fail("hooks", "%d live of %d known desired, yet %v the rules would keep are left preparing", live, c.k, keep)
	}
}

// old reports whether r is on an older revision than spec's.
func old(spec *replicaset.Spec, r *replicaset.Replica) bool {
	return spec.Revision != "" && r.Revision != "" && r.Revision != spec.Revision
}

func (c *checker) inPlace() {
	spec := &c.in.Spec
	if spec.Strategy.Method == replicaset.UpdateReplace && len(c.p.Update)+len(c.p.PrepareUpdate) > 0 {
		c.fail("in place", "method Replace, yet Update %v and PrepareUpdate %v",
			sortedNames(updated(c.p.Update)), sortedNames(c.p.PrepareUpdate))
	}
	for _, u := range c.p.Update {
		r := c.byName[u.Replica.Name]
		switch {
		case r == nil:
		case !old(spec, r):
			c.fail("in place", "%q is updated, yet is not on an older revision (%q, want %q)", r.Name, r.Revision, spec.Revision)
		case r.InPlace == replicaset.InPlaceNone:
			c.fail("in place", "%q is updated, yet its change cannot be made in place", r.Name)
		case u.PowerCycle != (r.InPlace == replicaset.InPlacePowerCycle):
			c.fail("in place", "%q (%v) is updated with PowerCycle %v", r.Name, r.InPlace, u.PowerCycle)
		case u.PowerCycle && c.lim.Unavailable == 0:
			c.fail("in place", "%q is power-cycled with MaxUnavailable 0 for %d known desired", r.Name, c.k)
		}
	}
	for _, d := range c.p.PrepareUpdate {
		if r := c.byName[d.Name]; r != nil && (!old(spec, r) || r.InPlace != replicaset.InPlacePowerCycle) {
			c.fail("in place", "%q prepares for a power cycle, yet is %v on revision %q", r.Name, r.InPlace, r.Revision)
		}
	}
	if spec.Strategy.Method != replicaset.UpdateInPlaceOnly {
		return
	}
	live := 0
	for i := range c.in.Replicas {
		if r := &c.in.Replicas[i]; !c.unknown[r.Name] && !r.Deleting &&
			(c.lc == nil || r.Preparing == nil || r.Preparing.Update || c.cancel[r.Name]) {
			live++
		}
	}
	if live > c.k {
		return // a scale-down deletes by the deletion order, old replicas first
	}
	replaced := setOf(c.p.Replace)
	for _, l := range []list{{"Delete", c.p.Delete}, {"Prepare", c.p.Prepare}} {
		for _, d := range l.rs {
			if r := c.byName[d.Name]; r != nil && old(spec, r) && r.Preparing == nil && !replaced[r.Name] {
				c.fail("in place", "UpdateInPlaceOnly, yet %q on revision %q is in %s with %d live of %d known desired",
					r.Name, r.Revision, l.name, live, c.k)
			}
		}
	}
}

func (c *checker) remediation() {
	rm := c.in.Spec.Remediation
	if len(c.p.Restart) > 0 && (rm == nil || !rm.Restart) {
		c.fail("remediation", "Restart is %v without Remediation.Restart", sortedNames(c.p.Restart))
	}
	for _, d := range c.p.Replace {
		r := c.byName[d.Name]
		switch {
		case r == nil:
		case rm == nil && !(c.in.Spec.ReplaceFailed && r.Phase == replicaset.PhaseFailed && slices.Contains(c.in.Spec.Zones, r.Zone)):
			c.fail("remediation", "%q is replaced without Remediation, yet did not fail in a listed zone", r.Name)
		case rm != nil && r.Health != nil && r.Health.Skip:
			c.fail("remediation", "%q is replaced, yet opted out (Health.Skip)", r.Name)
		}
	}
	for _, d := range c.p.Restart {
		if r := c.byName[d.Name]; r != nil && r.Health != nil && r.Health.Skip {
			c.fail("remediation", "%q is restarted, yet opted out (Health.Skip)", r.Name)
		}
	}
}

func (c *checker) fallback() {
	seen := map[string]bool{}
	upd := setOf(updated(c.p.Update))
	for _, f := range c.p.Fallback {
		r := c.byName[f.Replica.Name]
		switch {
		case seen[f.Replica.Name]:
			c.fail("fallback", "Fallback lists %q twice", f.Replica.Name)
		case f.Reason == "":
			c.fail("fallback", "Fallback lists %q without a reason", f.Replica.Name)
		case c.in.Spec.Strategy.Method != replicaset.UpdateInPlaceIfPossible:
			c.fail("fallback", "Fallback lists %q under %v", f.Replica.Name, c.in.Spec.Strategy.Method)
		case r != nil && (!old(&c.in.Spec, r) || upd[r.Name]):
			c.fail("fallback", "Fallback lists %q, which is not on an older revision or is updated", r.Name)
		}
		seen[f.Replica.Name] = true
	}
}

func updated(us []replicaset.Update) []replicaset.Replica {
	rs := make([]replicaset.Replica, len(us))
	for i, u := range us {
		rs[i] = u.Replica
	}
	return rs
}

func fallen(fs []replicaset.Fallback) []replicaset.Replica {
	rs := make([]replicaset.Replica, len(fs))
	for i, f := range fs {
		rs[i] = f.Replica
	}
	return rs
}

func setOf(rs []replicaset.Replica) map[string]bool {
	m := make(map[string]bool, len(rs))
	for _, r := range rs {
		m[r.Name] = true
	}
	return m
}

func sortedNames(rs []replicaset.Replica) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Name
	}
	slices.Sort(out)
	return out
}
