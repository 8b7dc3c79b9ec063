package replicaset_test

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/internal/replicagen"
	"github.com/replicakit/replicakit/replicaset"
)

// amountGen draws an unset Amount, a small count or a percentage.
func amountGen(maxCount int) *rapid.Generator[replicaset.Amount] {
	return rapid.Custom(func(t *rapid.T) replicaset.Amount {
		switch rapid.IntRange(0, 2).Draw(t, "kind") {
		case 0:
			return replicaset.Amount{}
		case 1:
			return replicaset.Count(rapid.IntRange(0, maxCount).Draw(t, "count"))
		}
		return replicaset.Percent(rapid.SampledFrom([]int{0, 10, 25, 33, 50, 100}).Draw(t, "percent"))
	})
}

// strategyGen draws a strategy, mostly a RollingUpdate, sometimes with a
// partition, now and then paused or OnDelete.
func strategyGen() *rapid.Generator[replicaset.Strategy] {
	return rapid.Custom(func(t *rapid.T) replicaset.Strategy {
		s := replicaset.Strategy{
			MaxSurge:       amountGen(3).Draw(t, "maxSurge"),
			MaxUnavailable: amountGen(3).Draw(t, "maxUnavailable"),
			Paused:         rapid.IntRange(0, 5).Draw(t, "paused") == 0,
		}
		if rapid.IntRange(0, 5).Draw(t, "onDelete") == 0 {
			s.Type = replicaset.OnDelete
		}
		if s.MaxSurge.IsSet() && (s.MaxSurge.String() == "0" || s.MaxSurge.String() == "0%") {
			if s.MaxUnavailable.String() == "0" || s.MaxUnavailable.String() == "0%" {
				s.MaxUnavailable = replicaset.Amount{} // both zero: an invalid spec (TestSpec_ValidateBothZero)
			}
		}
		s.ZoneByZone = rapid.IntRange(0, 3).Draw(t, "zoneByZone") == 0
		if rapid.IntRange(0, 2).Draw(t, "partitioned") == 0 {
			s.Partition = amountGen(5).Draw(t, "partition")
		}
		return s
	})
}

// rolloutSpecGen draws a spec with a revision ("A" or "B") and a strategy;
// half of them spread over zones, with backoffs now and then.
func rolloutSpecGen() *rapid.Generator[replicaset.Spec] {
	return rapid.Custom(func(t *rapid.T) replicaset.Spec {
		s := replicagen.Spec().Draw(t, "base")
		s.Rebalance = false // not planned with revisions: Compute ignores it there
		s.Desired = rapid.IntRange(0, 20).Draw(t, "desired")
		s.Revision = rapid.SampledFrom([]string{"A", "B"}).Draw(t, "revision")
		s.Strategy = strategyGen().Draw(t, "strategy")
		return s
	})
}

// withRevisions gives each replica a revision: none, "A", "B" or "C".
func withRevisions(t *rapid.T, rs []replicaset.Replica) []replicaset.Replica {
	for i := range rs {
		rs[i].Revision = rapid.SampledFrom([]string{"", "A", "B", "C"}).Draw(t, "replicaRevision")
	}
	return rs
}

// tally is what the bounds are stated in: counts of a set of replicas at a
// moment, under a spec.
type tally struct {
	live, deleting, avail, old, newAvail int
	// serving counts the live replicas that may be serving: available
	// ones, and those on older revisions that are not broken (running,
	// or in a phase unknown, but not seen available).
	serving int
}

// isBroken reports whether r is not provisioned or failed.
func isBroken(r replicaset.Replica) bool {
	return r.Phase == replicaset.PhasePending || r.Phase == replicaset.PhaseFailed
}

func tallyOf(spec replicaset.Spec, rs []replicaset.Replica) tally {
	var c tally
	now := replicagen.Now()
	for _, r := range rs {
		if r.Deleting {
			c.deleting++
			continue
		}
		c.live++
		onNew := r.Revision == "" || r.Revision == spec.Revision
		avail := r.Available(spec.MinReady, now)
		if avail {
			c.avail++
		}
		if avail || (!onNew && !isBroken(r)) {
			c.serving++
		}
		if !onNew {
			c.old++
		} else if avail {
			c.newAvail++
		}
	}
	return c
}

