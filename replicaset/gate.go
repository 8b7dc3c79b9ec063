package replicaset

import (
	"math"
	"slices"
	"time"
)

// takeBack takes back, before anything new is created, as many of the
// replicas preparing to leave (leaving, indexes in current) as bring the
// live replicas to the desired count: a cancelled drain is a patch, a
// clone is minutes. It takes only replicas the rules would keep
// (keepable), those that began to prepare last first (they have drained
// least), then by identity.
func (ps *pass) takeBack(leaving []int) {
	need := ps.desired - ps.live
	if need <= 0 || len(leaving) == 0 {
		return
	}
	cands := slices.DeleteFunc(leaving, func(i int) bool { return !ps.keepable(i) })
	slices.SortFunc(cands, func(a, b int) int {
		ra, rb := &ps.cur[a], &ps.cur[b]
		if c := rb.Preparing.Since.Compare(ra.Preparing.Since); c != 0 {
			return c
		}
		return compareIdentity(ra, rb)
	})
	for _, i := range cands[:min(need, len(cands))] {
		ps.set(i, ps.fl[i]&^(fGone|fLeaving)|fLive|fBack)
		ps.back = append(ps.back, i)
	}
}

// keepable reports whether current[i], preparing to leave, is one the
// rules would keep were it not leaving: running, ready, on the wanted
// revision, in a listed zone that answers, not unhealthy and not marked
// for deletion. A closed launch gate does not stop it: a new replica
// would have one too.
func (ps *pass) keepable(i int) bool {
	switch r := &ps.cur[i]; {
	case r.Phase != PhaseRunning, !r.Ready, r.MarkedForDeletion, ps.fl[i]&fNew == 0,
		len(ps.spec.Zones) > 0 && ps.zoneAt(i) < 0,
		ps.spec.Remediation != nil && r.Health != nil && (r.Health.Unhealthy || r.Health.RemediateNow):
		return false
	}
	return true
}

// emit writes the pass's decisions into its plan: the deletions (the
// replaced replicas first, then those chosen, in order), the in-place
// updates, the restarts and the holds, each deletion and power cycle
// through the pre-delete gate when the spec has a Lifecycle.
func (ps *pass) emit() {
	p := &ps.p
	p.Holds = append(p.Holds, ps.healHolds...)
	if ps.unknownOld > 0 {
		ps.hold(HoldUnreachable, ps.unknownOld, "%s", count(ps.unknownOld, "replica on an older revision is unreachable, or in an unreachable zone; it is replaced once it answers again",
			"replicas on older revisions are unreachable, or in unreachable zones; they are replaced once they answer again"))
	}
	if ps.spec.Strategy.Method == UpdateInPlaceIfPossible {
		p.Fallback = ps.fallback
	}
	p.Replace = ps.replicas(ps.replaced)
	for _, i := range ps.replaced {
		ps.fl[i] |= fChosen
	}
	for _, i := range ps.restart {
		if ps.fl[i]&fChosen == 0 {
			p.Restart = append(p.Restart, ps.cur[i])
		}
	}
	var updates []Update
	for _, i := range ps.updates {
		// Deletion and a restart go first.
		if ps.fl[i]&fChosen == 0 && !slices.Contains(ps.restart, i) {
			updates = append(updates, Update{Replica: ps.cur[i], PowerCycle: ps.cur[i].InPlace == InPlacePowerCycle})
		}
	}
	dels := ps.chosen
	if len(ps.replaced) > 0 {
		dels = append(slices.Clone(ps.replaced), ps.chosen...)
	}
	p.Unbalanced = ps.unbalanced(ps.rebalanceHeld)
	if len(ps.spec.Zones) > 0 && !ps.zoned() {
		// Every listed zone is unreachable: creates wait for one to answer.
		p.Deferred += p.Create
		p.Create = 0
	}
	ps.release(dels, updates)
}

// release emits the deletions (dels, indexes into current) and the
// updates: without a Lifecycle as they are, with the preparations the
// pass takes back cancelled; with one through the pre-delete gate (gate).
func (ps *pass) release(dels []int, updates []Update) {
	p := &ps.p
	for _, i := range slices.Concat(ps.back, ps.cancelUpdate) {
		// One deleted or updated in place goes with its record.
		if ps.fl[i]&fChosen == 0 && !slices.ContainsFunc(updates, func(u Update) bool { return u.Replica.Name == ps.cur[i].Name }) {
			p.Cancel = append(p.Cancel, ps.cur[i])
		}
	}
	if ps.spec.Lifecycle == nil {
		p.Delete = ps.replicasInto(p.Delete, dels)
		p.Update = updates
		return
	}
	ps.gate(dels, updates)
}

