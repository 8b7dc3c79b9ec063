package replicaset_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/replicasettest"
)

// The cases of issue 42: features that keep their bounds one at a time
// and break them when they meet. Each asserts the documented behaviour.

// composeNow is the time of every pass here.
var composeNow = replicasettest.Now()

// ranFor2h returns a replica that has run and been ready for two hours, on
// revision rev in zone.
func ranFor2h(name, rev, zone string) replicaset.Replica {
	return replicaset.Replica{Name: name, UID: "uid-" + name, CreatedAt: composeNow.Add(-3 * time.Hour),
		Phase: replicaset.PhaseRunning, Ready: true, ReadySince: composeNow.Add(-2 * time.Hour),
		Revision: rev, Zone: zone}
}

// serving counts the replicas of rs that serve after p: ready, healthy,
// and neither deleted, preparing nor power-cycled by it.
func serving(rs []replicaset.Replica, p replicaset.Plan) int {
	down := map[string]bool{}
	for _, l := range [][]replicaset.Replica{p.Delete, p.Prepare, p.PrepareUpdate, p.Replace} {
		for _, r := range l {
			down[r.Name] = true
		}
	}
	for _, u := range p.Update {
		down[u.Replica.Name] = down[u.Replica.Name] || u.PowerCycle
	}
	n := 0
	for _, r := range rs {
		if !down[r.Name] && !r.Deleting && r.Ready && (r.Health == nil || !r.Health.Unhealthy) {
			n++
		}
	}
	return n
}

// TestCompose_InPlaceHealing: an unhealthy replica's replacement and a
// power cycle in the same pass together may not take the serving replicas
// below Desired − MaxUnavailable.
func TestCompose_InPlaceHealing(t *testing.T) {
	for _, method := range []replicaset.UpdateMethod{replicaset.UpdateReplace, replicaset.UpdateInPlaceIfPossible} {
		t.Run(method.String(), func(t *testing.T) {
			spec := replicaset.Spec{Desired: 3, Revision: "v2", Remediation: &replicaset.Remediation{},
				Strategy: replicaset.Strategy{MaxSurge: replicaset.Count(1), MaxUnavailable: replicaset.Count(1), Method: method}}
			var rs []replicaset.Replica
			for i := range 3 {
				r := ranFor2h(fmt.Sprintf("r%d", i), "v1", "")
				r.InPlace, r.InPlaceBlocker = replicaset.InPlacePowerCycle, "memory lowered"
				r.Health = &replicaset.Health{Healthy: true, Started: composeNow.Add(-2 * time.Hour)}
				rs = append(rs, r)
			}
			rs[2].Health = &replicaset.Health{Healthy: true, Unhealthy: true, Since: composeNow.Add(-time.Hour),
				Started: composeNow.Add(-2 * time.Hour), Reason: "HeartbeatRed"}
			p, err := checkedCompute(t, spec, rs, deletionpolicy.Oldest{}, composeNow)
			if err != nil {
				t.Fatal(err)
			}
			if got, floor := serving(rs, p), 3-1; got < floor {
				t.Errorf("%d replicas serve after the plan, below Desired 3 − MaxUnavailable 1 = %d: %v", got, floor, p)
			}
		})
	}
}

// TestCompose_PartitionFloor: with replicas in an unreachable zone, power
// cycles and replacements of the same known replicas are bounded by the
// same floor, K − MaxUnavailable for the known replicas' desired count
// K = max(0, D − u) + min(u, S, D) (doc.go, Unreachable zones): 4 − 2.
func TestCompose_PartitionFloor(t *testing.T) {
	for _, kind := range []replicaset.InPlace{replicaset.InPlaceNone, replicaset.InPlacePowerCycle} {
		t.Run(kind.String(), func(t *testing.T) {
			spec := replicaset.Spec{Desired: 5, Revision: "v2", Zones: []string{"a", "b"}, Unreachable: []string{"b"},
				Strategy: replicaset.Strategy{MaxUnavailable: replicaset.Count(2), Method: replicaset.UpdateInPlaceIfPossible}}
			var rs []replicaset.Replica
			for i := range 4 {
				r := ranFor2h(fmt.Sprintf("a%d", i), "v1", "a")
				r.InPlace = kind
				rs = append(rs, r)
			}
			rs = append(rs, ranFor2h("b0", "v1", "b"), ranFor2h("b1", "v1", "b"))
			p, err := checkedCompute(t, spec, rs, deletionpolicy.Oldest{}, composeNow)
			if err != nil {
				t.Fatal(err)
			}
			const k, floor = 4, 4 - 2 // u = 2, S = 1: K = 3 + 1
			if got := serving(rs[:4], p); got != floor {
				t.Errorf("%d known replicas serve after the plan, want K %d − MaxUnavailable 2 = %d (the floor, neither below nor another): %v",
					got, k, floor, p)
			}
		})
	}
}