// afterPlan returns the replicas right after a plan is carried out and
// before anything else happens: victims being deleted, creates not yet
// made (they are pending, neither live nor available).
func afterPlan(spec replicaset.Spec, rs []replicaset.Replica, p replicaset.Plan) []replicaset.Replica {
	doomed := map[string]bool{}
	for _, r := range p.Delete {
		doomed[r.Name] = true
	}
	// In-place updates: a live one moves the replica onto the wanted
	// revision as it is, a power cycle leaves it there not ready, and a
	// preparation for one makes it not ready.
	updated, down := map[string]bool{}, map[string]bool{}
	for _, u := range p.Update {
		updated[u.Replica.Name] = true
		down[u.Replica.Name] = u.PowerCycle
	}
	for _, r := range p.PrepareUpdate {
		updated[r.Name], down[r.Name] = true, true // as the planner sees it
	}
	out := slices.Clone(rs)
	for i := range out {
		r := &out[i]
		r.Deleting = r.Deleting || doomed[r.Name]
		if updated[r.Name] {
			r.Revision = spec.Revision
		}
		if down[r.Name] {
			r.Ready = false
		}
	}
	return out
}

// naiveLimits resolves a strategy with floating point and the rule spelt
// out: surge rounds up, unavailable down, both zero makes unavailable 1,
// unavailable is at most desired, partition rounds up and is at most
// desired.
func naiveLimits(s replicaset.Strategy, desired int) replicaset.Limits {
	resolve := func(a replicaset.Amount, def int, up bool) int {
		if !a.IsSet() {
			return def
		}
		str := a.String()
		num, pct := strings.CutSuffix(str, "%")
		n, err := strconv.Atoi(num)
		if err != nil {
			panic(err)
		}
		if !pct {
			return n
		}
		x := float64(n) * float64(desired) / 100
		if up {
			return int(math.Ceil(x))
		}
		return int(math.Floor(x))
	}
	l := replicaset.Limits{
		Surge:       resolve(s.MaxSurge, 1, true),
		Unavailable: resolve(s.MaxUnavailable, 0, false),
		Partition:   resolve(s.Partition, 0, true),
	}
	if l.Surge == 0 && l.Unavailable == 0 {
		l.Unavailable = 1
	}
	l.Unavailable = min(l.Unavailable, desired)
	l.Partition = min(l.Partition, desired)
	return l
}

// TestLimits_Properties: Limits agrees with the rule computed naively.
func TestLimits_Properties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := strategyGen().Draw(t, "strategy")
		d := rapid.IntRange(0, 1000).Draw(t, "desired")
		if diff := gocmp.Diff(naiveLimits(s, d), s.Limits(d)); diff != "" {
			t.Fatalf("Limits(%d) of %+v (-naive +got):\n%s", d, s, diff)
		}
	})
}

// TestParseAmount_RoundTrip: every Amount's String parses back to it.
func TestParseAmount_RoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := amountGen(1000).Draw(t, "amount")
		if !a.IsSet() {
			return
		}
		got, err := replicaset.ParseAmount(a.String())
		if err != nil || got != a {
			t.Fatalf("ParseAmount(%q) = %v, %v; want %v", a.String(), got, err, a)
		}
	})
}

// TestRollout_Properties: one pass from any state, of a larger set than
// the all-features generator draws, keeps every invariant
// replicasettest.Check states (checkedCompute) and the ZoneByZone rule of
// scale-downs (checkZoneByZone), and the plan does not depend on the
// replicas' order.
func TestRollout_Properties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spec := rolloutSpecGen().Draw(t, "spec")
		rs := withRevisions(t, replicagen.Replicas(30).Draw(t, "replicas"))
		_, policy := replicagen.Policy(t)
		p, err := checkedCompute(t, spec, rs, policy, replicagen.Now())
		if err != nil {
			t.Fatalf("Compute: %v", err)
		}
		checkZoneByZone(t, spec, rs, p)
		again, err := replicaset.Compute(spec, rapid.Permutation(rs).Draw(t, "shuffled"), policy, replicagen.Now())
		if err != nil {
			t.Fatal(err)
		}
		if diff := gocmp.Diff(p, again, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("plan depends on input order (-first +shuffled):\n%s", diff)
		}
	})
}

// TestSummarizeRollout_Properties: the counts agree with a count made
// replica by replica, and Complete holds exactly when a healthy rollout's
// pass would find nothing left to do.
func TestSummarizeRollout_Properties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spec := rolloutSpecGen().Draw(t, "spec")
		rs := withRevisions(t, replicagen.Replicas(30).Draw(t, "replicas"))
		got := replicaset.SummarizeRollout(spec, rs, replicagen.Now())
		var want replicaset.RolloutStatus
		deleting := 0
		for _, r := range rs {
			switch {
			case r.Deleting:
				deleting++
			case r.Revision != "" && r.Revision != spec.Revision:
				want.Old++
			default:
				want.Updated++
				if r.Ready {
					want.UpdatedReady++
				}
				if r.Available(spec.MinReady, replicagen.Now()) {
					want.UpdatedAvailable++
				}
			}
		}
		// Current: the older revision with the most live replicas, the
		// least on a tie, found by trying every revision in order.
		want.Current = spec.Revision
		most := 0
		for _, cand := range []string{"A", "B", "C", "D", "E", "F", "G", "a", "b", "c", "x", "y", "z"} {
			n := 0
			for _, r := range rs {
				if spec.Revision != "" && !r.Deleting && r.Revision == cand && cand != spec.Revision {
					n++
				}
			}
			if n > most {
				want.Current, most = cand, n
			}
		}
		lim := naiveLimits(spec.Strategy, spec.Desired)
		want.Complete = deleting == 0 && want.Updated+want.Old == spec.Desired && want.Old <= lim.Partition && want.UpdatedAvailable == want.Updated
		if diff := gocmp.Diff(want, got); diff != "" {
			t.Fatalf("SummarizeRollout (-naive +got):\n%s", diff)
		}
	})
}

