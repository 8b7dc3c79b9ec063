package replicaset_test

import (
	"testing"
	"time"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/replicaset"
)

// TestCompute_RebalanceWaitsForTakeBack: Spec.Rebalance creates its one
// replica only in a pass that finds the set at its desired count with
// nothing being deleted (a preparing replica counts as being deleted), and
// rebalancing acts only in a pass where nothing else acts (One pass, 9);
// with nothing capped, short or held the plan lands on the desired count
// (Invariants: Counting). Here a scale-up takes back a preparation, which
// brings the set to its count, and the same pass also creates the
// rebalancing replica: 4 live for 3 desired, with no hold or deferral.
//
// Found by replicasettest.Check's "counting" rule.
func TestCompute_RebalanceWaitsForTakeBack(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	rep := func(name, zone string) replicaset.Replica {
		return replicaset.Replica{Name: name, UID: "uid-" + name, Phase: replicaset.PhaseRunning, Ready: true,
			ReadySince: now.Add(-time.Hour), Zone: zone}
	}
	x, y, p := rep("x", "a"), rep("y", "b"), rep("p", "a") // y is in no listed zone: a move is due
	p.Preparing = &replicaset.Preparing{Since: now.Add(-time.Minute), Hooks: []string{"drain"}}
	spec := replicaset.Spec{Desired: 3, Zones: []string{"a"}, Rebalance: true, Lifecycle: &replicaset.Lifecycle{}}
	plan, err := replicaset.Compute(spec, []replicaset.Replica{x, y, p}, deletionpolicy.Oldest{}, now)
	if err != nil {
		t.Fatal(err)
	}
	// Want: cancel=[p] and nothing else; the move waits for the next pass.
	if len(plan.Cancel) != 1 || plan.Create != 0 {
		t.Errorf("plan %v; want p taken back and no create (the set is at its count only after the take-back)", plan)
	}
}
