package deletionpolicy_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/deletionpolicy/deletionpolicytest"
	"github.com/replicakit/replicakit/internal/replicagen"
	"github.com/replicakit/replicakit/replicaset"
)

var now = replicagen.Now()

// order returns the names of rs in the order Compute would delete them all
// under p.
func order(t *testing.T, p deletionpolicy.Policy, minReady time.Duration, rs ...replicaset.Replica) []string {
	t.Helper()
	plan, err := replicaset.Compute(replicaset.Spec{Desired: 0, MinReady: minReady}, rs, p, now)
	if err != nil {
		t.Fatalf("Compute: %v", err)
	}
	var names []string
	for _, r := range plan.Delete {
		names = append(names, r.Name)
	}
	return names
}

func TestPolicies_Order(t *testing.T) {
	at := func(name string, age time.Duration) replicaset.Replica {
		return replicaset.Replica{Name: name, CreatedAt: now.Add(-age), Phase: replicaset.PhaseRunning,
			Ready: true, ReadySince: now.Add(-age)}
	}
	old, mid, young := at("old", 3*time.Hour), at("mid", 2*time.Hour), at("young", time.Hour)
	unknownAge := replicaset.Replica{Name: "unknown-age", Phase: replicaset.PhaseRunning, Ready: true}
	cheap := at("cheap", 30*time.Minute)
	cheap.DeletionCost = -1
	failed := at("failed", 5*time.Hour)
	failed.Phase, failed.Ready = replicaset.PhaseFailed, false
	pending := at("pending", 4*time.Hour)
	pending.Phase, pending.Ready = replicaset.PhasePending, false
	notReady := at("not-ready", 6*time.Hour)
	notReady.Ready = false
	fresh := at("fresh", 0) // ready for 0s: not yet available with a window
	fresh.ReadySince = now.Add(-10 * time.Second)
	ord := func(name string, i int) replicaset.Replica {
		r := at(name, time.Duration(i)*time.Hour)
		r.Ordinal, r.HasOrdinal = i, true
		return r
	}

	tests := []struct {
		desc     string
		policy   deletionpolicy.Policy
		minReady time.Duration
		replicas []replicaset.Replica
		want     []string
	}{{
		desc:     "Oldest: cost, then oldest first, unknown age oldest",
		policy:   deletionpolicy.Oldest{},
		replicas: []replicaset.Replica{young, old, cheap, unknownAge, mid},
		want:     []string{"cheap", "unknown-age", "old", "mid", "young"},
	}, {
		desc:     "Newest: cost, then newest first, unknown age last",
		policy:   deletionpolicy.Newest{},
		replicas: []replicaset.Replica{young, old, cheap, unknownAge, mid},
		want:     []string{"cheap", "young", "mid", "old", "unknown-age"},
	}, {
		desc:     "UnhealthyFirst: not provisioned, not ready, not available, then cost, then newest",
		policy:   deletionpolicy.UnhealthyFirst{},
		minReady: time.Minute,
		replicas: []replicaset.Replica{old, fresh, notReady, young, failed, cheap, pending},
		want:     []string{"pending", "failed", "not-ready", "fresh", "cheap", "young", "old"},
	}, {
		desc:     "HighestOrdinal: cost, no ordinal, then highest ordinal first",
		policy:   deletionpolicy.HighestOrdinal{},
		replicas: []replicaset.Replica{ord("web-0", 0), ord("web-10", 10), young, ord("web-2", 2)},
		want:     []string{"young", "web-10", "web-2", "web-0"},
	}, {
		desc:     "equal ranks fall back to name",
		policy:   deletionpolicy.Oldest{},
		replicas: []replicaset.Replica{{Name: "b"}, {Name: "c"}, {Name: "a"}},
		want:     []string{"a", "b", "c"},
	}}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, order(t, tt.policy, tt.minReady, tt.replicas...)); diff != "" {
				t.Errorf("deletion order mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestShipped_Verify runs the conformance check on every shipped policy.
func TestShipped_Verify(t *testing.T) {
	reg := deletionpolicy.Default()
	for _, name := range reg.Names() {
		p, err := reg.Lookup(name)
		if err != nil {
			t.Fatalf("Lookup(%q): %v", name, err)
		}
		if err := deletionpolicytest.Verify(p); err != nil {
			t.Errorf("Verify(%s):\n%v", name, err)
		}
	}
}

// flaky ranks by a counter, so a replica's rank changes from call to call.
type flaky struct{ n *atomic.Int64 }

func (f flaky) Rank(replicaset.Replica, replicaset.Env) replicaset.Rank {
	return replicaset.Rank{f.n.Add(1) % 7}
}

// fussy panics on replicas whose creation time is unknown.
type fussy struct{}

func (fussy) Rank(r replicaset.Replica, _ replicaset.Env) replicaset.Rank {
	if r.CreatedAt.IsZero() {
		panic("no creation time")
	}
	return replicaset.Rank{r.CreatedAt.Unix()}
}

// TestVerify_CatchesBrokenPolicies shows that the conformance check fails
// for policies that break the contract.
func TestVerify_CatchesBrokenPolicies(t *testing.T) {
	for name, p := range map[string]deletionpolicy.Policy{
		"flaky": flaky{n: new(atomic.Int64)},
		"fussy": fussy{},
	} {
		if err := deletionpolicytest.Verify(p); err == nil {
			t.Errorf("Verify(%s) = nil, want violations", name)
		}
	}
}

// TestRandom_StablePerReplica checks the property that makes Random safe
// under stale caches: a replica's rank depends only on the seed, its name
// and its deletion cost, never on its other fields, the other replicas, or
// the time of the pass.
func TestRandom_StablePerReplica(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := deletionpolicy.Random{Seed: rapid.Uint64().Draw(t, "seed")}
		a := replicagen.Replica().Draw(t, "a")
		b := replicagen.Replica().Draw(t, "b")
		b.Name, b.DeletionCost = a.Name, a.DeletionCost
		envA := replicaset.Env{Now: now}
		envB := replicaset.Env{Now: now.Add(time.Hour), MinReady: time.Minute}
		if ra, rb := p.Rank(a, envA), p.Rank(b, envB); ra != rb {
			t.Fatalf("Rank(%+v) = %v but Rank(%+v) = %v", a, ra, b, rb)
		}
	})
}

