package replicaset

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// inPlaceOn reports whether a pass under spec updates replicas in place:
// a rolling update, not paused, with an in-place Strategy.Method.
func inPlaceOn(spec *Spec) bool {
	return spec.Revision != "" && spec.Strategy.Method != UpdateReplace &&
		spec.Strategy.Type == RollingUpdate && !spec.Strategy.Paused
}

// inPlaceBar says why r, a live replica on an older revision, is not
// updated in place under spec, whose strategy resolves to lim: "" when it
// can be. A replica the rules handle for another reason (protected,
// marked for deletion, failed, unhealthy under remediation) is not, and
// neither is one whose change cannot be made in place, or needs a power
// cycle while MaxUnavailable allows no replica to be unavailable.
func inPlaceBar(spec *Spec, r *Replica, lim Limits) string {
	switch {
	case r.Protected:
		return "protected from scale-in"
	case r.MarkedForDeletion:
		return "marked for deletion"
	case r.Phase == PhaseFailed:
		return "failed"
	case spec.Remediation != nil && r.Health != nil && r.Health.Unhealthy:
		return "unhealthy"
	case r.InPlace == InPlaceNone:
		return cmp.Or(r.InPlaceBlocker, "its change cannot be made in place")
	case r.InPlace == InPlacePowerCycle && lim.Unavailable == 0:
		return cmp.Or(r.InPlaceBlocker, "its change needs a power cycle") +
			", and MaxUnavailable 0 lets no replica be unavailable for a power cycle"
	case r.InPlace != InPlaceLive && r.InPlace != InPlacePowerCycle:
		return fmt.Sprintf("its in-place kind %v is unknown", r.InPlace)
	}
	return ""
}

// inPlacePass is one pass's in-place updates: what it changes, what waits,
// and the view of the replicas the rules then plan on.
type inPlacePass struct {
	updates        []Update
	view           []Replica
	waiting        int // held by MaxUnavailable
	deferred       int // over the per-pass cap
	blocked        []Replica
	blockedWhy     []string
	availB, serveB int // what may still become unavailable, or stop serving
	limit          int
}

// computeInPlace is compute under an in-place Strategy.Method. Replicas
// on older revisions whose change can be made in place move onto the
// wanted revision without being replaced, as many as the partition
// allows, less those a scale-down will delete: live updates at once (they stay available), power cycles
// within MaxUnavailable's budget (they are unavailable until they come
// back), both within the per-pass cap. The rules (compute) then plan on
// a view in which those replicas are on the wanted revision, and a power
// cycle under way is not ready, so that they replace only the rest
// (UpdateInPlaceIfPossible) or none (UpdateInPlaceOnly, as if paused), and
// every bound is kept on what the in-place updates leave.
func computeInPlace(spec Spec, current []Replica, policy Ranker, now time.Time) (Plan, error) {
	lim := spec.Strategy.Limits(spec.Desired)
	ip := inPlacePass{limit: spec.maxPerPass()}
	var live, avail, serving, old int
	var cands []int
	for i := range current {
		r := &current[i]
		if r.Deleting || slices.Contains(spec.Unreachable, r.Zone) {
			continue
		}
		live++
		onNew := spec.onRevision(r)
		a := available(r, spec.MinReady, now)
		if a {
			avail++
		}
		if a || mayServe(r, onNew) {
			serving++
		}
		if onNew {
			continue
		}
		old++
		if why := inPlaceBar(&spec, r, lim); why != "" {
			ip.blocked = append(ip.blocked, *r)
			ip.blockedWhy = append(ip.blockedWhy, why)
			continue
		}
		cands = append(cands, i)
	}
	// Live updates first, then power cycles of replicas that cost the
	// budgets nothing, then of those that may serve, then of those
	// available; by identity within each.
	costOf := func(r *Replica) int {
		switch {
		case r.InPlace == InPlaceLive && !mayServe(r, false) || r.InPlace == InPlaceLive && available(r, spec.MinReady, now):
			return 0
		case r.InPlace == InPlaceLive:
			return 1
		case !mayServe(r, false):
			return 2
		case !available(r, spec.MinReady, now):
			return 3
		}
		return 4
	}
	slices.SortFunc(cands, func(a, b int) int {
		if c := cmp.Compare(costOf(&current[a]), costOf(&current[b])); c != 0 {
			return c
		}
		return compareIdentity(&current[a], &current[b])
	})
	floor := spec.Desired - lim.Unavailable
	ip.availB, ip.serveB = avail-floor, serving-floor
	// A scale-down takes replicas on older revisions first: those it
	// will delete are not updated. The rules choose which; as many as
	// the excess stay on their revision in the view.
	excess := max(0, live-spec.Desired)
	move := min(len(cands), max(0, old-lim.Partition-excess))
	if move > 0 {
		ip.view = slices.Clone(current)
	}
	for _, i := range cands[:move] {
		ip.take(current, i, costOf(&current[i]), spec.Revision)
	}
	view := current
	if ip.view != nil {
		view = ip.view
	}
	if spec.Strategy.Method == UpdateInPlaceOnly {
		spec.Strategy.Paused = true // the rules replace nothing for its revision
	}
	p, err := computeRules(spec, view, policy, now)
	if err != nil {
		return Plan{}, err
	}
	ip.merge(&p, spec.Strategy.Method, spec.Desired, lim)
	return p, nil
}

