package chaos_test

import (
	"fmt"
	"slices"
	"time"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/internal/testenv"
)

// hooksRolloutHeal is heal-rollout (startHungRollout, hungRollout.roll)
// with a drain hook on the set and remediation replacing without a
// restart first: the set rolls from template A to B (maxSurge and
// maxUnavailable 25%) while the drainer releases each VM that prepares to
// leave after a random 0–2 s, so that they go in another order than they
// came; the hook's timeout (2 minutes) is longer than the scenario, so
// that only releases let VMs go. In the middle of the rollout a VM on B
// hangs for good, and in the large run one on A too, so that remediation
// deletes as well as the rollout. Small: 4 replicas (surge 1,
// unavailable 1), windows unhealthy 3 s and start-up 10 s; large: 9
// (surge 3, unavailable 2), 5 s and 15 s.
//
// The set must end on B at its count, healthy, the hung VMs gone. Every
// VM that went must have prepared and been released by the drainer
// before it was deleted (the gate checker: none at a timeout, none
// without preparing), replicas + (hung on B) of them: every VM on A and
// each hung VM on B; vCenter must see as many clones and destroys from
// the change on, and no reset. An independent watch of the
// VirtualMachines must never see more than replicas + maxSurge existing
// (a preparing VM is there: it counts) nor fewer available than
// replicas − maxUnavailable less the hung VMs (a preparing VM still
// ready counts as available, as kubectl would show it: the planner
// counts it as leaving, so the watch's count is the looser one), nor a
// poll of vCenter more than replicas + maxSurge VMs.
func hooksRolloutHeal(t *seeded, e *testenv.Env) row {
	begin := time.Now()
	const timeout = 2 * time.Minute
	s := startHungRollout(t, e, "chaos-hooks-rollout", false, func(set *vmv1.VirtualMachineReplicaSet) {
		set.Spec.Lifecycle = drainLifecycle(timeout, "")
	})
	defer s.op.stop()
	g := watchGate(t, e, s.set)
	d := startDrainer(t, e, s.ns, 2*time.Second, false)
	s.roll(t, e)
	if s.calls.resets != 0 {
		t.Errorf("vCenter saw %d resets; want none (restart false)", s.calls.resets)
	}
	gs := g.check(t, e, timeout, d)
	if len(gs.released) != s.n+len(s.hungB) || len(gs.timedOut) > 0 {
		t.Errorf("%d VMs went released by the drainer (%v), %d at the hook's timeout (%v); want %d released (every VM on A and the %d hung on B), none timed out",
			len(gs.released), gs.released, len(gs.timedOut), gs.timedOut, s.n+len(s.hungB), len(s.hungB))
	}
	for _, name := range s.hung {
		if !slices.Contains(gs.released, name) {
			t.Errorf("hung VM %s did not go through the gate: released %v", name, gs.released)
		}
	}
	g.checkRestamps(t)
	vms, order := d.report()
	r := row{name: "hooks-rollout-heal", steps: fmt.Sprintf("%d: A→B, %d hung mid-rollout, drain hook", s.n, len(s.hung)), maxChildren: s.rep.MostExisting,
		final: "converged on B, healthy, the hung VMs replaced",
		injected: fmt.Sprintf("released after 0–2 s: %d VMs (%d hung on B, through remediation), %d pairs in another order than they prepared; %d deleted without preparing (never ran); %s",
			len(gs.released), len(s.hungB), orderInversions(vms, order), len(gs.skipped), s)}
	finish(t, e, s.vcs, s.ns, s.planted, &r, begin)
	return r
}
