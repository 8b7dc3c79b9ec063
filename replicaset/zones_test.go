package replicaset_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/internal/replicagen"
	"github.com/replicakit/replicakit/replicaset"
)

// in returns r in zone.
func in(zone string, r replicaset.Replica) replicaset.Replica { r.Zone = zone; return r }

func broken(r replicaset.Replica) replicaset.Replica {
	r.Phase, r.Ready = replicaset.PhaseFailed, false
	return r
}

// TestCompute_Zones pins the zoned deletion order and the assignment of
// creates, case by case.
func TestCompute_Zones(t *testing.T) {
	abc := []string{"a", "b", "c"}
	r := func(zone, name string, age int) replicaset.Replica {
		return in(zone, aged(name, time.Duration(age)*time.Hour))
	}
	a1, a2, a3 := r("a", "a1", 9), r("a", "a2", 8), r("a", "a3", 7)
	b1, b2, b3 := r("b", "b1", 6), r("b", "b2", 5), r("b", "b3", 4)
	c1, c2 := r("c", "c1", 3), r("c", "c2", 2)
	tests := []struct {
		desc     string
		spec     replicaset.Spec
		replicas []replicaset.Replica
		want     replicaset.Plan
	}{{
		desc: "0 to 6: two per zone, filled in listed order",
		spec: replicaset.Spec{Desired: 6, Zones: abc},
		want: replicaset.Plan{Create: 6, CreateZones: []string{"a", "b", "c", "a", "b", "c"}},
	}, {
		desc:     "6 to 4 leaves 2/1/1: ties go to the later listed zone",
		spec:     replicaset.Spec{Desired: 4, Zones: abc},
		replicas: []replicaset.Replica{a1, a2, b1, b2, c1, c2},
		want:     replicaset.Plan{Delete: []replicaset.Replica{c1, b1}},
	}, {
		desc:     "the most populated zone gives first, the policy chooses inside it (oldest)",
		spec:     replicaset.Spec{Desired: 5, Zones: abc},
		replicas: []replicaset.Replica{a1, a2, a3, b1, b2, b3, c1},
		want:     replicaset.Plan{Delete: []replicaset.Replica{b1, a1}},
	}, {
		desc:     "creates fill the emptiest zone first",
		spec:     replicaset.Spec{Desired: 6, Zones: abc},
		replicas: []replicaset.Replica{a1, a2, b1},
		want:     replicaset.Plan{Create: 3, CreateZones: []string{"c", "b", "c"}},
	}, {
		desc:     "a zone backing off gets no creates; an expired backoff is ignored",
		spec:     replicaset.Spec{Desired: 4, Zones: abc, History: replicaset.History{ZoneBackoff: []replicaset.ZoneBackoff{{Zone: "b", Until: now.Add(time.Minute)}, {Zone: "c", Until: now}}}},
		replicas: []replicaset.Replica{a1},
		want: replicaset.Plan{Create: 3, CreateZones: []string{"c", "a", "c"},
			Unbalanced: "zones hold a=2 b=0 c=2 live replicas: creates avoid b, backing off after failures"},
	}, {
		desc: "every zone backing off: creates go everywhere again",
		spec: replicaset.Spec{Desired: 2, Zones: []string{"a", "b"}, History: replicaset.History{ZoneBackoff: []replicaset.ZoneBackoff{{Zone: "a", Until: now.Add(time.Minute)}, {Zone: "b", Until: now.Add(time.Hour)}}}},
		want: replicaset.Plan{Create: 2, CreateZones: []string{"a", "b"}},
	}, {
		desc:     "marked, then unlisted or zoneless, then broken, then by zone",
		spec:     replicaset.Spec{Desired: 2, Zones: []string{"a", "b"}},
		replicas: []replicaset.Replica{a1, a2, a3, b1, broken(b2), r("x", "x1", 1), r("", "n1", 20), marked(b3)},
		want:     replicaset.Plan{Delete: []replicaset.Replica{marked(b3), r("", "n1", 20), r("x", "x1", 1), broken(b2), a1, a2}},
	}, {
		desc:     "protected replicas count in their zone but are never chosen",
		spec:     replicaset.Spec{Desired: 3, Zones: []string{"a", "b"}},
		replicas: []replicaset.Replica{protected(a1), protected(a2), protected(a3), b1, b2},
		want: replicaset.Plan{Delete: []replicaset.Replica{b1, b2},
			Unbalanced: "zones hold a=3 b=0 live replicas: protected replicas cannot go"},
	}, {
		desc:     "an empty zone stays empty on a scale-down: not moved, whatever went",
		spec:     replicaset.Spec{Desired: 3, Zones: abc},
		replicas: []replicaset.Replica{a1, a2, a3, b1, b2, b3},
		want: replicaset.Plan{Delete: []replicaset.Replica{b1, a1, b2},
			Unbalanced: "zones hold a=2 b=1 c=0 live replicas: replicas are not moved between zones"},
	}, {
		desc:     "a broken replica goes first even from the smallest zone",
		spec:     replicaset.Spec{Desired: 4, Zones: abc},
		replicas: []replicaset.Replica{a1, a2, b1, b2, broken(c1)},
		want: replicaset.Plan{Delete: []replicaset.Replica{broken(c1)},
			Unbalanced: "zones hold a=2 b=2 c=0 live replicas: marked, broken or unlisted replicas went first"},
	}, {
		desc:     "a protected replica that is not in the way is not blamed",
		spec:     replicaset.Spec{Desired: 4, Zones: abc},
		replicas: []replicaset.Replica{protected(a1), a2, a3, b1, b2, b3},
		want: replicaset.Plan{Delete: []replicaset.Replica{b1, a2},
			Unbalanced: "zones hold a=2 b=2 c=0 live replicas: replicas are not moved between zones"},
	}, {
		desc:     "a backoff is not blamed when nothing is created",
		spec:     replicaset.Spec{Desired: 3, Zones: []string{"a", "b"}, History: replicaset.History{ZoneBackoff: []replicaset.ZoneBackoff{{Zone: "b", Until: now.Add(time.Minute)}}}},
		replicas: []replicaset.Replica{a1, a2, a3},
		want:     replicaset.Plan{Unbalanced: "zones hold a=3 b=0 live replicas: replicas are not moved between zones"},
	}, {
		desc:     "a marked replica was its zone's last candidate: the protected rest are blamed",
		spec:     replicaset.Spec{Desired: 2, Zones: []string{"a", "b"}},
		replicas: []replicaset.Replica{protected(a1), protected(a2), marked(a3), b1, b2},
		want: replicaset.Plan{Delete: []replicaset.Replica{marked(a3), b1, b2},
			Unbalanced: "zones hold a=2 b=0 live replicas: protected replicas cannot go"},
	}, {
		desc:     "replicas in no listed zone are counted in the reason",
		spec:     replicaset.Spec{Desired: 4, Zones: []string{"a", "b"}},
		replicas: []replicaset.Replica{a1, a2, a3, protected(r("x", "x1", 1))},
		want:     replicaset.Plan{Unbalanced: "zones hold a=3 b=0 live replicas, and 1 in zones not listed: replicas are not moved between zones"},
	}, {
		desc:     "replicas are not moved to restore balance",
		spec:     replicaset.Spec{Desired: 3, Zones: abc},
		replicas: []replicaset.Replica{a1, a2, a3},
		want:     replicaset.Plan{Unbalanced: "zones hold a=3 b=0 c=0 live replicas: replicas are not moved between zones"},
	}, {
		desc:     "the cap holds creates back",
		spec:     replicaset.Spec{Desired: 6, Zones: abc, MaxPerPass: 1},
		replicas: []replicaset.Replica{a1, b1, c1},
		want:     replicaset.Plan{Create: 1, Deferred: 2, CreateZones: []string{"a"}},
	}}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			got, err := checkedCompute(t, tt.spec, tt.replicas, deletionpolicy.Oldest{}, now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("plan (-want +got):\n%s\ngot %v", diff, got)
			}
		})
	}
}

