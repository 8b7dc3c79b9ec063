package replicaset_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/internal/replicagen"
	"github.com/replicakit/replicakit/replicaset"
)

// naiveKnownDesired is the desired count of the known replicas as
// Compute's documentation states it: K = max(0, D − u) + min(u, S, D).
func naiveKnownDesired(spec replicaset.Spec, unknown []replicaset.Replica) int {
	u := 0
	for _, r := range unknown {
		if !r.Deleting || !spec.ReplaceDeleting {
			u++
		}
	}
	s := naiveLimits(spec.Strategy, spec.Desired).Surge
	return max(0, spec.Desired-u) + min(u, s, spec.Desired)
}

// partition splits rs into the unknown replicas (unreachable, or in
// spec's unreachable zones) and the rest, and returns the spec the rest
// are planned by.
func partition(spec replicaset.Spec, rs []replicaset.Replica) (known, unknown []replicaset.Replica, inner replicaset.Spec) {
	for _, r := range rs {
		if r.Unreachable || slices.Contains(spec.Unreachable, r.Zone) {
			unknown = append(unknown, r)
		} else {
			known = append(known, r)
		}
	}
	inner = spec
	inner.Unreachable, inner.Zones = nil, nil
	inner.Rebalance = spec.Rebalance && len(spec.Unreachable) == 0 && len(unknown) == 0
	inner.Desired = naiveKnownDesired(spec, unknown)
	for _, z := range spec.Zones {
		if !slices.Contains(spec.Unreachable, z) {
			inner.Zones = append(inner.Zones, z)
		}
	}
	return known, unknown, inner
}

// unreachableGen draws some of the zones replicas are drawn in, listed or
// not, in any order, or none.
func unreachableGen() *rapid.Generator[[]string] {
	return rapid.Custom(func(t *rapid.T) []string {
		all := rapid.Permutation([]string{"a", "b", "c", "x"}).Draw(t, "unreachableOrder")
		return all[:rapid.IntRange(0, 4).Draw(t, "unreachableCount")]
	})
}

// unreachableReplicas marks some of rs unreachable (Replica.Unreachable),
// in place, and returns rs.
func unreachableReplicas(t *rapid.T, rs []replicaset.Replica) []replicaset.Replica {
	for i := range rs {
		rs[i].Unreachable = rapid.IntRange(0, 4).Draw(t, "replicaUnreachable") == 0
	}
	return rs
}

// TestCompute_UnreachableProperties checks one pass over unreachable zones
// and unreachable replicas, with and without revisions, on arbitrary
// replicas: the unknown replicas (unreachable, or in those zones) are
// listed as unknown and nothing else is done with them, no create
// goes to them, and the known replicas get exactly the plan, and so every
// invariant (replicasettest.Check, which checkedCompute runs), of a set of
// their own whose desired count is K.
func TestCompute_UnreachableProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var spec replicaset.Spec
		var rs []replicaset.Replica
		if rapid.Bool().Draw(t, "rollout") {
			spec = rolloutSpecGen().Draw(t, "spec")
			rs = withRevisions(t, replicagen.Replicas(30).Draw(t, "replicas"))
		} else {
			spec = replicagen.Spec().Draw(t, "spec")
			spec.Strategy = strategyGen().Draw(t, "strategy")
			rs = replicagen.Replicas(30).Draw(t, "replicas")
		}
		spec.Unreachable = unreachableGen().Draw(t, "unreachable")
		rs = unreachableReplicas(t, rs)
		_, policy := replicagen.Policy(t)
		p, err := checkedCompute(t, spec, rs, policy, replicagen.Now())
		if err != nil {
			t.Fatal(err)
		}
		known, unknown, inner := partition(spec, rs)
		if diff := cmp.Diff(names(unknown), names(p.Unknown), sortNames); diff != "" {
			t.Fatalf("Unknown (-want +got):\n%s", diff)
		}
		for _, r := range slices.Concat(p.Delete, p.Deleting) {
			if r.Unreachable || slices.Contains(spec.Unreachable, r.Zone) {
				t.Fatalf("%q, unreachable or in unreachable zone %s, is in the plan's deletes: %v", r.Name, r.Zone, p)
			}
		}
		for _, z := range p.CreateZones {
			if slices.Contains(spec.Unreachable, z) {
				t.Fatalf("a create goes to unreachable zone %s: %v", z, p)
			}
		}
		want, err := checkedCompute(t, inner, known, policy, replicagen.Now())
		if err != nil {
			t.Fatal(err)
		}
		got := knownPlan(p)
		if nowhere := len(spec.Zones) > 0 && len(inner.Zones) == 0; nowhere {
			if p.Create != 0 || p.Deferred != want.Create+want.Deferred {
				t.Fatalf("every listed zone unreachable: want no create and %d deferred, got %v", want.Create+want.Deferred, p)
			}
			got.Deferred, got.Unbalanced = want.Deferred, want.Unbalanced
			want.Create, want.CreateZones = 0, nil
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("the known replicas' plan differs from that of a set of %d (-want +got):\n%s", inner.Desired, diff)
		}
		old := 0
		for _, r := range unknown {
			if !r.Deleting && r.Revision != "" && spec.Revision != "" && r.Revision != spec.Revision {
				old++
			}
		}
		held := 0
		for _, h := range p.Holds {
			if h.By == replicaset.HoldUnreachable {
				held += h.Waiting
			}
		}
		if held != old {
			t.Fatalf("%d replicas on older revisions are unknown, %d held as unreachable: %v", old, held, p.Holds)
		}
	})
}

