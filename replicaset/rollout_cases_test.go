package replicaset_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/internal/replicagen"
	"github.com/replicakit/replicakit/replicaset"
)

// on returns n available replicas on revision rev, named prefix-0 …
func on(prefix, rev string, n int) []replicaset.Replica {
	rs := make([]replicaset.Replica, n)
	for i := range rs {
		name := fmt.Sprintf("%s-%d", prefix, i)
		rs[i] = replicaset.Replica{Name: name, UID: "uid-" + name, Revision: rev,
			Phase: replicaset.PhaseRunning, Ready: true, CreatedAt: replicagen.Now(),
			Ordinal: i, HasOrdinal: true}
	}
	return rs
}

// zoned puts rs[i] in zones[i].
func zoned(rs []replicaset.Replica, zones ...string) []replicaset.Replica {
	for i := range rs {
		rs[i].Zone = zones[i]
	}
	return rs
}

// pending returns r as a replica being provisioned.
func pending(r replicaset.Replica) replicaset.Replica {
	r.Phase, r.Ready = replicaset.PhasePending, false
	return r
}

func holdKinds(p replicaset.Plan) []string {
	var ks []string
	for _, h := range p.Holds {
		ks = append(ks, fmt.Sprintf("%s:%d", h.By, h.Waiting))
	}
	return ks
}

// TestCompute_RolloutCases: one pass in each situation the rollout rules
// name, with the plan it must give.
func TestCompute_RolloutCases(t *testing.T) {
	policy := deletionpolicy.HighestOrdinal{}
	oldUnavailable := on("old", "A", 4)
	oldUnavailable[1].Ready = false                // not available
	oldUnavailable[2] = pending(oldUnavailable[2]) // broken
	oldUnavailable[3].MarkedForDeletion = true
	tests := []struct {
		name   string
		spec   replicaset.Spec
		set    []replicaset.Replica
		create int
		delete []string
		holds  []string
	}{
		{
			name:   "defaults surge one and delete none while the surge replica comes up",
			spec:   replicaset.Spec{Desired: 3, Revision: "B"},
			set:    on("a", "A", 3),
			create: 1,
			holds:  []string{"MaxSurge:2", "MaxUnavailable:3"},
		},
		{
			name:   "the surge replica available, one replica on A goes",
			spec:   replicaset.Spec{Desired: 3, Revision: "B"},
			set:    append(on("a", "A", 3), on("b", "B", 1)...),
			delete: []string{"a-2"},
			holds:  []string{"MaxSurge:2", "MaxUnavailable:2"},
		},
		{
			name:   "replacement order: marked, broken, not available, then the policy's",
			spec:   replicaset.Spec{Desired: 4, Revision: "B", Strategy: replicaset.Strategy{MaxSurge: replicaset.Count(0), MaxUnavailable: replicaset.Count(3)}},
			set:    oldUnavailable,
			delete: []string{"old-3", "old-2", "old-1"},
			holds:  []string{"MaxSurge:4", "MaxUnavailable:1"},
		},
		{
			name:   "MaxSurge 0 and MaxUnavailable rounded down to zero: Unavailable is 1, and replicas are replaced in place",
			spec:   replicaset.Spec{Desired: 2, Revision: "B", Strategy: replicaset.Strategy{MaxSurge: replicaset.Count(0), MaxUnavailable: replicaset.Percent(25)}},
			set:    on("a", "A", 2),
			delete: []string{"a-1"},
			holds:  []string{"MaxSurge:2", "MaxUnavailable:1"},
		},
		{
			name:   "a partition keeps its replicas on A",
			spec:   replicaset.Spec{Desired: 3, Revision: "B", Strategy: replicaset.Strategy{Partition: replicaset.Count(2)}},
			set:    append(on("a", "A", 2), on("b", "B", 1)...),
			holds:  []string{"Partition:2"},
			create: 0,
		},
		{
			name:   "paused: scaling up still creates, on B; nothing is replaced",
			spec:   replicaset.Spec{Desired: 3, Revision: "B", Strategy: replicaset.Strategy{Paused: true}},
			set:    on("a", "A", 2),
			create: 1,
			holds:  []string{"Paused:2"},
		},
		{
			name:  "OnDelete replaces nothing",
			spec:  replicaset.Spec{Desired: 2, Revision: "B", Strategy: replicaset.Strategy{Type: replicaset.OnDelete}},
			set:   on("a", "A", 2),
			holds: []string{"OnDelete:2"},
		},
		{
			name:   "scaling down in a rollout removes replicas on older revisions first",
			spec:   replicaset.Spec{Desired: 2, Revision: "B", Strategy: replicaset.Strategy{MaxUnavailable: replicaset.Count(2)}},
			set:    append(on("a", "A", 2), on("b", "B", 2)...),
			delete: []string{"a-1", "a-0"},
		},
		{
			name:   "rolling back to A deletes only replicas on B",
			spec:   replicaset.Spec{Desired: 4, Revision: "A", Strategy: replicaset.Strategy{MaxUnavailable: replicaset.Count(1)}},
			set:    append(on("a", "A", 2), on("b", "B", 2)...),
			create: 1,
			delete: []string{"b-1"},
			holds:  []string{"MaxSurge:1", "MaxUnavailable:1"},
		},
		{
			name: "a zone backing off replaces nothing; the others go on",
			spec: replicaset.Spec{Desired: 2, Revision: "B", Zones: []string{"a", "b"},
				History:  replicaset.History{ZoneBackoff: []replicaset.ZoneBackoff{{Zone: "b", Until: replicagen.Now().Add(time.Minute)}}},
				Strategy: replicaset.Strategy{MaxSurge: replicaset.Count(0), MaxUnavailable: replicaset.Count(2)}},
			set:    zoned(on("a", "A", 2), "a", "b"),
			delete: []string{"a-0"},
			holds:  []string{"MaxSurge:2", "ZoneBackoff:1"},
		},
		{
			name: "a surge create waits while only a zone backing off has replicas to replace",
			spec: replicaset.Spec{Desired: 6, Revision: "B", Zones: []string{"a", "b", "c"},
				History: replicaset.History{ZoneBackoff: []replicaset.ZoneBackoff{{Zone: "b", Until: replicagen.Now().Add(time.Minute)}}}},
			set:   append(zoned(on("n", "B", 4), "a", "a", "c", "c"), zoned(on("o", "A", 2), "b", "b")...),
			holds: []string{"ZoneBackoff:2"},
		},
		{
			name:   "replicas made before revisions were recorded count as on the wanted one",
			spec:   replicaset.Spec{Desired: 2, Revision: "B"},
			set:    on("a", "", 2),
			create: 0,
		},
		{
			name:  "protected replicas on older revisions are not replaced, and the hold says so",
			spec:  replicaset.Spec{Desired: 1, Revision: "B"},
			set:   []replicaset.Replica{{Name: "a-0", Revision: "A", Protected: true, Phase: replicaset.PhaseRunning, Ready: true}, on("b", "B", 1)[0]},
			holds: []string{"LastAvailable:1", "Protected:1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := checkedCompute(t, tt.spec, tt.set, policy, replicagen.Now())
			if err != nil {
				t.Fatal(err)
			}
			var deleted []string
			for _, r := range p.Delete {
				deleted = append(deleted, r.Name)
			}
			if p.Create != tt.create || !gocmp.Equal(deleted, tt.delete, emptyEqual) || !gocmp.Equal(holdKinds(p), tt.holds, emptyEqual) {
				t.Errorf("plan %v\nwant create=%d delete=%v holds=%v", p, tt.create, tt.delete, tt.holds)
			}
		})
	}
}