// TestCompose_FallbackOnce: Plan.Fallback lists each replica at most
// once, with unreachable zones too.
func TestCompose_FallbackOnce(t *testing.T) {
	spec := replicaset.Spec{Desired: 3, Revision: "v2", Zones: []string{"a", "b"}, Unreachable: []string{"b"},
		Strategy: replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible}}
	var rs []replicaset.Replica
	for i := range 3 {
		r := ranFor2h(fmt.Sprintf("a%d", i), "v1", "a")
		r.InPlaceBlocker = "another template"
		rs = append(rs, r)
	}
	p, err := checkedCompute(t, spec, rs, deletionpolicy.Oldest{}, composeNow)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range p.Fallback {
		if seen[f.Replica.Name] {
			t.Errorf("Fallback lists %s twice: %v", f.Replica.Name, p)
		}
		seen[f.Replica.Name] = true
	}
}

// TestCompose_OneDeletionOrder: one deletion order, rollout or not: a
// replica not provisioned (PhasePending) goes before running, ready ones,
// under Oldest too.
func TestCompose_OneDeletionOrder(t *testing.T) {
	pending := replicaset.Replica{Name: "c", UID: "uid-c", CreatedAt: composeNow.Add(-time.Minute),
		Phase: replicaset.PhasePending, Revision: "v2"}
	current := []replicaset.Replica{ranFor2h("a", "v2", ""), ranFor2h("b", "v2", ""), pending}
	protectedOld := ranFor2h("d", "v1", "")
	protectedOld.Protected = true
	for _, tc := range []struct {
		name    string
		desired int
		rs      []replicaset.Replica
	}{
		{"no rollout", 2, current},
		{"rollout in progress", 3, append(slices.Clone(current), protectedOld)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := replicaset.Spec{Desired: tc.desired, Revision: "v2"}
			p, err := checkedCompute(t, spec, tc.rs, deletionpolicy.Oldest{}, composeNow)
			if err != nil {
				t.Fatal(err)
			}
			if diff := gocmp.Diff([]string{"c"}, names(p.Delete)); diff != "" {
				t.Errorf("Delete (-want +got):\n%s\nplan %v", diff, p)
			}
		})
	}
}

// TestCompose_HoldsOnce is the case the former TestInPlace_Passes found
// with -rapid.seed=370201099966463785 (InPlaceOnly, hooks, MaxPerPass 1):
// two replicas prepared for a power cycle and released, four that cannot
// be changed in place. The plan's holds account for each replica on an
// older revision it leaves waiting once, with a replica preparing for a
// power cycle planned as that power cycle under way (doc.go, In-place
// updates), as replicasettest.Check's "holds" rule counts them.
func TestCompose_HoldsOnce(t *testing.T) {
	spec := replicaset.Spec{Desired: 6, MaxPerPass: 1, Revision: "B",
		Strategy: replicaset.Strategy{MaxUnavailable: replicaset.Percent(50), ZoneByZone: true,
			Method: replicaset.UpdateInPlaceOnly},
		Lifecycle: &replicaset.Lifecycle{Timeout: time.Minute, Abandon: true}}
	var rs []replicaset.Replica
	for i := range 6 {
		r := ranFor2h(fmt.Sprintf("o%d", i), "A", "")
		if i >= 4 {
			r.InPlace = replicaset.InPlacePowerCycle
			r.Preparing = &replicaset.Preparing{Since: composeNow.Add(-time.Duration(6-i) * time.Minute), Update: true}
		}
		rs = append(rs, r)
	}
	p, err := checkedCompute(t, spec, rs, deletionpolicy.HighestOrdinal{}, composeNow)
	if err != nil {
		t.Fatal(err)
	}
	updated := map[string]bool{}
	for _, u := range p.Update {
		updated[u.Replica.Name] = true
	}
	waiting := 0 // on an older revision after the plan, as the planner plans them
	for _, r := range rs {
		if !updated[r.Name] && r.Preparing == nil {
			waiting++
		}
	}
	held := 0
	for _, h := range p.Holds {
		if h.By != replicaset.HoldPartition && h.By != replicaset.HoldMaxSurge {
			held += h.Waiting
		}
	}
	if held != waiting {
		t.Errorf("%d replicas on older revisions remain beyond the partition, holds account for %d: %v", waiting, held, p)
	}
}