// knownPlan returns p without what it says of the unknown replicas.
func knownPlan(p replicaset.Plan) replicaset.Plan {
	p.Unknown = nil
	p.Holds = slices.DeleteFunc(slices.Clone(p.Holds), func(h replicaset.Hold) bool { return h.By == replicaset.HoldUnreachable })
	if len(p.Holds) == 0 {
		p.Holds = nil
	}
	return p
}

// sortNames compares lists of names as sets.
var sortNames = cmp.Transformer("sort", func(in []string) []string { return slices.Sorted(slices.Values(in)) })

// TestUnreachable_PartitionsComeAndGo drives a healthy set over three
// zones pass after pass while zones become unreachable and answer again,
// the count changes and a rollout may start, on a platform whose
// unreachable replicas keep running unseen (and, now and then, one of
// them dies there). At every pass nothing unknown is touched, no create
// goes to an unreachable zone, and the set never holds more than D + S
// replicas (with a rollout's surge on top, D + 2S; Rebalance's one move
// while every zone answers), more only when more than D are unknown. Once every zone answers, the set converges to D,
// on the wanted revision, and stays; with Spec.Rebalance, with its zones
// within one of each other (without it, replicas made elsewhere while a
// zone was away stay where they are, as after a zone backing off).
func TestUnreachable_PartitionsComeAndGo(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		zones := []string{"a", "b", "c"}
		spec := replicaset.Spec{
			Desired:  rapid.IntRange(0, 12).Draw(t, "desired"),
			Zones:    zones,
			Strategy: strategyGen().Draw(t, "strategy"),
		}
		spec.Strategy.Paused, spec.Strategy.Type, spec.Strategy.Partition = false, replicaset.RollingUpdate, replicaset.Amount{}
		spec.Rebalance = rapid.Bool().Draw(t, "rebalance")
		if rapid.Bool().Draw(t, "revisions") {
			spec.Revision = "A"
		}
		_, policy := replicagen.Policy(t)
		s := &sim{}
		for i := range spec.Desired {
			name := fmt.Sprintf("a%d", i)
			s.set = append(s.set, replicaset.Replica{Name: name, UID: "uid-" + name, Revision: spec.Revision, Zone: zones[i%3],
				Phase: replicaset.PhaseRunning, Ready: true, CreatedAt: replicagen.Now()})
		}
		passes := rapid.IntRange(0, 25).Draw(t, "partitionedPasses")
		for pass := range passes {
			switch rapid.IntRange(0, 5).Draw(t, "event") {
			case 0: // a zone becomes unreachable
				z := rapid.SampledFrom(zones).Draw(t, "lost")
				if !slices.Contains(spec.Unreachable, z) {
					spec.Unreachable = append(spec.Unreachable, z)
				}
			case 1: // a zone answers again
				if len(spec.Unreachable) > 0 {
					i := rapid.IntRange(0, len(spec.Unreachable)-1).Draw(t, "back")
					spec.Unreachable = slices.Delete(spec.Unreachable, i, i+1)
				}
			case 2:
				spec.Desired = rapid.IntRange(0, 12).Draw(t, "desired")
			case 3:
				if spec.Revision != "" {
					spec.Revision = map[string]string{"A": "B", "B": "A"}[spec.Revision]
				}
			case 4: // a replica dies unseen in an unreachable zone
				for i, r := range s.set {
					if slices.Contains(spec.Unreachable, r.Zone) {
						s.set = slices.Delete(s.set, i, i+1)
						break
					}
				}
			}
			p, err := checkedCompute(t, spec, s.set, policy, replicagen.Now())
			if err != nil {
				t.Fatalf("pass %d: %v", pass, err)
			}
			_, unknown, inner := partition(spec, s.set)
			for _, r := range slices.Concat(p.Delete, p.Deleting) {
				if slices.Contains(spec.Unreachable, r.Zone) {
					t.Fatalf("pass %d: %q in unreachable zone %s is deleted: %v", pass, r.Name, r.Zone, p)
				}
			}
			for _, z := range p.CreateZones {
				if slices.Contains(spec.Unreachable, z) {
					t.Fatalf("pass %d: a create goes to unreachable zone %s: %v", pass, z, p)
				}
			}
			// The set's size: D + S, a rollout's surge on top, or the
			// unknown replicas and the S standing in for them; never
			// growing when already above.
			sur := naiveLimits(spec.Strategy, spec.Desired).Surge
			bound := max(spec.Desired, len(unknown)) + sur
			if spec.Revision != "" {
				bound += naiveLimits(spec.Strategy, inner.Desired).Surge
			}
			if spec.Rebalance && len(spec.Unreachable) == 0 {
				bound++ // a move: create before delete
			}
			if before, after := len(s.set), len(s.set)+p.Create; after > max(before, bound) {
				t.Fatalf("pass %d: %d replicas + %d creates, over %d (desired %d, %d unknown): %v", pass, before, p.Create, bound, spec.Desired, len(unknown), p)
			}
			s.applyPartitioned(t, spec, p)
		}

		spec.Unreachable = nil
		lim := spec.Strategy.Limits(spec.Desired)
		for pass := 0; ; pass++ {
			p, err := checkedCompute(t, spec, s.set, policy, replicagen.Now())
			if err != nil {
				t.Fatalf("healed pass %d: %v", pass, err)
			}
			if p.IsZero() && len(p.Deleting) == 0 && len(p.Holds) == 0 && available(s.set) == len(s.set) {
				c := tallyOf(spec, s.set)
				lo, hi := zoneSpread(s.set, zones, spec.Desired)
				if c.live != spec.Desired || c.old > lim.Partition || (spec.Rebalance && hi-lo > 1) {
					t.Fatalf("settled with %d live (desired %d), %d old, zones from %d to %d (rebalance %v): %v", c.live, spec.Desired, c.old, lo, hi, spec.Rebalance, p)
				}
				return
			}
			if pass > 6*spec.Desired+40 {
				t.Fatalf("not converged after %d healed passes: %v\nset %+v", pass, p, s.set)
			}
			s.applyZoned(t, spec, p)
		}
	})
}