func TestCompute_ZonesBadSpec(t *testing.T) {
	for _, zones := range [][]string{{"a", "a"}, {"a", ""}} {
		_, err := checkedCompute(t, replicaset.Spec{Desired: 1, Zones: zones}, nil, deletionpolicy.Random{}, now)
		if !errors.Is(err, replicaset.ErrInvalidSpec) {
			t.Errorf("zones %q: %v, want ErrInvalidSpec", zones, err)
		}
	}
}

// spread returns the live replicas per listed zone and their max - min.
func spread(zones []string, rs []replicaset.Replica) (map[string]int, int) {
	n := map[string]int{}
	for _, z := range zones {
		n[z] = 0
	}
	for _, r := range rs {
		if _, ok := n[r.Zone]; ok && !r.Deleting {
			n[r.Zone]++
		}
	}
	lo, hi := len(rs), 0
	for _, k := range n {
		lo, hi = min(lo, k), max(hi, k)
	}
	return n, max(0, hi-lo)
}

// healthySet draws a set spread evenly over zones (within one), every
// replica healthy, unmarked and unprotected.
func healthySet(t *rapid.T, zones []string) []replicaset.Replica {
	per := rapid.IntRange(0, 8).Draw(t, "per")
	extra := rapid.IntRange(0, len(zones)-1).Draw(t, "extra")
	var rs []replicaset.Replica
	for i, z := range rapid.Permutation(zones).Draw(t, "fuller") {
		k := per
		if i < extra {
			k++
		}
		for j := range k {
			name := fmt.Sprintf("%s-%d", z, j)
			rs = append(rs, replicaset.Replica{Name: name, UID: "uid-" + name, Zone: z, Phase: replicaset.PhaseRunning, Ready: true,
				CreatedAt: replicagen.Now().Add(-time.Duration(rapid.IntRange(0, 3600).Draw(t, "age")) * time.Second)})
		}
	}
	return rs
}

