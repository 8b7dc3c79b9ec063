package replicaset

import (
	"fmt"
	"slices"
	"time"
)

// computeGated is Compute with Spec.Lifecycle: every deletion the rules
// decide passes the pre-delete gate. Replicas already preparing are
// planned for as replicas being deleted (they are leaving: they count
// toward the surge, never as available, and are never chosen twice),
// except those a scale-up takes back; the plan's new deletions become
// preparations, and preparations whose hooks are done become deletions.
func computeGated(spec Spec, current []Replica, policy Ranker, now time.Time) (Plan, error) {
	if err := checkPreparing(current); err != nil {
		return Plan{}, err
	}
	lc := spec.Lifecycle
	preparing := map[string]int{} // by name: index in current
	for i := range current {
		if r := &current[i]; r.Preparing != nil && !r.Deleting {
			preparing[r.Name] = i
		}
	}
	view := current
	var back []int
	updating := map[string]bool{} // preparing for an in-place update that goes on
	if len(preparing) > 0 {
		view = slices.Clone(current)
		back = takeBack(&spec, current, len(preparing))
		for _, i := range back {
			view[i].Preparing = nil
		}
		for _, i := range preparing {
			switch {
			case view[i].Preparing == nil:
			case view[i].Preparing.Update && stillUpdates(&spec, &current[i]):
				// Planned as the power cycle it prepares for: on the
				// wanted revision, not available, not leaving.
				updating[view[i].Name] = true
				view[i].Preparing, view[i].Revision, view[i].Ready = nil, spec.Revision, false
			case view[i].Preparing.Update:
				// Rolled back, paused, another method, or no longer in
				// place: taken back in this pass, whatever the rules
				// would choose (its hooks were told it comes back); a
				// later pass may choose it to leave, and it prepares
				// again, for that.
				back = append(back, i)
				view[i].Preparing, view[i].Protected = nil, true
			default:
				view[i].Deleting = true
			}
		}
	}
	p, err := compute(spec, view, policy, now)
	if err != nil {
		return Plan{}, err
	}
	original := func(r Replica) (Replica, bool) {
		i, ok := preparing[r.Name]
		if !ok || current[i].UID != r.UID {
			return r, false
		}
		return current[i], true
	}

	// A replica taken back that the rules chose again stays preparing.
	chosenAgain := map[string]bool{}
	for _, r := range p.Delete {
		chosenAgain[r.Name] = true
	}
	for _, i := range back {
		if chosenAgain[current[i].Name] {
			continue // settled below with the others
		}
		p.Cancel = append(p.Cancel, current[i])
	}

	// Power cycles prepare first too, unless there is nothing to drain.
	var updates []Update
	for _, u := range p.Update {
		if !u.PowerCycle || skipsGate(&u.Replica) {
			updates = append(updates, u)
			continue
		}
		p.PrepareUpdate = append(p.PrepareUpdate, u.Replica)
		p.Lifecycle.Preparing++
	}
	p.Update = updates

	// New deletions prepare first, unless there is nothing to drain.
	var deletes []Replica
	for _, r := range p.Delete {
		if orig, ok := original(r); ok {
			p.Deleting = append(p.Deleting, orig) // settled below
			continue
		}
		if skipsGate(&r) {
			deletes = append(deletes, r)
			continue
		}
		p.Prepare = append(p.Prepare, r)
		p.Lifecycle.Preparing++
	}
	p.Delete = deletes

	// Replicas already preparing come back as being deleted: settle them.
	var settling []Replica
	deleting := p.Deleting[:0:0]
	for _, r := range p.Deleting {
		if orig, ok := original(r); ok {
			settling = append(settling, orig)
			continue
		}
		deleting = append(deleting, r)
	}
	p.Deleting = deleting
	for i, r := range p.Unknown {
		if orig, ok := original(r); ok {
			p.Unknown[i] = orig // left alone, preparing, while its zone is cut off
			p.Lifecycle.Preparing++
		}
	}
	for _, r := range sortedByIdentity(settling) {
		lc.settle(&p, r, now, func(r Replica) { p.Delete = append(p.Delete, r) })
	}
	// Power cycles whose hooks released the replica (or timed out) go
	// on, unless the rules chose it to leave (settled above) or it is
	// out of reach.
	settled := map[string]bool{}
	for _, rs := range [][]Replica{settling, p.Unknown} {
		for _, r := range rs {
			settled[r.Name] = true
		}
	}
	var cycling []Replica
	for name := range updating {
		if !settled[name] {
			cycling = append(cycling, current[preparing[name]])
		}
	}
	for _, r := range sortedByIdentity(cycling) {
		lc.settle(&p, r, now, func(r Replica) {
			p.Update = append(p.Update, Update{Replica: r, PowerCycle: r.InPlace != InPlaceLive})
		})
	}
	// Deletions and power cycles the hooks released count toward the
	// per-pass cap too: those over it stay preparing, deferred to the next
	// pass, and are not reported as timed out yet.
	limit := spec.maxPerPass()
	if over := len(p.Update) - limit; over > 0 {
		p.Update = p.Update[:limit]
		p.Deferred += over
		p.Lifecycle.Preparing += over
		addHold(&p, Hold{By: HoldMaxPerPass, Waiting: over, Reason: fmt.Sprintf(
			"%d %s to be updated in place on the next pass (MaxPerPass)", over, plural(over, "replica waits", "replicas wait"))})
	}
	if over := len(p.Delete) - limit; over > 0 {
		p.Delete = p.Delete[:limit]
		p.Deferred += over
		p.Lifecycle.Preparing += over
	}
	p.Lifecycle.TimedOut = slices.DeleteFunc(p.Lifecycle.TimedOut, func(r Replica) bool {
		return !slices.ContainsFunc(p.Delete, func(d Replica) bool { return d.Name == r.Name && d.UID == r.UID }) &&
			!slices.ContainsFunc(p.Update, func(u Update) bool { return u.Replica.Name == r.Name && u.Replica.UID == r.UID })
	})
	lc.hookHolds(&p)
	return p, nil
}