// take plans the in-place update of current[i], a candidate of the given
// cost (computeInPlace's costOf), or counts why it waits. Either way the
// view has it on the wanted revision, so that the rules do not replace it.
func (ip *inPlacePass) take(current []Replica, i, cost int, revision string) {
	r := &current[i]
	ip.view[i].Revision = revision
	switch {
	case len(ip.updates) == ip.limit:
		ip.deferred++
		return
	case cost == 4 && (ip.availB < 1 || ip.serveB < 1), (cost == 1 || cost == 3) && ip.serveB < 1:
		ip.waiting++
		return
	}
	switch cost {
	case 4:
		ip.availB--
		ip.serveB--
	case 1, 3:
		ip.serveB--
	}
	pc := r.InPlace == InPlacePowerCycle
	if pc {
		ip.view[i].Ready = false // unavailable while it cycles
	}
	ip.updates = append(ip.updates, Update{Replica: *r, PowerCycle: pc})
}

// merge puts the pass's updates and holds into p, the rules' plan on the
// view: an update of a replica the rules delete or restart is dropped
// (deletion and a restart go first); under UpdateInPlaceOnly the hold of
// the replicas left on older revisions says why they are not changed in
// place.
func (ip *inPlacePass) merge(p *Plan, method UpdateMethod, desired int, lim Limits) {
	gone := map[string]bool{}
	for _, rs := range [][]Replica{p.Delete, p.Restart} {
		for _, r := range rs {
			gone[r.Name] = true
		}
	}
	for _, u := range ip.updates {
		if !gone[u.Replica.Name] {
			p.Update = append(p.Update, u)
		}
	}
	if ip.waiting > 0 {
		addHold(p, Hold{By: HoldMaxUnavailable, Waiting: ip.waiting, Reason: fmt.Sprintf(
			"%d %s to be updated in place: another power cycle (or live update of a replica not yet available) "+
				"would take the replicas available or serving below %d (Desired %d − MaxUnavailable %d)",
			ip.waiting, plural(ip.waiting, "replica waits", "replicas wait"), desired-lim.Unavailable, desired, lim.Unavailable)})
	}
	if ip.deferred > 0 {
		p.Deferred += ip.deferred
		addHold(p, Hold{By: HoldMaxPerPass, Waiting: ip.deferred, Reason: fmt.Sprintf(
			"%d %s to be updated in place on the next pass (MaxPerPass)",
			ip.deferred, plural(ip.deferred, "replica waits", "replicas wait"))})
	}
	if method != UpdateInPlaceOnly {
		for i, r := range ip.blocked {
			p.Fallback = append(p.Fallback, Fallback{Replica: r, Reason: ip.blockedWhy[i]})
		}
		return
	}
	for i, h := range p.Holds {
		if h.By == HoldPaused {
			p.Holds[i] = Hold{By: HoldInPlaceOnly, Waiting: h.Waiting, Reason: fmt.Sprintf(
				"%d %s be updated in place, and the update method InPlaceOnly replaces none: %s",
				h.Waiting, plural(h.Waiting, "replica on an older revision cannot", "replicas on older revisions cannot"), ip.describeBlocked())}
		}
	}
}

// addHold adds h to p's holds, or to the hold of its kind the rules gave
// already: one hold per bound, its reasons joined.
func addHold(p *Plan, h Hold) {
	for i := range p.Holds {
		if p.Holds[i].By == h.By {
			p.Holds[i].Waiting += h.Waiting
			p.Holds[i].Reason += "; " + h.Reason
			return
		}
	}
	p.Holds = append(p.Holds, h)
}

// describeBlocked names the first replicas that cannot be updated in
// place, each with why.
func (ip *inPlacePass) describeBlocked() string {
	const most = 3
	var parts []string
	for i, r := range ip.blocked[:min(len(ip.blocked), most)] {
		parts = append(parts, fmt.Sprintf("%s (%s)", r.Name, ip.blockedWhy[i]))
	}
	if len(ip.blocked) > most {
		parts = append(parts, fmt.Sprintf("and %d more", len(ip.blocked)-most))
	}
	if len(parts) == 0 {
		return "none of them is a replica the rules may change"
	}
	return strings.Join(parts, "; ")
}

// stillUpdates reports whether r, preparing for an in-place update
// (Preparing.Update), is still to be updated: spec updates in place, r is
// on an older revision, and its change can still be made in place. A
// rollback, a pause or a change that no longer fits takes it back
// (Plan.Cancel), so that no replica drains for an update that will not
// come (kruise#1156: a rollback while a pod prepared for an in-place
// update hung it).
func stillUpdates(spec *Spec, r *Replica) bool {
	return inPlaceOn(spec) && !spec.onRevision(r) && inPlaceBar(spec, r, spec.Strategy.Limits(spec.Desired)) == ""
}
