package replicaset

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// remediate decides what leaves first (the package documentation's
// Self-healing, and Zones on failed replicas): the replicas remediation
// replaces or restarts, or, without Remediation, those that failed in a
// listed zone; up to MaxPerPass of them are replaced, counted from now on
// as being deleted.
func (ps *pass) remediate() {
	switch {
	case ps.spec.Remediation != nil:
		ps.decideHealing()
	case ps.spec.ReplaceFailed && ps.zoned():
		at, stay := ps.failedInZones()
		if stay {
			ps.healHolds = healHolds(map[HoldKind][]string{HoldZoneBackoff: nameList(ps.replicas(at))}, HealthStatus{}, 0, 0, 0, time.Time{})
			return
		}
		ps.replaced = at
	}
	ps.replaced = ps.replaced[:min(len(ps.replaced), ps.limit)]
	for _, i := range ps.replaced {
		ps.set(i, ps.fl[i]&^fLive|fGone)
	}
	ps.deletes = len(ps.replaced)
}

// replaceRemediated makes the replacements of the replicas remediation
// replaces as far as the surge allows (live replicas and those being
// deleted, the replaced ones included, within desired + MaxSurge) and the
// per-pass cap; the rest are made by later passes, once the replaced
// replicas are gone. A failed replica replaced without Remediation, or
// with Spec.ReplaceDeleting, is replaced as any replica being deleted is.
func (ps *pass) replaceRemediated() {
	if ps.spec.Remediation == nil || ps.spec.ReplaceDeleting {
		return
	}
	room := min(ps.surgeLeft(), ps.limit-ps.p.Create)
	ps.create(min(len(ps.replaced), max(0, room)))
}

// failedInZones returns the indexes in current, in identity order, of the
// replicas that failed in a listed zone (PhaseFailed, live, not fixed;
// see the package documentation's Zones section), and whether they stay
// where they are because no listed zone is healthy: each backs off
// (backingOff, every zone when all do) or holds one of them.
func (ps *pass) failedInZones() (at []int, stay bool) {
	if !ps.zoned() {
		return nil, false
	}
	sick := make([]bool, len(ps.zones))
	for i := range ps.cur {
		if ps.cur[i].Phase != PhaseFailed || ps.fl[i]&(fLive|fFixed) != fLive {
			continue
		}
		if z := ps.zoneAt(i); z >= 0 {
			at = append(at, i)
			sick[z] = true
		}
	}
	if len(at) == 0 {
		return nil, false
	}
	slices.SortFunc(at, ps.byIdentity)
	for z := range ps.zones {
		if !sick[z] && !ps.off[z] && !ps.allOff {
			return at, false
		}
	}
	return at, true
}

// due is a replica whose remediation has fallen due.
type due struct {
	i      int
	at     time.Time
	asked  bool // Health.RemediateNow
	failed bool // PhaseFailed
}