// gate carries deletions and power cycles through the pre-delete gate:
// a replica that ran prepares first (Plan.Prepare, Plan.PrepareUpdate);
// one already preparing goes once its hooks released it or timed out without
// Abandon (settle); and deletions and updates the hooks released keep to
// the per-pass cap.
func (ps *pass) gate(dels []int, updates []Update) {
	p, lc, now := &ps.p, ps.spec.Lifecycle, ps.env.Now
	for _, u := range updates {
		if !u.PowerCycle || skipsGate(&u.Replica) {
			p.Update = append(p.Update, u)
			continue
		}
		p.PrepareUpdate = append(p.PrepareUpdate, u.Replica)
		p.Lifecycle.Preparing++
	}
	var settling, cycling []int
	for _, i := range dels {
		if !admit(p, &ps.cur[i]) {
			settling = append(settling, i)
		}
	}
	for i, f := range ps.fl[:len(ps.cur)] {
		switch {
		case f&fLeaving != 0:
			settling = append(settling, i)
		case f&(fCycling|fChosen) != fCycling:
		case slices.Contains(ps.restart, i):
			p.Lifecycle.Preparing++ // a restart goes first; the update waits
		default:
			cycling = append(cycling, i)
		}
	}
	slices.SortFunc(settling, ps.byIdentity)
	slices.SortFunc(cycling, ps.byIdentity)
	for _, i := range settling {
		lc.settle(p, ps.cur[i], now, func(r Replica) { p.Delete = append(p.Delete, r) })
	}
	for _, i := range cycling {
		lc.settle(p, ps.cur[i], now, func(r Replica) {
			p.Update = append(p.Update, Update{Replica: r, PowerCycle: r.InPlace != InPlaceLive})
		})
	}
	// Deletions and power cycles the hooks released count toward the
	// per-pass cap too: those over it stay preparing, deferred to the next
	// pass, and are not reported as timed out yet. A power cycle under way
	// is no replica on an older revision waiting, so no hold counts it.
	over := max(0, len(p.Update)-ps.limit) + max(0, len(p.Delete)-ps.limit)
	p.Update, p.Delete = p.Update[:min(len(p.Update), ps.limit)], p.Delete[:min(len(p.Delete), ps.limit)]
	p.Deferred += over
	p.Lifecycle.Preparing += over
	// A replica replaced that prepared already goes once its hooks
	// release it: it is replaced in the pass that deletes it.
	deleted := func(r Replica) bool {
		return slices.ContainsFunc(p.Delete, func(d Replica) bool { return compareIdentity(&d, &r) == 0 })
	}
	p.Replace = slices.DeleteFunc(p.Replace, func(r Replica) bool { return r.Preparing != nil && !deleted(r) })
	p.Lifecycle.TimedOut = slices.DeleteFunc(p.Lifecycle.TimedOut, func(r Replica) bool {
		return !deleted(r) && !slices.ContainsFunc(p.Update, func(u Update) bool { return compareIdentity(&u.Replica, &r) == 0 })
	})
	lc.hookHolds(p, now)
}

// admit takes r, chosen to leave, through the pre-delete gate: a replica
// that never ran is deleted (skipsGate), one that ran begins to prepare
// (Plan.Prepare). It reports false for one that prepares already, which
// settle decides.
func admit(p *Plan, r *Replica) bool {
	switch {
	case r.Preparing != nil:
		return false
	case skipsGate(r):
		p.Delete = append(p.Delete, *r)
	default:
		p.Prepare = append(p.Prepare, *r)
		p.Lifecycle.Preparing++
	}
	return true
}

// replicas returns the replicas at the indexes is.
func (ps *pass) replicas(is []int) []Replica { return ps.replicasInto(nil, is) }

// replicasInto is replicas in dst's memory when it has room for them.
func (ps *pass) replicasInto(dst []Replica, is []int) []Replica {
	if len(is) == 0 {
		return nil
	}
	if cap(dst) < len(is) {
		dst = make([]Replica, len(is))
	}
	dst = dst[:len(is)]
	for k, i := range is {
		dst[k] = ps.cur[i]
	}
	return dst
}

// Drain plans one pass of the owner's own deletion: every replica leaves,
// through the pre-delete gate when spec has a Lifecycle, whatever the
// desired count, protection, zones or rollout say (the owner is going, so
// its replicas are). A replica not yet preparing is in Plan.Prepare (or
// in Plan.Delete when it never ran: see the package documentation's
// Lifecycle hooks section); one whose hooks released it or timed out without
// Abandon is in Plan.Delete; the others wait, as Plan.Lifecycle and
// Plan.Holds say. Without a Lifecycle every live replica is in
// Plan.Delete. Drain has no per-pass cap: an owner's deletion lets every
// replica go. A replica held past its timeout with Abandon holds the
// owner's deletion as long as its hooks do (LifecycleStatus.Abandoned,
// with no NextCheck: only its hooks' release moves it). The owner is
// gone, for its replicas, once a pass finds none but those being
// deleted: its finalizer can then go.
//
// Drain validates its input as Compute does (the spec, then each
// replica): it returns an
// error wrapping ErrInvalidSpec for a bad spec and ErrInvalidReplica for an
// empty or repeated name or UID, or, with Spec.Lifecycle, a replica
// preparing with no start time.
func Drain(spec Spec, current []Replica, now time.Time) (Plan, error) {
	w := getScratch()
	defer w.put()
	if err := validate(&spec, current, w); err != nil {
		return Plan{}, err
	}
	// Every live replica is chosen, in identity order, and emitted as a
	// pass emits its deletions, with no per-pass cap.
	ps := &pass{spec: &spec, cur: current, w: w, env: Env{Now: now}, limit: math.MaxInt, fl: w.flagsFor(len(current))}
	clear(ps.fl)
	var dels []int
	for i := range current {
		if current[i].Deleting {
			ps.p.Deleting = append(ps.p.Deleting, current[i])
		} else {
			dels = append(dels, i)
		}
	}
	sortByIdentity(ps.p.Deleting)
	slices.SortFunc(dels, ps.byIdentity)
	ps.release(dels, nil)
	return ps.p, nil
}