// TestRandom_EveryByteCounts: changing any one byte of a name of up to
// 40 bytes, or adding a zero byte at its end, changes its rank; and so
// does changing one bit of the seed. A byte the hash dropped would tie
// the two names for every seed. (Two 64-bit hashes agree by chance about
// once in 2^64 draws.)
func TestRandom_EveryByteCounts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seed := rapid.Uint64().Draw(t, "seed")
		name := []byte(rapid.StringN(0, 40, 40).Draw(t, "name"))
		rank := func(seed uint64, name []byte) replicaset.Rank {
			return deletionpolicy.Random{Seed: seed}.Rank(replicaset.Replica{Name: string(name)}, replicaset.Env{})
		}
		before := rank(seed, name)
		if other := rank(seed^1<<rapid.IntRange(0, 63).Draw(t, "seed bit"), name); other == before {
			t.Fatalf("seeds that differ in one bit rank %q alike: %v", name, before)
		}
		if longer := rank(seed, append(name, 0)); longer == before {
			t.Fatalf("%q and %q rank alike: %v", name, append(name, 0), before)
		}
		if len(name) == 0 {
			return
		}
		at := rapid.IntRange(0, len(name)-1).Draw(t, "at")
		name[at] ^= byte(rapid.IntRange(1, 255).Draw(t, "flip"))
		if after := rank(seed, name); after == before {
			t.Fatalf("changing byte %d of the name to make %q left its rank %v", at, name, before)
		}
	})
}