// TestZones_StayBalanced: a healthy set balanced over its zones stays
// within one of balance through any sequence of scale changes, capped
// passes included, and no pass reports it unbalanced.
func TestZones_StayBalanced(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		zones := replicagen.Zones().Draw(t, "zones")
		set := healthySet(t, zones)
		_, policy := replicagen.Policy(t)
		serial := 0
		for step := range rapid.IntRange(1, 6).Draw(t, "steps") {
			spec := replicaset.Spec{Desired: rapid.IntRange(0, 30).Draw(t, "desired"), Zones: zones, Seed: 3,
				MaxPerPass: rapid.IntRange(0, 3).Draw(t, "maxPerPass")}
			p, err := checkedCompute(t, spec, set, policy, replicagen.Now())
			if err != nil {
				t.Fatal(err)
			}
			if p.Unbalanced != "" {
				t.Fatalf("step %d: %v", step, p)
			}
			created := replicagen.Names("new-", &serial, p.Create)
			set = replicagen.Apply(set, p, created, true)
			if n, d := spread(zones, set); d > 1 {
				t.Fatalf("step %d: plan %v left zones at %v", step, p, n)
			}
		}
	})
}

// TestZones_NeverFurtherApart: on any input, a pass whose creates avoid no
// zone, or whose victims all come from the healthy tier, leaves the listed
// zones no further apart than before (one apart at most if they were
// level); Unbalanced is set exactly when they end more than one apart.
func TestZones_NeverFurtherApart(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spec := replicagen.Spec().Draw(t, "spec")
		if len(spec.Zones) == 0 {
			spec.Zones = replicagen.Zones().Draw(t, "zones")
		}
		rs := replicagen.Replicas(40).Draw(t, "replicas")
		_, policy := replicagen.Policy(t)
		p, err := checkedCompute(t, spec, rs, policy, replicagen.Now())
		if err != nil {
			t.Fatal(err)
		}
		_, before := spread(spec.Zones, rs)
		var created []string
		for i := range p.Create {
			created = append(created, fmt.Sprintf("new-%d", i))
		}
		n, after := spread(spec.Zones, replicagen.Apply(rs, p, created, false))
		if (after > 1) != (p.Unbalanced != "") {
			t.Fatalf("zones end at %v but Unbalanced is %q", n, p.Unbalanced)
		}
		// Healthy victims only, and no protected replica to skew the zones
		// the victims come from.
		healthyOnly := !slices.ContainsFunc(p.Delete, func(r replicaset.Replica) bool {
			return r.MarkedForDeletion || !slices.Contains(spec.Zones, r.Zone) || r.Phase == replicaset.PhasePending || r.Phase == replicaset.PhaseFailed
		}) && !slices.ContainsFunc(rs, func(r replicaset.Replica) bool {
			return r.Protected && !r.Deleting && slices.Contains(spec.Zones, r.Zone)
		})
		backoff := slices.ContainsFunc(spec.History.ZoneBackoff, func(b replicaset.ZoneBackoff) bool { return b.Until.After(replicagen.Now()) })
		if (p.Create > 0 && !backoff || len(p.Delete) > 0 && healthyOnly) && after > max(before, 1) {
			t.Fatalf("plan %v took zones from %d apart to %v", p, before, n)
		}
	})
}