// takeBack returns the indexes in current of the preparing replicas
// taken back: those protected from scale-in since they began to prepare
// (the rules would never have chosen them), and those a scale-up takes
// back, before it creates anything new: a cancelled drain is a patch, a
// clone is minutes. A scale-up takes back only replicas the rules would
// keep: running, ready (a launch gate closed or not), on the wanted
// revision, in a reachable listed zone, not unhealthy and not marked for
// deletion; those that began to prepare last first (they have drained
// least), then by identity.
func takeBack(spec *Spec, current []Replica, preparing int) []int {
	var back []int
	live := 0
	for i := range current {
		switch r := &current[i]; {
		case r.Deleting:
		case r.Preparing == nil || r.Preparing.Update:
			live++
		case r.Protected:
			back = append(back, i)
			live++
		}
	}
	need := spec.Desired - live
	if need <= 0 {
		return back
	}
	cands := make([]int, 0, preparing)
	for i := range current {
		if r := &current[i]; r.Preparing != nil && !r.Preparing.Update && !r.Deleting && !r.Protected && keepable(spec, r) {
			cands = append(cands, i)
		}
	}
	slices.SortFunc(cands, func(a, b int) int {
		ra, rb := &current[a], &current[b]
		if c := rb.Preparing.Since.Compare(ra.Preparing.Since); c != 0 {
			return c
		}
		return compareIdentity(ra, rb)
	})
	return append(back, cands[:min(need, len(cands))]...)
}

// keepable reports whether a preparing replica is one the rules would keep
// were it not leaving. A closed launch gate does not stop it: a new
// replica would have one too.
func keepable(spec *Spec, r *Replica) bool {
	switch {
	case r.Phase != PhaseRunning, !r.Ready, r.MarkedForDeletion,
		!spec.onRevision(r),
		len(spec.Zones) > 0 && !slices.Contains(spec.Zones, r.Zone),
		slices.Contains(spec.Unreachable, r.Zone),
		spec.Remediation != nil && r.Health != nil && (r.Health.Unhealthy || r.Health.Now):
		return false
	}
	return true
}

// Drain plans one pass of the owner's own deletion: every replica leaves,
// through the pre-delete gate when spec has a Lifecycle, whatever the
// desired count, protection, zones or rollout say (the owner is going, so
// its replicas are). A replica not yet preparing is in Plan.Prepare (or
// in Plan.Delete when it never ran: see the package documentation's
// Lifecycle hooks section); one whose hooks released it or timed out with
// HookContinue is in Plan.Delete; the others wait, as Plan.Lifecycle and
// Plan.Holds say. Without a Lifecycle every live replica is in
// Plan.Delete. Drain has no per-pass cap: an owner's deletion lets every
// replica go. A replica held past its timeout with HookAbandon holds the
// owner's deletion as long as its hooks do (LifecycleStatus.Abandoned,
// with no NextCheck: only its hooks' release moves it). The owner is
// gone, for its replicas, once a pass finds none but those being
// deleted: its finalizer can then go.
//
// Drain returns an error wrapping ErrInvalidSpec for a bad spec and
// ErrInvalidReplica for an empty or repeated name or UID, or a replica
// preparing with no start time.
func Drain(spec Spec, current []Replica, now time.Time) (Plan, error) {
	if err := spec.Validate(); err != nil {
		return Plan{}, err
	}
	w := getScratch()
	defer w.put()
	v := newValidator(len(current), w)
	for i := range current {
		v.check(current, i)
	}
	if err := v.err(); err != nil {
		return Plan{}, err
	}
	if err := checkPreparing(current); err != nil {
		return Plan{}, err
	}
	var p Plan
	var settling []Replica
	for _, r := range current {
		switch {
		case r.Deleting:
			p.Deleting = append(p.Deleting, r)
		case spec.Lifecycle == nil || r.Preparing == nil && skipsGate(&r):
			p.Delete = append(p.Delete, r)
		case r.Preparing == nil:
			p.Prepare = append(p.Prepare, r)
			p.Lifecycle.Preparing++
		default:
			settling = append(settling, r)
		}
	}
	sortedByIdentity(p.Deleting)
	sortedByIdentity(p.Delete)
	sortedByIdentity(p.Prepare)
	if spec.Lifecycle != nil {
		for _, r := range sortedByIdentity(settling) {
			spec.Lifecycle.settle(&p, r, now, func(r Replica) { p.Delete = append(p.Delete, r) })
		}
		spec.Lifecycle.hookHolds(&p)
	}
	return p, nil
}