// decideHealing applies the Self-healing rules to the known replicas: it
// decides which to replace (pass.replaced) and which to restart, what
// holds the others (pass.healHolds), and what it found (Plan.Health).
func (ps *pass) decideHealing() {
	spec, current, now := ps.spec, ps.cur, ps.env.Now
	rm := spec.Remediation
	startup, window := rm.windows()
	st := &ps.p.Health
	var dues []due
	unhealthyIn := map[string]int{} // by zone, only zones with an unhealthy replica
	hist := spec.History
	var none Health
	// windowNext is when the first unhealthy window still running ends;
	// waiting lists the unhealthy replicas not yet due. In a storm no
	// unhealthy window ends (they run from the storm's end), so windowNext
	// is no time to look again, and the storm holds them all.
	var windowNext time.Time
	var waiting []int
	recovering := hist.Failures > 0
	stormEnd := hist.Storm
	if hist.Storming {
		stormEnd = now // over in this pass, or holding it anyway
	}
	for i := range current {
		f := ps.fl[i]
		if f&fUnknown != 0 {
			continue
		}
		r := &current[i]
		hl := r.Health
		gone := f&fGone != 0
		// Most replicas are healthy, or have no health: nothing to do.
		if !gone && r.Phase != PhaseFailed && !recovering && !r.LaunchGated &&
			(hl == nil || hl.Healthy && !hl.Unhealthy && !hl.RemediateNow && !hl.Restarted) {
			continue
		}
		if hl == nil {
			hl = &none
		}
		if gone {
			if hl.Unhealthy || hl.Restarted || r.Phase == PhaseFailed {
				st.InFlight++
			}
			continue
		}
		healthyNow := r.ready() && f&fCycling == 0 && !hl.Unhealthy
		if recovering && hl.Healthy && !r.LaunchGated && !hl.Started.Before(hist.Last) {
			st.Recovered = true
		}
		var at time.Time // when the replica falls due; zero: it does not
		unhealthy := false
		spell := false // at ends an unhealthy window, which a storm moves
		switch {
		case r.Phase == PhaseFailed:
			at, unhealthy = now, true
		case !hl.Started.IsZero() && (r.LaunchGated || !hl.Healthy && !healthyNow):
			// Started and not healthy since, or with a launch gate still
			// closed (whatever the health check says): judged by the
			// start-up window.
			at = hl.Started.Add(startup)
			unhealthy = !now.Before(at)
		case hl.Started.IsZero() || !hl.Healthy || !hl.Unhealthy:
			// Not started, healthy now, or healthy since it started and
			// not unhealthy.
		case !hl.Since.IsZero():
			from := hl.Since
			if stormEnd.After(from) {
				from = stormEnd // a storm that caught it ended since
			}
			at, unhealthy, spell = from.Add(window), true, true
		default:
			unhealthy = true // for how long is unknown: counted, never due
		}
		if hl.RemediateNow {
			at = now
		}
		if hl.Restarted && !at.IsZero() && now.Before(at) {
			st.InFlight++ // restarted, in its start-up window
		}
		if unhealthy {
			st.Unhealthy++
			if r.Zone != "" {
				unhealthyIn[r.Zone]++
			}
		}
		if unhealthy && !hl.Skip && (at.IsZero() || now.Before(at)) {
			waiting = append(waiting, i) // not due: only a storm holds it
		}
		switch {
		case at.IsZero():
		case now.Before(at) && !spell:
			earliest(&st.NextCheck, at)
		case now.Before(at):
			earliest(&windowNext, at)
		default:
			dues = append(dues, due{i: i, at: at, asked: hl.RemediateNow, failed: r.Phase == PhaseFailed})
		}
	}
	if hist.Failures > 0 && st.Recovered {
		hist.Failures, hist.Last = 0, time.Time{}
	}

	st.FailingZones = ps.failingZones(unhealthyIn)
	st.MaxUnhealthy = rm.maxUnhealthy(ps.desired)
	st.Storm = st.Unhealthy > st.MaxUnhealthy
	st.Suspended = hist.Failures >= cmp.Or(rm.MaxFailures, DefaultMaxFailures)
	var resume time.Time
	if hist.Failures > 0 && !st.Suspended {
		resume = hist.Last.Add(rm.backoff(hist.Failures))
		if !now.Before(resume) {
			resume = time.Time{}
		}
		st.BackoffUntil = resume
	}
	room := max(rm.maxInFlight(ps.desired)-st.InFlight, 0)
	if !st.Storm && !st.Suspended && resume.IsZero() {
		st.Allowed = room
	}

	slices.SortFunc(dues, func(a, b due) int {
		switch {
		case a.asked != b.asked:
			return boolFirst(a.asked)
		case a.failed != b.failed:
			return boolFirst(a.failed)
		case !a.at.Equal(b.at):
			return a.at.Compare(b.at)
		}
		return ps.byIdentity(a.i, b.i)
	})
	stay := false // failed replicas stay: no listed zone is healthy
	if slices.ContainsFunc(dues, func(d due) bool { return d.failed }) {
		_, stay = ps.failedInZones()
	}
	held := map[HoldKind][]string{}
	for _, d := range dues {
		r := &current[d.i]
		var by HoldKind
		switch {
		case r.Health != nil && r.Health.Skip:
			by = HoldSkipRemediation
		case d.failed && stay && ps.zoneAt(d.i) >= 0:
			by = HoldZoneBackoff
		case !d.asked && st.Storm:
			by = HoldTooManyUnhealthy
		case !d.asked && slices.Contains(st.FailingZones, r.Zone):
			by = HoldZoneUnhealthy
		case !d.asked && st.Suspended:
			by = HoldSuspended
		case !d.asked && !resume.IsZero():
			by = HoldRemediationBackoff
		case room == 0:
			by = HoldInFlight
		}
		if ps.fl[d.i]&fBack != 0 {
			continue // taken back in this pass: remediated from the next one
		}
		restart := rm.Restart && (r.Health == nil || !r.Health.Restarted) && !d.failed
		if by == 0 && !restart && ps.fl[d.i]&fFixed != 0 {
			by = HoldProtected // never deleted; a restart may still be tried
		}
		if by != 0 {
			held[by] = append(held[by], r.Name)
			continue
		}
		room--
		if restart {
			ps.restart = append(ps.restart, d.i)
		} else {
			ps.replaced = append(ps.replaced, d.i)
		}
	}
	if st.Storm {
		for _, i := range waiting {
			held[HoldTooManyUnhealthy] = append(held[HoldTooManyUnhealthy], current[i].Name)
		}
	} else if !windowNext.IsZero() {
		earliest(&st.NextCheck, windowNext)
	}
	if !resume.IsZero() {
		earliest(&st.NextCheck, resume) // when the backoff ends, status says so
	}
	ps.healHolds = healHolds(held, *st, len(ps.restart)+len(ps.replaced), rm.maxInFlight(ps.desired), rm.maxUnhealthy(ps.desired), resume)
}

