package replicaset_test

import (
	"slices"
	"testing"
	"time"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/replicaset"
)

// More cases of features meeting, found by TestAllFeatures_Check and
// TestAllFeatures_Passes (replicasettest.Check on every pass); each failed
// before Compute became one pass.

// TestCompose_TakenBackNotRestarted: a protected replica preparing to
// leave is taken back (Plan.Cancel); it is not restarted in the same pass
// (a replica is in at most one of the plan's lists), but from the next.
func TestCompose_TakenBackNotRestarted(t *testing.T) {
	r := ranFor2h("r0", "", "")
	r.Protected = true
	r.Preparing = &replicaset.Preparing{Since: composeNow.Add(-time.Minute), Hooks: []string{"drain"}}
	r.Health = &replicaset.Health{Started: composeNow.Add(-2 * time.Hour), Healthy: true, Unhealthy: true, Since: composeNow.Add(-time.Hour)}
	spec := replicaset.Spec{Desired: 1, Lifecycle: &replicaset.Lifecycle{}, Remediation: &replicaset.Remediation{Restart: true}}
	p, err := checkedCompute(t, spec, []replicaset.Replica{r}, deletionpolicy.Oldest{}, composeNow)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Cancel) != 1 || len(p.Restart) != 0 {
		t.Errorf("plan %v: want r0 taken back, and not restarted in the same pass", p)
	}
}

// TestCompose_ReplacedWhilePreparing: a replica preparing for a power
// cycle falls due for remediation while its hooks still hold it; it
// leaves once they release it, and is in Plan.Replace in that pass, never
// in Replace alone.
func TestCompose_ReplacedWhilePreparing(t *testing.T) {
	r := ranFor2h("r0", "v1", "")
	r.InPlace = replicaset.InPlacePowerCycle
	r.Preparing = &replicaset.Preparing{Since: composeNow.Add(-time.Minute), Hooks: []string{"drain"}, Update: true}
	r.Health = &replicaset.Health{Started: composeNow.Add(-time.Hour)} // never healthy, past its start-up window
	spec := replicaset.Spec{Desired: 2, Revision: "v2", Lifecycle: &replicaset.Lifecycle{}, Remediation: &replicaset.Remediation{},
		Strategy: replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible, MaxUnavailable: replicaset.Count(1)}}
	rs := []replicaset.Replica{r, ranFor2h("r1", "v2", "")}
	p, err := checkedCompute(t, spec, rs, deletionpolicy.Oldest{}, composeNow)
	if err != nil {
		t.Fatal(err)
	}
	inDelete := slices.ContainsFunc(append(p.Delete, p.Prepare...), func(d replicaset.Replica) bool { return d.Name == "r0" })
	if len(p.Replace) > 0 && !inDelete {
		t.Errorf("plan %v: r0 is in Replace but in neither Delete nor Prepare", p)
	}
}

// TestCompose_WaitingUpdateServes: a replica waiting for its in-place
// update still runs and may serve, so a scale-down may not delete it past
// the serving floor.
func TestCompose_WaitingUpdateServes(t *testing.T) {
	pending := replicaset.Replica{Name: "r0", UID: "uid-r0", Revision: "v1", Protected: true, Phase: replicaset.PhasePending}
	up := replicaset.Replica{Name: "r1", UID: "uid-r1", Revision: "v1", Phase: replicaset.PhaseRunning, InPlace: replicaset.InPlaceLive}
	spec := replicaset.Spec{Desired: 1, Revision: "v2", Strategy: replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible}}
	p, err := checkedCompute(t, spec, []replicaset.Replica{pending, up}, deletionpolicy.Oldest{}, composeNow)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(p.Delete, func(d replicaset.Replica) bool { return d.Name == "r1" }) {
		t.Errorf("plan %v: r1, the one replica that may serve, is deleted below Desired 1 − MaxUnavailable 0", p)
	}
}

// TestCompose_InPlaceIsARollout: a replica updated in place is a rollout
// in progress in that pass: with Spec.ReplaceDeleting, replicas being
// deleted are replaced only within Desired + MaxSurge, and Rebalance
// waits.
func TestCompose_InPlaceIsARollout(t *testing.T) {
	live := ranFor2h("r2", "v1", "")
	live.InPlace = replicaset.InPlaceLive
	gone := func(name string) replicaset.Replica { r := ranFor2h(name, "v1", ""); r.Deleting = true; return r }
	spec := replicaset.Spec{Desired: 2, Revision: "v2", ReplaceDeleting: true,
		Strategy: replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible}}
	p, err := checkedCompute(t, spec, []replicaset.Replica{gone("r0"), gone("r1"), live}, deletionpolicy.Oldest{}, composeNow)
	if err != nil {
		t.Fatal(err)
	}
	if total := 3 + p.Create; total > spec.Desired+1 {
		t.Errorf("plan %v: %d replicas counting those being deleted and created, over Desired 2 + MaxSurge 1", p, total)
	}

	var rs []replicaset.Replica
	for _, name := range []string{"a1", "a2", "a3"} {
		r := ranFor2h(name, "v1", "a")
		r.InPlace = replicaset.InPlaceLive
		rs = append(rs, r)
	}
	spec = replicaset.Spec{Desired: 3, Revision: "v2", Zones: []string{"a", "b"}, Rebalance: true,
		Strategy: replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible}}
	if p, err = checkedCompute(t, spec, rs, deletionpolicy.Oldest{}, composeNow); err != nil {
		t.Fatal(err)
	}
	if len(p.Update) != 3 || p.Create != 0 {
		t.Errorf("plan %v: want the three updated in place, and no rebalancing create beside them", p)
	}
}

// TestCompose_RestartedNotUpdated: a replica whose in-place update is under
// way (it prepared for it, and its hooks released it) falls due for a
// remediation restart; the restart goes first, as it does for an update
// not yet under way, and the update waits for the next pass. It was in
// both Plan.Restart and Plan.Update.
func TestCompose_RestartedNotUpdated(t *testing.T) {
	r := ranFor2h("r0", "v1", "")
	r.InPlace = replicaset.InPlaceLive
	r.Preparing = &replicaset.Preparing{Since: composeNow.Add(-time.Minute), Update: true}
	r.Health = &replicaset.Health{Started: composeNow.Add(-time.Hour)} // never healthy, past its start-up window
	spec := replicaset.Spec{Desired: 1, Revision: "v2", Lifecycle: &replicaset.Lifecycle{},
		Remediation: &replicaset.Remediation{Restart: true},
		Strategy:    replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible, MaxUnavailable: replicaset.Count(1)}}
	p, err := checkedCompute(t, spec, []replicaset.Replica{r}, deletionpolicy.Oldest{}, composeNow)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Restart) != 1 || len(p.Update) != 0 || p.Lifecycle.Preparing != 1 {
		t.Errorf("plan %v (preparing %d): want r0 restarted, its update left for the next pass, still preparing",
			p, p.Lifecycle.Preparing)
	}
}