var emptyEqual = gocmp.Comparer(func(a, b []string) bool { return strings.Join(a, " ") == strings.Join(b, " ") })

// TestCompute_RolloutFailingCreates: a surge create that keeps failing
// (quota, capacity) does not hold a rollout silently. With MaxUnavailable
// zero the plan holds and its MaxUnavailable hold says the surge replicas
// are not coming and which setting would let it go on; with
// MaxUnavailable above zero it replaces within it regardless.
func TestCompute_RolloutFailingCreates(t *testing.T) {
	spec := replicaset.Spec{Desired: 3, Revision: "B", History: replicaset.History{CreatesFailing: true}}
	set := on("a", "A", 3) // the surge create asked for before never came
	p, err := checkedCompute(t, spec, set, deletionpolicy.Random{}, replicagen.Now())
	if err != nil {
		t.Fatal(err)
	}
	var reason string
	for _, h := range p.Holds {
		if h.By == replicaset.HoldMaxUnavailable {
			reason = h.Reason
		}
	}
	if p.Create != 1 || len(p.Delete) != 0 || !strings.Contains(reason, "creates are failing") || !strings.Contains(reason, "MaxUnavailable above 0") {
		t.Errorf("MaxUnavailable 0: plan %v, hold %q; want the create retried, nothing deleted, and a hold naming MaxUnavailable", p, reason)
	}

	spec.Strategy.MaxUnavailable = replicaset.Count(1)
	p, err = checkedCompute(t, spec, set, deletionpolicy.Random{}, replicagen.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Delete) != 1 {
		t.Errorf("MaxUnavailable 1: plan %v, want one replica on A replaced in place", p)
	}
}

