package chaos_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/replicakit/replicakit/examples/internal/rollwatch"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/vmprovider"
)

// healRollout rolls a healing set from template A to B (maxSurge and
// maxUnavailable 25%, as rollout-revert) and, in the middle of it, hangs
// VMs for good (red heartbeats a reset does not clear): fewer than the
// storm guard's 40%. The moment is made: vCenter holds the rollout's
// clones from the change on; once one is caught, a second hold takes the
// later ones and the first lets its clones through, so that the rollout
// stands with some VMs on B, healthy, and the rest on A until the test
// lets it go on. Then it hangs a VM on B (recorded healthy first, so that
// its replacement is no failed one) and, in the large run, one on A too.
// Small: 4 replicas (surge 1, unavailable 1), one hung; large: 9 (surge
// 3, unavailable 2), two hung. Windows: unhealthy 3 s (large 5 s),
// start-up 10 s (large 15 s), restarts first.
//
// The set must end on B at its count, healthy, the rollout complete, the
// hung VMs gone from Kubernetes and vCenter. vCenter must have seen,
// from the change on, exactly replicas + (hung on B) clones and as many
// destroys (every VM on A goes, a hung one among them, and each hung VM
// on B is replaced once), at least one reset per hung VM on B and at most
// one per hung VM. An independent watch of the VirtualMachines must never
// see more than replicas + maxSurge existing (counting those being
// deleted), nor fewer available than replicas − maxUnavailable less the
// VMs the test hung, from the moment it hangs them (Watcher.Excuse: the
// planner cannot keep a hung VM available, and never takes the others
// lower); a poll of vCenter never more than replicas + maxSurge VMs.
func healRollout(t *seeded, e *testenv.Env) row {
	begin := time.Now()
	s := startHungRollout(t, e, "chaos-heal-rollout", true, nil)
	defer s.op.stop()
	s.roll(t, e)
	if s.calls.resets < int64(len(s.hungB)) || s.calls.resets > int64(len(s.hung)) {
		t.Errorf("vCenter saw %d resets; want from %d (each hung VM on B, reset before it is replaced) to %d (each hung VM at most once)", s.calls.resets, len(s.hungB), len(s.hung))
	}
	r := row{name: "heal-rollout", steps: fmt.Sprintf("%d: A→B, %d hung mid-rollout", s.n, len(s.hung)), maxChildren: s.rep.MostExisting,
		final: "converged on B, healthy, the hung VMs replaced", injected: s.String()}
	finish(t, e, s.vcs, s.ns, s.planted, &r, begin)
	return r
}

// hungRollout is a healing set rolling from template A to B with VMs hung
// in the middle of the rollout (heal-rollout, hooks-rollout-heal), and
// what the rollout did.
type hungRollout struct {
	scene
	n, hangA int
	set      *vmv1.VirtualMachineReplicaSet
	revA     string
	bounds   rollwatch.Bounds
	w        *rollwatch.Watcher
	vc       *rollwatch.VCenterCount

	// What roll found.
	hungB, hungA, hung []string
	onB, onA           int     // VMs on B and on A when the test hung them
	calls              vcCalls // from the change to B on
	rep                rollwatch.Report
	mostVC             int // the most of the set's VMs in vCenter
	replacing          int // Remediating events
	restarting         int // Restarting events
}

// startHungRollout starts the scene of a hungRollout named name (healScene)
// and a healing set on A of 4 replicas (large, 9), maxSurge and
// maxUnavailable 25%, windows unhealthy 3 s and start-up 10 s (large 5 s
// and 15 s), restarting first or not, as edit changes it before it is
// created; it waits until the set is healthy and the foreign objects
// made, then starts the rollout's watchers (watchRollout). Stop s.op when
// the scenario ends.
func startHungRollout(t *seeded, e *testenv.Env, name string, restart bool, edit func(*vmv1.VirtualMachineReplicaSet)) *hungRollout {
	s := &hungRollout{n: 4}
	unhealthyWin, startupWin := 3*time.Second, 10*time.Second
	if large() {
		s.n, s.hangA, unhealthyWin, startupWin = 9, 1, 5*time.Second, 15*time.Second
	}
	s.scene = startScene(t, e, name)
	s.set = healingSet(s.ns, int32(s.n), &vmv1.Remediation{StartupWindow: dur(startupWin), UnhealthyWindow: dur(unhealthyWin), Restart: ptr.To(restart)})
	s.set.Spec.Strategy = vmv1.UpdateStrategy{MaxSurge: ptr.To(intstr.FromString("25%")), MaxUnavailable: ptr.To(intstr.FromString("25%"))}
	if edit != nil {
		edit(s.set)
	}
	if err := e.Client.Create(context.Background(), s.set); err != nil {
		t.Fatal(err)
	}
	waitHealed(t, e, s.vcs, s.set, s.n)
	s.planted.made(t, e)
	s.revA = observedRevision(t, e, s.set, "")
	s.bounds, s.w, s.vc = watchRollout(t, e, s.sim, s.set)
	return s
}