// TestRandom_EqualWeight checks that, over many seeds, each of three equal
// replicas is chosen about a third of the time. Seeds are fixed, so the
// result is deterministic.
func TestRandom_EqualWeight(t *testing.T) {
	const seeds = 3000
	rs := []replicaset.Replica{{Name: "test-rs-a"}, {Name: "test-rs-b"}, {Name: "test-rs-c"}}
	counts := map[string]int{}
	for seed := range uint64(seeds) {
		plan, err := replicaset.Compute(replicaset.Spec{Desired: 2}, rs, deletionpolicy.Random{Seed: seed}, now)
		if err != nil {
			t.Fatal(err)
		}
		counts[plan.Delete[0].Name]++
	}
	for _, r := range rs {
		if c := counts[r.Name]; c < seeds/3-150 || c > seeds/3+150 {
			t.Errorf("%s chosen %d of %d times, want about %d: %v", r.Name, c, seeds, seeds/3, counts)
		}
	}
}

// TestRandom_OwnerSeed: one Random value serves every owner, each ordered
// by its own Spec.Seed; a policy seed equal to the owner's seed does not
// cancel it; and owners' seeds spread the choice evenly.
func TestRandom_OwnerSeed(t *testing.T) {
	rs := []replicaset.Replica{{Name: "test-rs-a"}, {Name: "test-rs-b"}, {Name: "test-rs-c"}, {Name: "test-rs-d"}}
	victims := func(p deletionpolicy.Random, seed uint64) string {
		plan, err := replicaset.Compute(replicaset.Spec{Desired: 2, Seed: seed}, rs, p, now)
		if err != nil {
			t.Fatal(err)
		}
		return plan.String()
	}
	unseeded := victims(deletionpolicy.Random{}, 0)
	cancelled := 0
	for s := range uint64(200) {
		if victims(deletionpolicy.Random{Seed: s + 1}, s+1) == unseeded {
			cancelled++
		}
	}
	// Six pairs of victims are possible: about 1 in 6 agree by chance.
	if cancelled > 60 {
		t.Errorf("Random{Seed: s} with Spec.Seed s ordered as the unseeded policy %d times in 200: the seeds cancel", cancelled)
	}
	rs = rs[:3]
	counts := map[string]int{}
	for seed := range uint64(3000) {
		plan, err := replicaset.Compute(replicaset.Spec{Desired: 2, Seed: seed}, rs, deletionpolicy.Random{}, now)
		if err != nil {
			t.Fatal(err)
		}
		counts[plan.Delete[0].Name]++
	}
	for _, r := range rs {
		if c := counts[r.Name]; c < 850 || c > 1150 {
			t.Errorf("%s chosen %d of 3000 times over owner seeds, want about 1000: %v", r.Name, c, counts)
		}
	}
}

func ExampleRandom() {
	replicas := []replicaset.Replica{{Name: "test-rs-r9slq"}, {Name: "test-rs-zmdmm"}, {Name: "test-rs-x2bkp"}}
	policy := deletionpolicy.Random{Seed: 42}
	first, _ := replicaset.Compute(replicaset.Spec{Desired: 1}, replicas, policy, time.Time{})
	// The same replicas listed in another order, as a relisted cache may:
	// the same victims.
	reordered := []replicaset.Replica{replicas[2], replicas[0], replicas[1]}
	again, _ := replicaset.Compute(replicaset.Spec{Desired: 1}, reordered, policy, time.Time{})
	fmt.Println(first.String() == again.String(), len(first.Delete))
	// Output:
	// true 2
}

// Scale three replicas down to one: the replica that never came up goes
// first, then the one that is not ready, whatever their age.
func ExampleUnhealthyFirst() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	replicas := []replicaset.Replica{
		{Name: "vm-ready", Phase: replicaset.PhaseRunning, Ready: true, CreatedAt: now.Add(-time.Minute)},
		{Name: "vm-pending", Phase: replicaset.PhasePending, CreatedAt: now.Add(-time.Hour)},
		{Name: "vm-not-ready", Phase: replicaset.PhaseRunning, CreatedAt: now.Add(-2 * time.Hour)},
	}
	plan, err := replicaset.Compute(replicaset.Spec{Desired: 1}, replicas, deletionpolicy.UnhealthyFirst{}, now)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range plan.Delete {
		fmt.Println(r.Name)
	}
	// Output:
	// vm-pending
	// vm-not-ready
}