// earliest sets *t to at when at is earlier, or *t is zero (none yet).
func earliest(t *time.Time, at time.Time) {
	if t.IsZero() || at.Before(*t) {
		*t = at
	}
}

// boolFirst orders true before false.
func boolFirst(a bool) int {
	if a {
		return -1
	}
	return 1
}

// failingZones returns the zones where most live replicas, and at least
// two, are unhealthy, in name order.
func (ps *pass) failingZones(unhealthyIn map[string]int) []string {
	var candidates []string
	for z, n := range unhealthyIn {
		if n >= 2 {
			candidates = append(candidates, z)
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	live := map[string]int{}
	for i := range ps.cur {
		if r := &ps.cur[i]; ps.fl[i]&fLive != 0 && slices.Contains(candidates, r.Zone) {
			live[r.Zone]++
		}
	}
	var out []string
	for _, z := range candidates {
		if 2*unhealthyIn[z] > live[z] {
			out = append(out, z)
		}
	}
	slices.Sort(out)
	return out
}

// healHolds turns the held replicas' names into the plan's holds, each
// with a reason a person can act on.
func healHolds(held map[HoldKind][]string, st HealthStatus, starting, maxInFlight, maxUnhealthy int, resume time.Time) []Hold {
	var out []Hold
	for _, by := range []HoldKind{HoldSkipRemediation, HoldProtected, HoldZoneBackoff, HoldTooManyUnhealthy, HoldZoneUnhealthy, HoldSuspended, HoldRemediationBackoff, HoldInFlight} {
		names := held[by]
		if len(names) == 0 {
			continue
		}
		slices.Sort(names)
		list := strings.Join(names, ", ")
		// The replicas held, named: "a waits", "a, b wait".
		wait := list + plural(len(names), " waits", " wait")
		var reason string
		switch by {
		case HoldSkipRemediation:
			reason = fmt.Sprintf("%s opted out of remediation", list)
		case HoldProtected:
			reason = list + plural(len(names), " is protected from scale-in, so it is not replaced (remove the protection to let it be)",
				" are protected from scale-in, so they are not replaced (remove the protection to let them be)")
		case HoldZoneBackoff:
			reason = list + " failed, but every listed zone backs off or holds a failed replica: " +
				plural(len(names), "it stays, to recover where it is", "they stay, to recover where they are")
		case HoldTooManyUnhealthy:
			reason = fmt.Sprintf("%s, more than MaxUnhealthy %d: the fault is taken to be outside them, so none is remediated (%s)",
				count(st.Unhealthy, "replica is unhealthy", "replicas are unhealthy"), maxUnhealthy, wait)
		case HoldZoneUnhealthy:
			reason = fmt.Sprintf("most replicas of zones %s are unhealthy: the zone is taken to be failing, so %s",
				strings.Join(st.FailingZones, ", "), wait)
		case HoldSuspended:
			reason = fmt.Sprintf("remediation is suspended after replacements in a row that never became healthy; %s until a replica that started since is healthy", wait)
		case HoldRemediationBackoff:
			reason = fmt.Sprintf("remediation backs off after a failed replacement until %s; %s", resume.Format(time.RFC3339), wait)
		case HoldInFlight:
			reason = fmt.Sprintf("%s and %d start in this pass, the most MaxInFlight %d allows; %s",
				count(st.InFlight, "remediation is under way", "remediations are under way"), starting, maxInFlight, wait)
		}
		out = append(out, Hold{By: by, Waiting: len(names), Reason: reason})
	}
	return out
}