// applyPartitioned is applyZoned on a platform where the replicas in
// spec's unreachable zones carry on as they were, unseen: being deleted
// stays being deleted, coming up stays coming up.
func (s *sim) applyPartitioned(t *rapid.T, spec replicaset.Spec, p replicaset.Plan) {
	var away []replicaset.Replica
	s.set = slices.DeleteFunc(s.set, func(r replicaset.Replica) bool {
		if slices.Contains(spec.Unreachable, r.Zone) {
			away = append(away, r)
			return true
		}
		return false
	})
	s.applyZoned(t, spec, p)
	s.set = append(s.set, away...)
}

// TestCompute_UnreachableBadSpec checks that unreachable zones are named
// and listed once.
func TestCompute_UnreachableBadSpec(t *testing.T) {
	for _, u := range [][]string{{""}, {"a", "a"}} {
		spec := replicaset.Spec{Desired: 1, Zones: []string{"a", "b"}, Unreachable: u}
		if _, err := checkedCompute(t, spec, nil, deletionpolicy.Random{}, replicagen.Now()); !errors.Is(err, replicaset.ErrInvalidSpec) {
			t.Errorf("Unreachable %q: got %v, want ErrInvalidSpec", u, err)
		}
	}
	// A repeated name among the unknown replicas and the known ones is
	// caught as it is without unreachable zones.
	spec := replicaset.Spec{Desired: 2, Zones: []string{"a", "b"}, Unreachable: []string{"b"}}
	rs := []replicaset.Replica{{Name: "r", Zone: "a"}, {Name: "r", Zone: "b"}}
	if _, err := checkedCompute(t, spec, rs, deletionpolicy.Random{}, replicagen.Now()); !errors.Is(err, replicaset.ErrInvalidReplica) {
		t.Errorf("a name in both: got %v, want ErrInvalidReplica", err)
	}
}

// TestCompute_UnreachableReplica plans a replica the platform cannot read,
// in a zone that answers: it is counted and left alone, known replicas
// stand in for it (at most a surge's worth), and a scale-down takes known
// replicas only.
func TestCompute_UnreachableReplica(t *testing.T) {
	now := replicagen.Now()
	up := func(name string, age time.Duration) replicaset.Replica {
		return replicaset.Replica{Name: name, UID: "uid-" + name, Zone: "a", CreatedAt: now.Add(-age),
			Phase: replicaset.PhaseRunning, Ready: true, ReadySince: now}
	}
	lost := up("r2", 0) // the newest: Newest would take it first
	lost.Unreachable = true
	rs := []replicaset.Replica{up("r0", 2*time.Hour), up("r1", time.Hour), lost}
	for _, tc := range []struct {
		desired, create int
		delete          []string
	}{
		{desired: 3, create: 1}, // K = 2 + min(1, 1, 3): one stands in
		{desired: 4, create: 2},
		{desired: 1, delete: []string{"r1"}}, // K = 0 + min(1, 1, 1)
		{desired: 0, delete: []string{"r0", "r1"}},
	} {
		spec := replicaset.Spec{Desired: tc.desired, Zones: []string{"a", "b"}}
		p, err := checkedCompute(t, spec, rs, deletionpolicy.Newest{}, now)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"r2"}, names(p.Unknown)); diff != "" {
			t.Errorf("desired %d: Unknown (-want +got):\n%s", tc.desired, diff)
		}
		if p.Create != tc.create {
			t.Errorf("desired %d: Create %d, want %d", tc.desired, p.Create, tc.create)
		}
		if diff := cmp.Diff(tc.delete, names(p.Delete), sortNames); diff != "" {
			t.Errorf("desired %d: Delete (-want +got):\n%s", tc.desired, diff)
		}
	}
}
