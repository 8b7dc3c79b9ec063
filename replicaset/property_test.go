package replicaset_test

import (
	"cmp"
	"errors"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/internal/replicagen"
	"github.com/replicakit/replicakit/replicaset"
)

// naiveCompute is the reference Compute is checked against: the semantics
// written as plainly as possible, each victim chosen by a scan of every
// candidate left (with zones, counts updated after each), and each create
// placed in turn, rescanning everything. It covers specs without
// revisions, remediation, hooks or unreachable zones (replicagen.Spec).
func naiveCompute(spec replicaset.Spec, rs []replicaset.Replica, policy replicaset.Ranker, now time.Time) replicaset.Plan {
	var p replicaset.Plan
	var live, candidates []replicaset.Replica
	for _, r := range rs {
		switch {
		case r.Deleting:
			p.Deleting = append(p.Deleting, r)
		case r.Protected:
			live = append(live, r)
		default:
			live = append(live, r)
			candidates = append(candidates, r)
		}
	}
	slices.SortFunc(p.Deleting, func(a, b replicaset.Replica) int { return cmp.Compare(a.Name, b.Name) })
	limit := spec.MaxPerPass
	if limit == 0 {
		limit = 500
	}
	zones := naiveZoneCounts(spec, live)
	counted := len(live)
	if !spec.ReplaceDeleting {
		counted += len(p.Deleting)
	}
	if counted < spec.Desired {
		p.Create = min(spec.Desired-counted, limit)
		p.Deferred = spec.Desired - counted - p.Create
		p.CreateZones = naiveCreateZones(spec, rs, p.Create, now)
		return p
	}
	if len(live) <= spec.Desired {
		return p
	}
	env := replicaset.Env{Now: now, MinReady: spec.MinReady, Seed: spec.Seed}
	want := len(live) - spec.Desired
	p.Shortfall.Count = max(0, want-len(candidates))
	want -= p.Shortfall.Count
	n := min(want, limit)
	p.Deferred = want - n
	// The one deletion order: marked first (by the policy alone); then,
	// with zones, replicas in no listed zone; then broken; then, with
	// zones, from the zone with the most live replicas left (the later
	// listed on a tie); then not available; then the policy's order,
	// then identity.
	listed := func(r replicaset.Replica) bool { return slices.Contains(spec.Zones, r.Zone) }
	before := func(a, b replicaset.Replica) bool {
		if a.MarkedForDeletion != b.MarkedForDeletion {
			return a.MarkedForDeletion
		}
		if !a.MarkedForDeletion {
			if len(spec.Zones) > 0 && listed(a) != listed(b) {
				return !listed(a)
			}
			ha, hb := naiveTier(spec, a, now), naiveTier(spec, b, now)
			if (ha == 0) != (hb == 0) {
				return ha == 0
			}
			if len(spec.Zones) > 0 && listed(a) && a.Zone != b.Zone {
				if zones[a.Zone] != zones[b.Zone] {
					return zones[a.Zone] > zones[b.Zone]
				}
				return slices.Index(spec.Zones, a.Zone) > slices.Index(spec.Zones, b.Zone)
			}
			if ha != hb {
				return ha < hb
			}
		}
		if c := policy.Rank(a, env).Compare(policy.Rank(b, env)); c != 0 {
			return c < 0
		}
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.UID, b.UID)) < 0
	}
	for range n {
		best := 0
		for i := range candidates {
			if before(candidates[i], candidates[best]) {
				best = i
			}
		}
		v := candidates[best]
		p.Delete = append(p.Delete, v)
		candidates = slices.Delete(candidates, best, best+1)
		if _, ok := zones[v.Zone]; ok {
			zones[v.Zone]--
		}
	}
	return p
}

// naiveZoneCounts counts the live replicas of each listed zone.
func naiveZoneCounts(spec replicaset.Spec, live []replicaset.Replica) map[string]int {
	zones := map[string]int{}
	for _, z := range spec.Zones {
		zones[z] = 0
	}
	for _, r := range live {
		if _, ok := zones[r.Zone]; ok {
			zones[r.Zone]++
		}
	}
	return zones
}

// naiveCreateZones places n creates one by one in the listed zone not
// backing off (any, when all are) with the fewest live replicas, then the
// fewest not yet available, then the fewest counting those being
// deleted, then the first listed; each create counts as a live replica
// not yet available.
func naiveCreateZones(spec replicaset.Spec, rs []replicaset.Replica, n int, now time.Time) []string {
	if len(spec.Zones) == 0 || n == 0 {
		return nil
	}
	var ok []string
	for _, z := range spec.Zones {
		if !slices.ContainsFunc(spec.History.ZoneBackoff, func(b replicaset.ZoneBackoff) bool { return b.Zone == z && b.Until.After(now) }) {
			ok = append(ok, z)
		}
	}
	if len(ok) == 0 {
		ok = spec.Zones
	}
	live, coming, occ := map[string]int{}, map[string]int{}, map[string]int{}
	for _, r := range rs {
		occ[r.Zone]++
		if !r.Deleting {
			live[r.Zone]++
			if !r.Available(spec.MinReady, now) {
				coming[r.Zone]++
			}
		}
	}
	key := func(z string) []int { return []int{live[z], coming[z], occ[z]} }
	var out []string
	for range n {
		best := ok[0]
		for _, z := range ok {
			if slices.Compare(key(z), key(best)) < 0 {
				best = z
			}
		}
		live[best]++
		coming[best]++
		occ[best]++
		out = append(out, best)
	}
	return out
}