// roll rolls the set to B, hanging VMs in the middle of it
// (hangMidRollout), and waits until it is on B at its count, healthy,
// the hung VMs gone. vCenter must have seen, from the change on, exactly
// replicas + (hung on B) clones and as many destroys (every VM on A goes,
// a hung one among them, and each hung VM on B is replaced once), and
// the set at least one Remediating event per hung VM on B (the events
// recorder folds more into a series). It then stops the watchers
// (stopRollout) and, once the operator has reported the foreign objects,
// the operator.
func (s *hungRollout) roll(t *seeded, e *testenv.Env) {
	base := callsOf(s.gate)
	var revB string
	revB, s.hungB, s.hungA, s.onB, s.onA = hangMidRollout(t, e, s.gate, s.sim, s.set, s.revA, s.hangA, s.w)
	s.hung = append(slices.Clone(s.hungB), s.hungA...)
	final := settleOn(t, e, s.sim, s.set, revB, s.n, nil)
	for _, name := range s.hung {
		if slices.Contains(final, name) {
			t.Errorf("hung VM %s is still there at the end: %v", name, final)
		}
	}
	waitHealed(t, e, s.vcs, s.set, s.n)
	s.calls = callsOf(s.gate).since(base)
	if want := int64(s.n + len(s.hungB)); s.calls.clones != want || s.calls.destroys != want {
		t.Errorf("vCenter saw %s from the change on; want %d clones and %d destroys (replicas %d, and one more for each of the %d hung on B)", s.calls, want, want, s.n, len(s.hungB))
	}
	var err error
	if s.replacing, s.restarting, err = remediationEvents(e, s.ns); err != nil {
		t.Fatal(err)
	}
	if s.replacing < len(s.hungB) {
		t.Errorf("%d Remediating events, want at least %d (each hung VM on B)", s.replacing, len(s.hungB))
	}
	s.rep, s.mostVC = stopRollout(t, s.bounds, s.w, s.vc, len(s.hung))
	s.planted.reported(t, e)
	s.op.stop()
}

// String says what roll did and saw, for the table.
func (s *hungRollout) String() string {
	return fmt.Sprintf("hung %v on B and %v on A with %d on B and %d on A; vCenter from the change: %s; events: %d Remediating, %d Restarting; watched: available ≥ %d (bound %d, %d − %d hung), existing ≤ %d (bound %d), in vCenter ≤ %d",
		s.hungB, s.hungA, s.onB, s.onA, s.calls, s.replacing, s.restarting, s.rep.FewestAvailable, s.bounds.MinAvailable()-len(s.hung), s.bounds.MinAvailable(), len(s.hung),
		s.rep.MostExisting, s.bounds.MaxExisting(), s.mostVC)
}

// hangMidRollout rolls set from revision revA to template B and, in the
// middle of it, hangs for good (vmprovider.HeartbeatRed) a VM on B and
// hangA VMs on A, excusing them from w's availability bound. The moment
// is made: vCenter holds the rollout's clones from the change on; once
// one is caught, a second hold takes the later ones and the first lets
// its clones through, so that the rollout stands with some VMs on B,
// healthy, and the rest on A until the VMs are hung (the one on B
// recorded healthy first, so that its replacement is no failed one).
// VMs on A that prepare to leave are not hung: they leave anyway. It
// returns B's revision, the VMs hung on B and on A, and how many VMs were
// on B and on A then.
func hangMidRollout(t *seeded, e *testenv.Env, gate *vcsim.Faults, sim *vcsimtest.Sim, set *vmv1.VirtualMachineReplicaSet, revA string, hangA int, w *rollwatch.Watcher) (revB string, hungB, hungA []string, onB, onA int) {
	ns := set.Namespace
	first := gate.Hold("CloneVM_Task")
	setTemplate(t, e, set, templateB)
	revB = observedRevision(t, e, set, revA)
	select {
	case <-first.Caught():
	case <-time.After(2 * time.Minute):
		t.Fatalf("no clone of the rollout reached vCenter in 2 minutes%s", unsettled(e, ns)+stacks())
	}
	later := gate.Hold("CloneVM_Task")
	first.Release()
	defer later.Release()
	// Some VMs on B, ready and recorded healthy; no more until later is
	// released.
	l := waitVMs(t, e, ns, "a VM on B ready and recorded healthy", func(l []vmv1.VirtualMachine) bool {
		for _, vm := range l {
			if count([]vmv1.VirtualMachine{vm}, set.UID, revB, true) == 1 && healthOf(&vm).Healthy {
				return true
			}
		}
		return false
	})
	for _, vm := range l {
		_, leaving := vm.Annotations[kube.AnnotationPreparing]
		switch {
		case len(hungB) == 0 && count([]vmv1.VirtualMachine{vm}, set.UID, revB, true) == 1 && healthOf(&vm).Healthy:
			hungB = append(hungB, vm.Name)
		case len(hungA) < hangA && count([]vmv1.VirtualMachine{vm}, set.UID, revA, true) == 1 && !leaving:
			hungA = append(hungA, vm.Name)
		}
	}
	if len(hungA) < hangA {
		t.Fatalf("no VM left on A to hang in the middle of the rollout%s", unsettled(e, ns))
	}
	w.Excuse(len(hungB) + len(hungA))
	hang(t, sim.Config(), ns, append(slices.Clone(hungB), hungA...), vmprovider.HeartbeatRed)
	return revB, hungB, hungA, count(l, set.UID, revB, false), count(l, set.UID, revA, false)
}
