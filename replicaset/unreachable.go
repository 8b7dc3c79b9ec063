package replicaset

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// computePartitioned is Compute for a spec with unreachable zones: it sets
// the replicas in them aside (Plan.Unknown), plans the rest as a set of
// their own with the desired count knownDesired states, over the listed
// zones that are reachable, and says what the partition holds back.
func computePartitioned(spec Spec, current []Replica, policy Ranker, now time.Time) (Plan, error) {
	w := getScratch()
	v := newValidator(len(current), w)
	for i := range current {
		v.check(current, i)
	}
	err := v.err()
	w.put()
	if err != nil {
		return Plan{}, err
	}

	var known, unknown []Replica
	counted, old := 0, 0
	for i := range current {
		r := &current[i]
		if !slices.Contains(spec.Unreachable, r.Zone) {
			known = append(known, *r)
			continue
		}
		unknown = append(unknown, *r)
		if !r.Deleting || !spec.ReplaceDeleting {
			counted++
		}
		if !r.Deleting && r.Revision != "" && spec.Revision != "" && r.Revision != spec.Revision {
			old++
		}
	}
	slices.SortFunc(unknown, func(a, b Replica) int { return compareIdentity(&a, &b) })

	inner := spec
	inner.Unreachable = nil
	inner.Rebalance = false // balance waits for every zone to answer
	inner.Desired = knownDesired(spec, counted)
	inner.Zones = reachable(spec)
	nowhere := len(spec.Zones) > 0 && len(inner.Zones) == 0
	p, err := Compute(inner, known, policy, now)
	if err != nil {
		return Plan{}, err
	}
	p.Unknown = unknown
	if nowhere && p.Create > 0 {
		// Without zones the inner pass would place creates nowhere in
		// particular; every listed zone is out of reach, so they wait.
		p.Deferred += p.Create
		p.Create, p.CreateZones = 0, nil
	}
	if nowhere {
		p.Unbalanced = fmt.Sprintf("every listed zone is unreachable (%s): no replica can be made or deleted in them",
			strings.Join(spec.Zones, ", "))
	}
	if old > 0 {
		p.Holds = append(p.Holds, Hold{By: HoldUnreachable, Waiting: old,
			Reason: fmt.Sprintf("%d replicas on older revisions are in unreachable zones; they are replaced once their zones answer again", old)})
	}
	return p, nil
}

// knownDesired returns the desired count of the known replicas when
// counted replicas of the set are in unreachable zones: the desired count
// less those, plus as many replacements as the strategy's surge allows,
// never more than are unknown nor more than the desired count.
func knownDesired(spec Spec, counted int) int {
	surge := spec.Strategy.Limits(spec.Desired).Surge
	return max(0, spec.Desired-counted) + min(counted, surge, spec.Desired)
}

// reachable returns the listed zones that are not unreachable, in their
// order.
func reachable(spec Spec) []string {
	var out []string
	for _, z := range spec.Zones {
		if !slices.Contains(spec.Unreachable, z) {
			out = append(out, z)
		}
	}
	return out
}