// naiveTier is a candidate's health tier: 0 broken (not provisioned or
// failed; with Rebalance only failed), 1 not available (not with
// Rebalance), 2 the rest.
func naiveTier(spec replicaset.Spec, r replicaset.Replica, now time.Time) int {
	rebalance := spec.Rebalance && len(spec.Zones) > 0
	switch {
	case r.Phase == replicaset.PhaseFailed, r.Phase == replicaset.PhasePending && !rebalance:
		return 0
	case !r.Available(spec.MinReady, now) && !rebalance:
		return 1
	}
	return 2
}

func TestCompute_Properties(t *testing.T) { rapid.Check(t, computeProperties) }

// computeProperties is TestCompute_Properties's property, which
// FuzzCompute_Properties drives from the fuzzer's bytes.
func computeProperties(t *rapid.T) {
	spec := replicagen.Spec().Draw(t, "spec")
	rs := replicagen.Replicas(40).Draw(t, "replicas")
	name, policy := replicagen.Policy(t)
	now := replicagen.Now()

	p, err := checkedCompute(t, spec, rs, policy, now)
	if err != nil {
		t.Fatalf("Compute: %v", err)
	}
	limit := cmp.Or(spec.MaxPerPass, replicaset.DefaultMaxPerPass)

	// Caps are never exceeded, and a pass never both creates and deletes.
	if p.Create > limit || len(p.Delete) > limit {
		t.Fatalf("plan %v exceeds the cap %d", p, limit)
	}
	if p.Create > 0 && len(p.Delete) > 0 {
		t.Fatalf("plan %v both creates and deletes", p)
	}

	// Victims are distinct current replicas, never deleting or protected;
	// Deleting is exactly the replicas already being deleted.
	byName := map[string]replicaset.Replica{}
	var wantDeleting []string
	live := 0
	for _, r := range rs {
		byName[r.Name] = r
		if r.Deleting {
			wantDeleting = append(wantDeleting, r.Name)
		} else {
			live++
		}
	}
	seen := map[string]bool{}
	for _, v := range p.Delete {
		r, ok := byName[v.Name]
		switch {
		case !ok:
			t.Fatalf("victim %q is not a current replica", v.Name)
		case seen[v.Name]:
			t.Fatalf("victim %q chosen twice", v.Name)
		case r.Deleting:
			t.Fatalf("victim %q is already being deleted", v.Name)
		case r.Protected:
			t.Fatalf("victim %q is protected", v.Name)
		}
		seen[v.Name] = true
	}
	slices.Sort(wantDeleting)
	if diff := gocmp.Diff(wantDeleting, names(p.Deleting), cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("Deleting mismatch (-want +got):\n%s", diff)
	}

	// Marked replicas go before unmarked ones under policy name, and an
	// unmarked replica is chosen only when every eligible marked one is.
	firstUnmarked := slices.IndexFunc(p.Delete, func(r replicaset.Replica) bool { return !r.MarkedForDeletion })
	if firstUnmarked >= 0 {
		for _, r := range p.Delete[firstUnmarked:] {
			if r.MarkedForDeletion {
				t.Fatalf("policy %s: marked %q after unmarked %q", name, r.Name, p.Delete[firstUnmarked].Name)
			}
		}
		for _, r := range rs {
			if r.MarkedForDeletion && !r.Deleting && !r.Protected && !seen[r.Name] {
				t.Fatalf("policy %s: unmarked %q chosen while marked %q was not", name, p.Delete[firstUnmarked].Name, r.Name)
			}
		}
	}

	// Counting: when nothing is deferred or short, the plan lands exactly
	// on the desired count.
	counted := live
	if !spec.ReplaceDeleting {
		counted += len(wantDeleting)
	}
	if p.Deferred == 0 && p.Shortfall.Count == 0 {
		switch {
		case p.Create > 0 && counted+p.Create != spec.Desired:
			t.Fatalf("counted %d + create %d != desired %d", counted, p.Create, spec.Desired)
		case len(p.Delete) > 0 && live-len(p.Delete) != spec.Desired:
			t.Fatalf("live %d - delete %d != desired %d", live, len(p.Delete), spec.Desired)
		}
	}

	// Same input in another order: same plan. And the naive reference
	// agrees on everything.
	shuffled := rapid.Permutation(rs).Draw(t, "shuffled")
	again, err := checkedCompute(t, spec, shuffled, policy, now)
	if err != nil {
		t.Fatalf("Compute(shuffled): %v", err)
	}
	if diff := gocmp.Diff(p, again, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("plan depends on input order (-first +shuffled):\n%s", diff)
	}
	naive := naiveCompute(spec, rs, policy, now)
	ignoreReason := cmpopts.IgnoreFields(replicaset.Shortfall{}, "Reason")
	// Unbalanced is checked by the zone properties.
	naive.Unbalanced, p.Unbalanced = "", ""
	if diff := gocmp.Diff(naive, p, cmpopts.EquateEmpty(), ignoreReason); diff != "" {
		t.Fatalf("Compute disagrees with the naive reference (-naive +Compute):\n%s", diff)
	}
}

