package replicaset_test

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/internal/replicagen"
	"github.com/replicakit/replicakit/replicaset"
)

// sim is a healthy platform for rollouts over zones: its deletions take
// a pass or two and its new replicas come up a pass or two late
// (applyZoned).
type sim struct {
	set    []replicaset.Replica
	serial int
	waited map[string]bool // replicas that waited a pass already
}

// applyZoned carries out p on a healthy platform whose deletions still
// take a pass or two and whose new replicas come up a pass or two late.
func (s *sim) applyZoned(t *rapid.T, spec replicaset.Spec, p replicaset.Plan) {
	doomed := map[string]bool{}
	for _, r := range p.Delete {
		doomed[r.Name] = true
	}
	if s.waited == nil {
		s.waited = map[string]bool{}
	}
	// late reports whether what r waits for (its deletion, its start)
	// happens this pass: at the latest on its second.
	late := func(r replicaset.Replica, label string) bool {
		if s.waited[r.Name] || rapid.Bool().Draw(t, label) {
			delete(s.waited, r.Name)
			return true
		}
		s.waited[r.Name] = true
		return false
	}
	var next []replicaset.Replica
	for _, r := range s.set {
		r.Deleting = r.Deleting || doomed[r.Name]
		if r.Deleting && late(r, "deleteFinishes") {
			continue
		}
		if !r.Deleting && !r.Ready && late(r, "comesUp") {
			r.Phase, r.Ready = replicaset.PhaseRunning, true
		}
		next = append(next, r)
	}
	for c := range p.Create {
		s.serial++
		name := fmt.Sprintf("n%d", s.serial)
		next = append(next, replicaset.Replica{Name: name, UID: "uid-" + name, CreatedAt: replicagen.Now(),
			Phase: replicaset.PhasePending, Revision: spec.Revision, Zone: p.CreateZones[c]})
	}
	s.set = next
}

// TestRollout_ZonesBalanced rolls a set spread evenly over its zones from
// "A" to "B" (and now and then back), deletions finishing late and new
// replicas coming up late, and checks that it converges with the zones
// within one of each other, one zone at a time or not.
func TestRollout_ZonesBalanced(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		zones := replicagen.Zones().Draw(t, "zones")
		spec := replicaset.Spec{
			Desired:  rapid.IntRange(0, 12).Draw(t, "desired"),
			Zones:    zones,
			Revision: "B",
			Strategy: strategyGen().Draw(t, "strategy"),
		}
		spec.Strategy.Paused, spec.Strategy.Type, spec.Strategy.Partition = false, replicaset.RollingUpdate, replicaset.Amount{}
		_, policy := replicagen.Policy(t)
		flips := rapid.Bool().Draw(t, "flips")
		s := &sim{}
		for i := range spec.Desired {
			name := fmt.Sprintf("a%d", i)
			s.set = append(s.set, replicaset.Replica{Name: name, UID: "uid-" + name, Revision: "A", Zone: zones[i%len(zones)],
				Phase: replicaset.PhaseRunning, Ready: true, CreatedAt: replicagen.Now()})
		}
		lim := spec.Strategy.Limits(spec.Desired)
		bound := 6*spec.Desired + 20
		for pass := 0; ; pass++ {
			if pass < 8 && flips && rapid.IntRange(0, 9).Draw(t, "rollBack") == 0 {
				spec.Revision = map[string]string{"A": "B", "B": "A"}[spec.Revision]
			}
			p, err := checkedCompute(t, spec, s.set, policy, replicagen.Now())
			if err != nil {
				t.Fatalf("pass %d: %v", pass, err)
			}
			waiting := slices.ContainsFunc(p.Holds, func(h replicaset.Hold) bool { return h.By != replicaset.HoldPartition })
			if pass >= 8 && p.IsZero() && len(p.Deleting) == 0 && !waiting {
				c := tallyOf(spec, s.set)
				lo, hi := zoneSpread(s.set, zones, spec.Desired)
				if c.live != spec.Desired || c.old > lim.Partition || hi-lo > 1 {
					t.Fatalf("settled with %d live (desired %d), %d old, zones from %d to %d: %v", c.live, spec.Desired, c.old, lo, hi, p)
				}
				return
			}
			if pass > bound {
				t.Fatalf("not converged after %d passes: %v\nset %+v", pass, p, s.set)
			}
			s.applyZoned(t, spec, p)
		}
	})
}

// zoneSpread returns the fewest and the most replicas of set in any of
// zones (the fewest starts at most, desired).
func zoneSpread(set []replicaset.Replica, zones []string, most int) (lo, hi int) {
	per := map[string]int{}
	for _, r := range set {
		per[r.Zone]++
	}
	lo = most
	for _, z := range zones {
		lo, hi = min(lo, per[z]), max(hi, per[z])
	}
	return lo, hi
}