// TestZones_RouteAroundAFailingZone: with one zone refusing every create,
// passes place the missing replicas in the others (never in the failing
// zone while it backs off) and the set reaches its count.
func TestZones_RouteAroundAFailingZone(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		zones := []string{"a", "b", "c"}
		failing := rapid.SampledFrom(zones).Draw(t, "failing")
		desired := rapid.IntRange(1, 20).Draw(t, "desired")
		var set []replicaset.Replica
		var backoff []replicaset.ZoneBackoff
		serial := 0
		for pass := 0; pass < 10; pass++ {
			spec := replicaset.Spec{Desired: desired, Zones: zones, History: replicaset.History{ZoneBackoff: backoff}}
			p, err := checkedCompute(t, spec, set, deletionpolicy.Random{}, replicagen.Now())
			if err != nil {
				t.Fatal(err)
			}
			if p.IsZero() {
				if live := len(set); live != desired {
					t.Fatalf("pass %d: settled at %d, want %d", pass, live, desired)
				}
				return
			}
			var ok replicaset.Plan
			ok.Delete = p.Delete
			var created []string
			for i, z := range p.CreateZones {
				if z == failing {
					if len(spec.History.ZoneBackoff) > 0 {
						t.Fatalf("pass %d: create in %s while it backs off: %v", pass, z, p)
					}
					backoff = []replicaset.ZoneBackoff{{Zone: z, Until: replicagen.Now().Add(time.Minute)}}
					continue
				}
				serial++
				created = append(created, fmt.Sprintf("new-%d", serial))
				ok.CreateZones = append(ok.CreateZones, p.CreateZones[i])
			}
			set = replicagen.Apply(set, ok, created, true)
		}
		t.Fatalf("not settled after 10 passes: %d replicas, want %d", len(set), desired)
	})
}

