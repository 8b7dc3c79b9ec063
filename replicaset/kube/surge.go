package kube

import (
	"slices"
	"strings"

	"github.com/replicakit/replicakit/replicaset"
)

// A rolling update's surge children are not a scale-down: the conditions
// judge the children at the desired count (see ReasonRolloutSurge).

// rolloutSurge is how many of the live children above the owner's
// desired count are its rollout's surge, old of them being on older
// revisions: all of them when a rolling update is under way (Spec.Rollout
// a RollingUpdate, not paused, with more children on older revisions
// than its partition keeps) and they are no more than MaxSurge; none
// otherwise, the excess being a scale-down.
func rolloutSurge(o *observation, live, old int) int {
	r, want := o.spec.Rollout, o.spec.Replicas
	if r == nil || r.Type != replicaset.RollingUpdate || r.Paused || live <= want {
		return 0
	}
	lim := r.Limits(want)
	if old <= lim.Partition || live-want > lim.Surge {
		return 0
	}
	return live - want
}

// oldIn counts the members that live on an older revision than the
// owner's template (a child without a revision counts as current).
func oldIn(o *observation, members []child) int {
	n := 0
	for _, m := range members {
		if r := &m.replica; !r.Deleting && isOld(o, r) {
			n++
		}
	}
	return n
}

// isOld reports whether r is on an older revision than the owner's
// template.
func isOld(o *observation, r *replicaset.Replica) bool {
	return o.spec.Rollout != nil && r.Revision != "" && r.Revision != o.revision
}

// holdReasons names the first kind of holds and gives every reason, but
// those of new children waiting for room (HoldMaxSurge), as RolledOut
// does; "" when no other hold is left.
func holdReasons(holds []replicaset.Hold) string {
	var why []string
	kind := ""
	for _, h := range holds {
		if h.By == replicaset.HoldMaxSurge {
			continue
		}
		if kind == "" {
			kind = h.By.String()
		}
		why = append(why, h.Reason)
	}
	if kind == "" {
		return ""
	}
	return kind + ": " + strings.Join(why, "; ")
}

// surgeBalanced reports whether a rollout's surge is all that keeps the
// listed zones from being within one of each other, now or once the pass's
// plan is carried out, and how many children the surge is. In each of the
// two states, the children above the desired count (when they are a
// rollout's surge, see rolloutSurge) are taken away as the rollout will
// take them: as many children on older revisions, each from the fullest
// zone that holds one; the rest must then be within one of each other,
// with none outside the listed zones. It is false when neither state has
// a surge.
func surgeBalanced(o *observation, d decision) (surge int, ok bool) {
	idx := make(map[string]int, len(o.spec.Zones))
	for i, z := range o.spec.Zones {
		idx[z] = i
	}
	n := len(o.spec.Zones)
	zone := func(z string) int {
		if i, ok := idx[z]; ok {
			return i
		}
		return n // every child outside the listed zones
	}
	live, old := make([]int, n+1), make([]int, n+1)
	for _, m := range d.members {
		if r := &m.replica; !r.Deleting {
			live[zone(r.Zone)]++
			if isOld(o, r) {
				old[zone(r.Zone)]++
			}
		}
	}
	now := evenButSurge(o, live, old)
	if now < 0 {
		return 0, false
	}
	for _, r := range d.plan.Delete {
		live[zone(r.Zone)]--
		if isOld(o, &r) {
			old[zone(r.Zone)]--
		}
	}
	for _, z := range d.plan.CreateZones {
		live[zone(z)]++
	}
	after := evenButSurge(o, live, old)
	if after < 0 || now == 0 && after == 0 {
		return 0, false
	}
	return max(now, after), true
}

// evenButSurge takes a rollout's surge away from live, children per zone
// (the listed zones, then one count for every child outside them), old
// of them on older revisions, as surgeBalanced says, and returns the
// surge, or -1 when the zones are then not within one of each other.
func evenButSurge(o *observation, live, old []int) int {
	live, old = slices.Clone(live), slices.Clone(old)
	total, olds := 0, 0
	for i := range live {
		total, olds = total+live[i], olds+old[i]
	}
	surge := rolloutSurge(o, total, olds)
	last := len(live) - 1
	// from picks where a child with a count in c goes: outside the
	// listed zones first, then from the fullest listed zone; -1 when
	// none has one.
	from := func(c []int) int {
		if c[last] > 0 {
			return last
		}
		at := -1
		for i := range last {
			if c[i] > 0 && (at < 0 || live[i] > live[at]) {
				at = i
			}
		}
		return at
	}
	for range surge {
		at := from(old) // those it replaces; past them, new children
		if at < 0 {
			at = from(live)
		}
		if at < 0 {
			break
		}
		live[at]--
		old[at] = max(0, old[at]-1)
	}
	listed := live[:last]
	if live[last] > 0 || len(listed) > 0 && slices.Max(listed)-slices.Min(listed) > 1 {
		return -1
	}
	return surge
}