// backingOffNaive reports whether spec.History.ZoneBackoff avoids zone now.
func backingOffNaive(spec replicaset.Spec, zone string) bool {
	for _, b := range spec.History.ZoneBackoff {
		if b.Zone == zone && replicagen.Now().Before(b.Until) {
			return true
		}
	}
	return false
}

// checkZoneByZone checks the deletes of a pass of a ZoneByZone rolling
// update over zones, scale-downs included (replicasettest.Check states
// the rule of the others, and not this one of scale-downs):
// the zone being updated is the first listed zone not backing off that
// holds replicas on older revisions to replace, and an unmarked replica
// on an older revision in another listed zone is deleted only when no
// such replica of the zone being updated could have been deleted in its
// place within the bounds.
func checkZoneByZone(t *rapid.T, spec replicaset.Spec, rs []replicaset.Replica, p replicaset.Plan) {
	t.Helper()
	before, after := tallyOf(spec, rs), tallyOf(spec, afterPlan(spec, rs, p))
	st := spec.Strategy
	lim := naiveLimits(st, spec.Desired)
	if len(spec.Zones) == 0 || !st.ZoneByZone || st.Paused || st.Type != replicaset.RollingUpdate || before.old <= lim.Partition {
		return
	}
	old := func(r replicaset.Replica) bool {
		return !r.Deleting && !r.Protected && r.Revision != "" && r.Revision != spec.Revision
	}
	update := ""
	for _, z := range spec.Zones {
		if update == "" && !backingOffNaive(spec, z) && slices.ContainsFunc(rs, func(r replicaset.Replica) bool { return r.Zone == z && old(r) }) {
			update = z
		}
	}
	if update == "" {
		return
	}
	if after.old <= lim.Partition {
		return // a scale-down into the replicas the partition keeps
	}
	deleted := map[string]bool{}
	for _, v := range p.Delete {
		deleted[v.Name] = true
	}
	floor := spec.Desired - lim.Unavailable
	for _, v := range p.Delete {
		if !old(v) || v.MarkedForDeletion || v.Zone == update || !slices.Contains(spec.Zones, v.Zone) {
			continue
		}
		// Put v back, and see whether a replica of the zone being
		// updated could have gone instead.
		availRoom, servingRoom := after.avail-floor, after.serving-floor
		switch {
		case v.Available(spec.MinReady, replicagen.Now()):
			availRoom, servingRoom = availRoom+1, servingRoom+1
		case !isBroken(v):
			servingRoom++
		}
		for _, w := range rs {
			if !old(w) || w.Zone != update || deleted[w.Name] {
				continue
			}
			ok := isBroken(w)
			switch {
			case w.Available(spec.MinReady, replicagen.Now()):
				ok = availRoom > 0 && servingRoom > 0
			case !isBroken(w):
				ok = servingRoom > 0
			}
			if ok {
				t.Fatalf("ZoneByZone: %q in zone %s is deleted while %q in zone %s, which is updated, could have been: %v\nreplicas: %s",
					v.Name, v.Zone, w.Name, update, p, brief(spec, rs))
			}
		}
	}
}

// brief describes rs in a line, for failure messages: each replica's
// name, revision, zone and state.
func brief(spec replicaset.Spec, rs []replicaset.Replica) string {
	var b strings.Builder
	for _, r := range rs {
		state := "avail"
		switch {
		case r.Deleting:
			state = "deleting"
		case isBroken(r):
			state = r.Phase.String()
		case !r.Available(spec.MinReady, replicagen.Now()):
			state = "unavail"
		}
		if r.Protected {
			state += ",protected"
		}
		if r.MarkedForDeletion {
			state += ",marked"
		}
		fmt.Fprintf(&b, "%s(%s@%s %s) ", r.Name, r.Revision, r.Zone, state)
	}
	return b.String()
}