// BenchmarkCompute_Zones measures a capped scale-down of 100,000 replicas
// spread over 10 zones, beside the same set without zones ("baseline");
// and the two in alternation ("paired", whose ns/op covers one of each),
// reporting the zoned call's time over the other's as zoned/none.
func BenchmarkCompute_Zones(b *testing.B) {
	const n = 100_000
	var zones []string
	for i := range 10 {
		zones = append(zones, fmt.Sprintf("zone-%d", i))
	}
	replicas := make([]replicaset.Replica, n)
	for i := range replicas {
		replicas[i] = replicaset.Replica{Name: fmt.Sprintf("set-%d", i), UID: fmt.Sprintf("uid-%d", i), Zone: zones[(i*7)%10],
			CreatedAt: now.Add(-time.Duration(i) * time.Second), Phase: replicaset.PhaseRunning, Ready: true}
	}
	for _, c := range []struct {
		name  string
		zones []string
	}{{"baseline", nil}, {"zones=10", zones}} {
		spec := replicaset.Spec{Desired: n / 2, Zones: c.zones}
		b.Run(fmt.Sprintf("n=%d/%s", n, c.name), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := replicaset.Compute(spec, replicas, deletionpolicy.Random{Seed: 7}, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// The two side by side, call after call, in alternating order: a
	// ratio that the machine's drift over a run does not move.
	b.Run(fmt.Sprintf("paired/n=%d", n), func(b *testing.B) {
		specs := [2]replicaset.Spec{{Desired: n / 2}, {Desired: n / 2, Zones: zones}}
		var took [2]time.Duration
		for i := 0; b.Loop(); i++ {
			for k := range 2 {
				k ^= i & 1
				start := time.Now()
				if _, err := replicaset.Compute(specs[k], replicas, deletionpolicy.Random{Seed: 7}, now); err != nil {
					b.Fatal(err)
				}
				took[k] += time.Since(start)
			}
		}
		b.ReportMetric(float64(took[1])/float64(took[0]), "zoned/none")
	})
}

// TestSummarizeZones: the per-zone counts add up to Summarize's, the
// listed zones come first in their order, the others after by name, and
// each entry counts exactly its zone's live replicas.
func TestSummarizeZones(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		zones := replicagen.Zones().Draw(t, "zones")
		rs := replicagen.Replicas(40).Draw(t, "replicas")
		minReady := time.Duration(rapid.IntRange(0, 120).Draw(t, "minReady")) * time.Second
		got := replicaset.SummarizeZones(rs, zones, minReady, replicagen.Now())

		var sum replicaset.Status
		var names []string
		for i, z := range got {
			if z.Listed != (i < len(zones)) || i < len(zones) && z.Zone != zones[i] {
				t.Fatalf("entry %d is %+v; listed zones %q come first", i, z, zones)
			}
			if !z.Listed {
				names = append(names, z.Zone)
			}
			var own []replicaset.Replica
			for _, r := range rs {
				if r.Zone == z.Zone {
					own = append(own, r)
				}
			}
			want := replicaset.Summarize(own, minReady, replicagen.Now())
			if z.Replicas != want.Replicas || z.Ready != want.Ready || z.Available != want.Available {
				t.Fatalf("zone %q: %+v, want %+v", z.Zone, z, want)
			}
			if !z.Listed && z.Replicas == 0 {
				t.Fatalf("unlisted zone %q listed without live replicas", z.Zone)
			}
			sum.Replicas, sum.Ready, sum.Available = sum.Replicas+z.Replicas, sum.Ready+z.Ready, sum.Available+z.Available
		}
		if !slices.IsSorted(names) {
			t.Fatalf("unlisted zones %q are not sorted", names)
		}
		all := replicaset.Summarize(rs, minReady, replicagen.Now())
		all.Terminating = 0
		if diff := cmp.Diff(all, sum); diff != "" {
			t.Fatalf("zones do not add up (-Summarize +zones):\n%s", diff)
		}
	})
}

// TestCompute_Rebalance pins one move: a surge replica in the emptiest
// zone, deletes held while it comes up, then one from the fullest zone.
func TestCompute_Rebalance(t *testing.T) {
	spec := replicaset.Spec{Desired: 3, Zones: []string{"a", "b", "c"}, Rebalance: true}
	a1, a2, a3 := in("a", aged("a1", 3*time.Hour)), in("a", aged("a2", 2*time.Hour)), in("a", aged("a3", time.Hour))
	step := func(rs ...replicaset.Replica) replicaset.Plan {
		t.Helper()
		p, err := checkedCompute(t, spec, rs, deletionpolicy.Oldest{}, now)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := step(a1, a2, a3); p.Create != 1 || !slices.Equal(p.CreateZones, []string{"b"}) {
		t.Fatalf("3/0/0: %v; want one create in b", p)
	}
	b1 := in("b", replicaset.Replica{Name: "b1", UID: "uid-b1", CreatedAt: now, Phase: replicaset.PhasePending})
	if p := step(a1, a2, a3, b1); len(p.Delete) != 0 || p.Deferred != 1 || !strings.Contains(p.Unbalanced, "wait for replicas to become available") {
		t.Fatalf("3/1 with b1 coming up: %v; want the delete held, and said so", p)
	}
	b1.Phase, b1.Ready, b1.ReadySince = replicaset.PhaseRunning, true, now
	if p := step(a1, a2, a3, b1); len(p.Delete) != 1 || p.Delete[0].Name != "a1" {
		t.Fatalf("3/1 with b1 available: %v; want a1 deleted", p)
	}
	spec.Rebalance = false
	if p := step(a1, a2, a3); !p.IsZero() {
		t.Fatalf("without Rebalance: %v; want nothing", p)
	}

	// Protection leaves nothing to move: no surge, or it would be deleted
	// again on every pass.
	spec.Rebalance = true
	if p := step(protected(a1), protected(a2), protected(a3)); !p.IsZero() {
		t.Fatalf("3/0/0 all protected: %v; want nothing", p)
	}
	x1 := in("x", protected(aged("x1", time.Hour)))
	spec.Zones, spec.Desired = []string{"a", "b"}, 2
	if p := step(x1, a1); !p.IsZero() {
		t.Fatalf("a protected replica in an unlisted zone: %v; want nothing", p)
	}

	// A failed replica is no candidate in the healthy tier, yet its zone
	// is still a zone with a replica that may go: a2 failed in a beside a1
	// moves one replica to b.
	failed := in("a", aged("a2", 2*time.Hour))
	failed.Phase, failed.Ready = replicaset.PhaseFailed, false
	if p := step(a1, failed); p.Create != 1 || !slices.Equal(p.CreateZones, []string{"b"}) {
		t.Fatalf("a1 and a failed a2 over a and b: %v; want one create in b", p)
	}
}

// TestZones_RebalanceConverges: from any spread of available replicas
// (some in a zone no longer listed) and any desired count, passes with
// Rebalance, new replicas coming up for one pass, reach the count with the
// zones within one and nothing outside them, and no pass takes the
// available replicas below the desired count or below where they were.
// (A pass may find the plan empty while replicas come up: Rebalance waits
// for them.)
func TestZones_RebalanceConverges(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		zones := replicagen.Zones().Draw(t, "zones")
		var set []replicaset.Replica
		for i := range rapid.IntRange(0, 12).Draw(t, "start") {
			name := fmt.Sprintf("r%d", i)
			set = append(set, replicaset.Replica{Name: name, UID: "uid-" + name, Phase: replicaset.PhaseRunning, Ready: true,
				Zone: rapid.SampledFrom(append(slices.Clone(zones), "x")).Draw(t, "zone")})
		}
		spec := replicaset.Spec{Desired: rapid.IntRange(0, 12).Draw(t, "desired"), Zones: zones, Rebalance: true,
			MaxPerPass: rapid.IntRange(0, 2).Draw(t, "maxPerPass")}
		_, policy := replicagen.Policy(t)
		serial := 0
		bound := 8*(len(set)+spec.Desired) + 10
		for pass := range bound {
			// Replicas come up a pass or more after they were created.
			for i := range set {
				if pass > bound/2 || rapid.Bool().Draw(t, "up") {
					set[i].Phase, set[i].Ready = replicaset.PhaseRunning, true
				}
			}
			p, err := checkedCompute(t, spec, set, policy, replicagen.Now())
			if err != nil {
				t.Fatal(err)
			}
			if p.IsZero() && available(set) == len(set) {
				n, d := spread(zones, set)
				stray := slices.ContainsFunc(set, func(r replicaset.Replica) bool { return !slices.Contains(zones, r.Zone) })
				if len(set) != spec.Desired || d > 1 || stray {
					t.Fatalf("pass %d: settled with %d replicas, zones %v, stray %v; want %d balanced", pass, len(set), n, stray, spec.Desired)
				}
				return
			}
			before := available(set)
			// New replicas start pending.
			created := replicagen.Names("new-", &serial, p.Create)
			set = replicagen.Apply(set, p, created, true)
			for i := range set[len(set)-len(created):] {
				r := &set[len(set)-len(created)+i]
				r.Phase, r.Ready = replicaset.PhasePending, false
			}
			if after := available(set); after < min(before, spec.Desired) {
				t.Fatalf("pass %d: plan %v took available replicas from %d to %d, desired %d", pass, p, before, after, spec.Desired)
			}
		}
		t.Fatalf("not settled: %d replicas, desired %d", len(set), spec.Desired)
	})
}

func available(rs []replicaset.Replica) int {
	return replicaset.Summarize(rs, 0, replicagen.Now()).Available
}
