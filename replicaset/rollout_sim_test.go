package replicaset_test

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/internal/replicagen"
	"github.com/replicakit/replicakit/replicaset"
)

// sim is a platform for rollouts: it carries plans out with faults (creates
// that fail, deletes that take several passes, replicas that come up late
// or never) until told to be healthy.
type sim struct {
	set     []replicaset.Replica
	serial  int
	healthy bool
	waited  map[string]bool // replicas that waited a pass already (applyZoned)
}

// apply carries out p for spec: victims start deleting, creates become
// pending replicas on spec's revision (some fail unless healthy), and then
// time passes: deletions finish and pending replicas come up, some of them,
// or all when healthy.
func (s *sim) apply(t *rapid.T, spec replicaset.Spec, p replicaset.Plan) {
	doomed := map[string]bool{}
	for _, r := range p.Delete {
		doomed[r.Name] = true
	}
	var next []replicaset.Replica
	for _, r := range s.set {
		r.Deleting = r.Deleting || doomed[r.Name]
		if r.Deleting && (s.healthy || rapid.IntRange(0, 2).Draw(t, "deleteFinishes") > 0) {
			continue
		}
		if !r.Deleting && !r.Available(spec.MinReady, replicagen.Now()) && (s.healthy || rapid.IntRange(0, 3).Draw(t, "comesUp") == 0) {
			r.Phase, r.Ready, r.ReadySince = replicaset.PhaseRunning, true, replicagen.Now().Add(-spec.MinReady)
		}
		next = append(next, r)
	}
	for c := range p.Create {
		if !s.healthy && rapid.IntRange(0, 4).Draw(t, "createFails") == 0 {
			continue
		}
		s.serial++
		name := fmt.Sprintf("n%d", s.serial)
		r := replicaset.Replica{Name: name, UID: "uid-" + name, CreatedAt: replicagen.Now(),
			Phase: replicaset.PhasePending, Revision: spec.Revision}
		if c < len(p.CreateZones) {
			r.Zone = p.CreateZones[c]
		}
		next = append(next, r)
	}
	s.set = next
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

// TestRollout_Passes drives a set pass after pass through faults and spec
// changes mid-rollout (A→B→A, scaling, strategy, partition, pause), checks
// every bound at every pass, then makes the platform healthy and checks
// that the rollout converges: the desired count, no replica on an older
// revision beyond the partition, and a plan that stays empty (a fixed
// point).
func TestRollout_Passes(t *testing.T) { rapid.Check(t, rolloutPasses) }

// rolloutPasses is TestRollout_Passes's property, which FuzzRollout_Passes
// drives from the fuzzer's bytes.
func rolloutPasses(t *rapid.T) {
	spec := rolloutSpecGen().Draw(t, "spec")
	_, policy := replicagen.Policy(t)
	s := &sim{set: withRevisions(t, replicagen.Replicas(20).Draw(t, "replicas"))}
	faulty := rapid.IntRange(0, 15).Draw(t, "faultyPasses")
	for pass := range faulty {
		if rapid.IntRange(0, 3).Draw(t, "change") == 0 {
			switch rapid.IntRange(0, 3).Draw(t, "what") {
			case 0:
				spec.Revision = map[string]string{"A": "B", "B": "A"}[spec.Revision]
			case 1:
				spec.Desired = rapid.IntRange(0, 20).Draw(t, "desired")
			case 2:
				spec.Strategy = strategyGen().Draw(t, "strategy")
			case 3:
				spec.Strategy.Paused = !spec.Strategy.Paused
			}
		}
		p, err := checkedCompute(t, spec, s.set, policy, replicagen.Now())
		if err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		checkPass(t, spec, s.set, p)
		s.apply(t, spec, p)
	}

	// Healthy from here on, with a rolling update that may proceed
	// and nothing protected.
	s.healthy = true
	spec.Strategy.Paused, spec.Strategy.Type = false, replicaset.RollingUpdate
	spec.History.ZoneBackoff = nil // creates succeed everywhere now
	for i := range s.set {
		s.set[i].Protected = false
	}
	lim := spec.Strategy.Limits(spec.Desired)
	bound := 3*(len(s.set)+spec.Desired) + 10
	for pass := 0; ; pass++ {
		p, err := checkedCompute(t, spec, s.set, policy, replicagen.Now())
		if err != nil {
			t.Fatalf("healthy pass %d: %v", pass, err)
		}
		checkPass(t, spec, s.set, p)
		waiting := slices.ContainsFunc(p.Holds, func(h replicaset.Hold) bool { return h.By != replicaset.HoldPartition })
		if p.IsZero() && len(p.Deleting) == 0 && !waiting {
			c := tallyOf(spec, s.set)
			if c.live != spec.Desired || c.old > lim.Partition {
				t.Fatalf("settled with %d live (desired %d), %d on older revisions (partition %d): %v", c.live, spec.Desired, c.old, lim.Partition, p)
			}
			again, err := checkedCompute(t, spec, s.set, policy, replicagen.Now())
			if err != nil || !again.IsZero() || len(again.Delete) > 0 {
				t.Fatalf("a settled set is not a fixed point: %v, %v", again, err)
			}
			return
		}
		if pass > bound {
			t.Fatalf("not converged after %d healthy passes: %v\nspec %+v\nset %+v", pass, p, spec, s.set)
		}
		s.apply(t, spec, p)
	}
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
		s := &sim{healthy: true}
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
			checkPass(t, spec, s.set, p)
			waiting := slices.ContainsFunc(p.Holds, func(h replicaset.Hold) bool { return h.By != replicaset.HoldPartition })
			if pass >= 8 && p.IsZero() && len(p.Deleting) == 0 && !waiting {
				c := tallyOf(spec, s.set)
				per := map[string]int{}
				for _, r := range s.set {
					per[r.Zone]++
				}
				lo, hi := spec.Desired, 0
				for _, z := range zones {
					lo, hi = min(lo, per[z]), max(hi, per[z])
				}
				if c.live != spec.Desired || c.old > lim.Partition || hi-lo > 1 {
					t.Fatalf("settled with %d live (desired %d), %d old, zones %v: %v", c.live, spec.Desired, c.old, per, p)
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
