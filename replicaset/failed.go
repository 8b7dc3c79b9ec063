package replicaset

import (
	"slices"
	"time"
)

// failedInZones returns the indexes in current, in identity order, of the
// replicas that failed in a listed zone (PhaseFailed, not being deleted,
// not protected; see the package documentation's Zones section), and
// whether they stay where they are because no listed zone is healthy: each
// backs off (Spec.ZoneBackoff at now) or holds one of them. With no listed
// zone it returns nothing.
func failedInZones(spec *Spec, current []Replica, now time.Time) (at []int, stay bool) {
	if len(spec.Zones) == 0 {
		return nil, false
	}
	sick := make([]bool, len(spec.Zones))
	for i := range current {
		r := &current[i]
		if r.Phase != PhaseFailed || r.Deleting || r.Protected {
			continue
		}
		if z := slices.Index(spec.Zones, r.Zone); z >= 0 {
			at = append(at, i)
			sick[z] = true
		}
	}
	if len(at) == 0 {
		return nil, false
	}
	slices.SortFunc(at, func(a, b int) int { return compareIdentity(&current[a], &current[b]) })
	for z, zone := range spec.Zones {
		if !sick[z] && !slices.ContainsFunc(spec.ZoneBackoff, func(b ZoneBackoff) bool { return b.Zone == zone && now.Before(b.Until) }) {
			return at, false
		}
	}
	return at, true
}

// computeFailed is Compute for a set with Spec.ReplaceFailed, listed
// zones, every zone reachable and no Spec.Remediation: the replicas that failed in a listed
// zone are replaced (Plan.Replace) while some listed zone is healthy, up
// to MaxPerPass, and stay, held (HoldZoneBackoff), while none is.
func computeFailed(spec Spec, current []Replica, policy Ranker, now time.Time) (Plan, error) {
	at, stay := failedInZones(&spec, current, now)
	if len(at) == 0 {
		return computeReachable(spec, current, policy, now)
	}
	if stay {
		p, err := computeReachable(spec, current, policy, now)
		if err != nil {
			return Plan{}, err
		}
		p.Holds = append(p.Holds, failedStayHold(current, at))
		return p, nil
	}
	p, _, err := planReplacing(&spec, current, at, policy, now, false)
	return p, err
}

// failedStayHold is the hold of the failed replicas at, which stay.
func failedStayHold(current []Replica, at []int) Hold {
	names := make([]string, len(at))
	for k, i := range at {
		names[k] = current[i].Name
	}
	return healHolds(map[HoldKind][]string{HoldZoneBackoff: names}, HealthStatus{}, 0, 0, 0, time.Time{})[0]
}

// planReplacing plans with the replicas at replace (indexes in current)
// replaced: up to MaxPerPass of them are planned as if already being
// deleted, so that the plan neither counts them as available nor chooses
// them again, then deleted first (Plan.Replace, and the head of
// Plan.Delete, whose other deletes give way under the per-pass cap).
// With surge, their replacements are made at once as far as the surge
// allows (addReplacements); without it, as for any replica being deleted
// (Spec.ReplaceDeleting). It returns the plan and the replicas as
// planned.
func planReplacing(spec *Spec, current []Replica, replace []int, policy Ranker, now time.Time, surge bool) (Plan, []Replica, error) {
	limit := spec.maxPerPass()
	if len(replace) > limit {
		replace = replace[:limit]
	}
	planned := current
	if len(replace) > 0 {
		planned = slices.Clone(current)
		for _, i := range replace {
			planned[i].Deleting = true
		}
	}
	p, err := computeReachable(*spec, planned, policy, now)
	if err != nil || len(replace) == 0 {
		return p, planned, err
	}
	replaced := make([]Replica, len(replace))
	for k, i := range replace {
		replaced[k] = current[i]
	}
	p.Replace = replaced
	p.Deleting = slices.DeleteFunc(p.Deleting, func(r Replica) bool {
		return slices.ContainsFunc(replaced, func(x Replica) bool { return compareIdentity(&x, &r) == 0 })
	})
	if over := len(replaced) + len(p.Delete) - limit; over > 0 {
		p.Delete = p.Delete[:len(p.Delete)-over]
		p.Deferred += over
	}
	p.Delete = append(slices.Clone(replaced), p.Delete...)
	if surge && !spec.ReplaceDeleting {
		addReplacements(spec, planned, replaced, &p, limit, now)
	}
	return p, planned, nil
}