// TestCompute_Converges carries out plans repeatedly, with deletions that
// sometimes take several passes to finish, and checks that the set reaches
// the desired count (less any shortfall), never overshoots on the way, and
// stays converged.
func TestCompute_Converges(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spec := replicagen.Spec().Draw(t, "spec")
		set := replicagen.Replicas(40).Draw(t, "replicas")
		_, policy := replicagen.Policy(t)
		limit := cmp.Or(spec.MaxPerPass, replicaset.DefaultMaxPerPass)
		// Each pass moves at least one step while deletions finish; allow
		// the worst case of every replica plus every desired one, over the
		// cap, plus the passes in which deletions lag.
		const lagging = 5
		bound := (len(set)+spec.Desired)/limit + 2 + lagging

		counted := func(rs []replicaset.Replica) int {
			n := 0
			for _, r := range rs {
				if !r.Deleting || !spec.ReplaceDeleting {
					n++
				}
			}
			return n
		}
		serial := 0
		for pass := 0; ; pass++ {
			p, err := checkedCompute(t, spec, set, policy, replicagen.Now())
			if err != nil {
				t.Fatalf("pass %d: Compute: %v", pass, err)
			}
			if p.IsZero() && len(p.Deleting) == 0 {
				live := replicaset.Summarize(set, 0, replicagen.Now()).Replicas
				if live != spec.Desired+p.Shortfall.Count {
					t.Fatalf("pass %d: converged at %d live, want desired %d + shortfall %d", pass, live, spec.Desired, p.Shortfall.Count)
				}
				return
			}
			if pass > bound {
				t.Fatalf("not converged after %d passes: %v", pass, p)
			}
			created := replicagen.Names("new-", &serial, p.Create)
			before := counted(set)
			finish := pass >= lagging || rapid.Bool().Draw(t, "finish")
			set = replicagen.Apply(set, p, created, finish)
			if after := counted(set); after > max(before, spec.Desired) {
				t.Fatalf("pass %d overshoots: %d counted replicas, was %d, desired %d", pass, after, before, spec.Desired)
			}
		}
	})
}

// validInput is an independent statement of what Compute accepts.
func validInput(spec replicaset.Spec, rs []replicaset.Replica) bool {
	if spec.Desired < 0 || spec.MaxPerPass < 0 || spec.MinReady < 0 {
		return false
	}
	zones := map[string]bool{}
	for _, z := range spec.Zones {
		if z == "" || zones[z] {
			return false
		}
		zones[z] = true
	}
	names, uids := map[string]bool{}, map[string]bool{}
	for _, r := range rs {
		if r.Name == "" || names[r.Name] || r.UID != "" && uids[r.UID] {
			return false
		}
		names[r.Name], uids[r.UID] = true, r.UID != ""
	}
	return true
}

// TestCompute_ArbitraryInput feeds Compute anything, valid or not: it must
// return an error exactly for invalid input, and never panic.
func TestCompute_ArbitraryInput(t *testing.T) { rapid.Check(t, computeArbitraryInput) }

// computeArbitraryInput is TestCompute_ArbitraryInput's property, which
// FuzzCompute_ArbitraryInput drives from the fuzzer's bytes.
func computeArbitraryInput(t *rapid.T) {
	spec := replicaset.Spec{
		Desired:         rapid.IntRange(-3, 10).Draw(t, "desired"),
		MaxPerPass:      rapid.IntRange(-3, 10).Draw(t, "maxPerPass"),
		ReplaceDeleting: rapid.Bool().Draw(t, "replaceDeleting"),
		MinReady:        time.Duration(rapid.IntRange(-3, 3).Draw(t, "minReady")) * time.Second,
		Zones:           rapid.SliceOfN(rapid.SampledFrom([]string{"", "a", "b"}), 0, 3).Draw(t, "zones"),
	}
	id := rapid.SampledFrom([]string{"", "a", "b", "c"})
	rs := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) replicaset.Replica {
		r := replicagen.Replica().Draw(t, "replica")
		r.Name, r.UID = id.Draw(t, "name"), id.Draw(t, "uid")
		return r
	}), 0, 5).Draw(t, "replicas")
	_, policy := replicagen.Policy(t)

	_, err := checkedCompute(t, spec, rs, policy, replicagen.Now())
	if valid := validInput(spec, rs); valid != (err == nil) {
		t.Fatalf("Compute(%+v, %d replicas): valid=%v but err=%v", spec, len(rs), valid, err)
	}
	if err != nil && !errors.Is(err, replicaset.ErrInvalidSpec) && !errors.Is(err, replicaset.ErrInvalidReplica) {
		t.Fatalf("Compute error %v wraps no documented sentinel", err)
	}
}

func names(rs []replicaset.Replica) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Name
	}
	return out
}