// TestLimits: the rounding rule on the values people use.
func TestLimits(t *testing.T) {
	pct, n := replicaset.Percent, replicaset.Count
	tests := []struct {
		s       replicaset.Strategy
		desired int
		want    replicaset.Limits
	}{
		{replicaset.Strategy{}, 10, replicaset.Limits{Surge: 1, Unavailable: 0}},
		{replicaset.Strategy{MaxSurge: pct(25), MaxUnavailable: pct(25)}, 10, replicaset.Limits{Surge: 3, Unavailable: 2}},
		{replicaset.Strategy{MaxSurge: pct(25), MaxUnavailable: pct(25)}, 1, replicaset.Limits{Surge: 1, Unavailable: 0}},
		{replicaset.Strategy{MaxSurge: n(0), MaxUnavailable: n(0)}, 5, replicaset.Limits{Surge: 0, Unavailable: 1}},
		{replicaset.Strategy{MaxSurge: pct(10), MaxUnavailable: pct(10)}, 0, replicaset.Limits{Surge: 0, Unavailable: 0}},
		{replicaset.Strategy{MaxSurge: n(0), MaxUnavailable: pct(25)}, 3, replicaset.Limits{Surge: 0, Unavailable: 1}},
		{replicaset.Strategy{MaxUnavailable: n(10)}, 5, replicaset.Limits{Surge: 1, Unavailable: 5}},
		{replicaset.Strategy{Partition: pct(33)}, 10, replicaset.Limits{Surge: 1, Partition: 4}},
		{replicaset.Strategy{Partition: n(12)}, 10, replicaset.Limits{Surge: 1, Partition: 10}},
	}
	for _, tt := range tests {
		if got := tt.s.Limits(tt.desired); got != tt.want {
			t.Errorf("%+v.Limits(%d) = %+v, want %+v", tt.s, tt.desired, got, tt.want)
		}
	}
}

// TestParseAmount_Errors: what is neither a count nor a percentage of zero
// or more is refused.
func TestParseAmount_Errors(t *testing.T) {
	for _, s := range []string{"", "%", "-1", "-5%", "1.5", "25 %", "x"} {
		if a, err := replicaset.ParseAmount(s); err == nil {
			t.Errorf("ParseAmount(%q) = %v, want an error", s, a)
		}
	}
}

// TestSpec_ValidateStrategy: negative amounts and an unknown strategy type
// are invalid specs.
func TestSpec_ValidateStrategy(t *testing.T) {
	for _, s := range []replicaset.Spec{
		{Revision: "B", Strategy: replicaset.Strategy{MaxSurge: replicaset.Count(-1)}},
		{Revision: "B", Strategy: replicaset.Strategy{Partition: replicaset.Percent(-3)}},
		{Revision: "B", Strategy: replicaset.Strategy{Type: replicaset.StrategyType(7)}},
	} {
		if err := s.Validate(); !errors.Is(err, replicaset.ErrInvalidSpec) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidSpec", s, err)
		}
	}
}

// TestCompute_RolloutKeepsZoneShares rolls the spread set of the example
// operator (four VMs over three clusters, 2/1/1) to a new revision, pass
// after pass on a platform that carries every plan out at once, and
// checks that every zone keeps its share: 2/1/1 in the same zones, all on
// the new revision. One zone at a time or not.
func TestCompute_RolloutKeepsZoneShares(t *testing.T) {
	for _, byZone := range []bool{false, true} {
		t.Run(fmt.Sprintf("ZoneByZone=%v", byZone), func(t *testing.T) {
			spec := replicaset.Spec{Desired: 4, Zones: []string{"a", "b", "c"}, Revision: "B",
				Strategy: replicaset.Strategy{ZoneByZone: byZone}}
			var set []replicaset.Replica
			for i, z := range []string{"a", "a", "b", "c"} {
				r := on("web", "A", 4)[i]
				r.Zone = z
				set = append(set, r)
			}
			serial := 0
			for pass := 0; ; pass++ {
				p, err := checkedCompute(t, spec, set, deletionpolicy.Random{}, replicagen.Now())
				if err != nil {
					t.Fatal(err)
				}
				if p.IsZero() && len(p.Holds) == 0 {
					break
				}
				if pass > 20 {
					t.Fatalf("not done after %d passes: %v", pass, p)
				}
				var next []replicaset.Replica
				for _, r := range set {
					if !slices.ContainsFunc(p.Delete, func(v replicaset.Replica) bool { return v.Name == r.Name }) {
						next = append(next, r)
					}
				}
				for _, z := range p.CreateZones {
					serial++
					r := on(fmt.Sprintf("new%d", serial), "B", 1)[0]
					r.Zone = z
					next = append(next, r)
				}
				set = next
			}
			per := map[string]int{}
			for _, r := range set {
				if r.Revision != "B" {
					t.Errorf("%s is still on %s", r.Name, r.Revision)
				}
				per[r.Zone]++
			}
			if want := map[string]int{"a": 2, "b": 1, "c": 1}; !gocmp.Equal(per, want) {
				t.Errorf("zones %v, want %v", per, want)
			}
		})
	}
}
