package chaos_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
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
	ctx := context.Background()
	n, hangA, unhealthyWin, startupWin := 4, 0, 3*time.Second, 10*time.Second
	if large() {
		n, hangA, unhealthyWin, startupWin = 9, 1, 5*time.Second, 15*time.Second
	}
	ns, gate, sim, planted, op := healScene(t, e, "chaos-heal-rollout")
	vcs := []vsphere.Config{sim.Config()}
	defer op.stop()

	set := healingSet(ns, int32(n), &vmv1.Remediation{StartupWindow: dur(startupWin), UnhealthyWindow: dur(unhealthyWin)})
	set.Spec.Strategy = vmv1.UpdateStrategy{MaxSurge: ptr.To(intstr.FromString("25%")), MaxUnavailable: ptr.To(intstr.FromString("25%"))}
	if err := e.Client.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	waitHealed(t, e, vcs, set, n)
	planted.made(t, e)
	revA := observedRevision(t, e, set, "")
	bounds, w, vc := watchRollout(t, e, sim, set)
	base := callsOf(gate)

	first := gate.Hold("CloneVM_Task")
	setTemplate(t, e, set, templateB)
	revB := observedRevision(t, e, set, revA)
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
	var hungB, hungA []string
	for _, vm := range l {
		switch {
		case len(hungB) == 0 && count([]vmv1.VirtualMachine{vm}, set.UID, revB, true) == 1 && healthOf(&vm).Healthy:
			hungB = append(hungB, vm.Name)
		case len(hungA) < hangA && count([]vmv1.VirtualMachine{vm}, set.UID, revA, true) == 1:
			hungA = append(hungA, vm.Name)
		}
	}
	if len(hungA) < hangA {
		t.Fatalf("no VM left on A to hang in the middle of the rollout%s", unsettled(e, ns))
	}
	hung := append(slices.Clone(hungB), hungA...)
	onB, onA := count(l, set.UID, revB, false), count(l, set.UID, revA, false)
	w.Excuse(len(hung))
	hang(t, sim.Config(), ns, hung, vmprovider.HeartbeatRed)
	later.Release()

	final := settleOn(t, e, sim, set, revB, n, nil)
	for _, name := range hung {
		if slices.Contains(final, name) {
			t.Errorf("hung VM %s is still there at the end: %v", name, final)
		}
	}
	waitHealed(t, e, vcs, set, n)
	calls := callsOf(gate).since(base)
	if want := int64(n + len(hungB)); calls.clones != want || calls.destroys != want {
		t.Errorf("vCenter saw %s from the change on; want %d clones and %d destroys (replicas %d, and one more for each of the %d hung on B)", calls, want, want, n, len(hungB))
	}
	if calls.resets < int64(len(hungB)) || calls.resets > int64(len(hung)) {
		t.Errorf("vCenter saw %d resets; want from %d (each hung VM on B, reset before it is replaced) to %d (each hung VM at most once)", calls.resets, len(hungB), len(hung))
	}
	replacing, restarting, err := remediationEvents(e, ns)
	if err != nil {
		t.Fatal(err)
	}
	rep := w.Stop()
	polls, failed, mostVC, overVC := vc.Stop()
	planted.reported(t, e)
	op.stop()

	r := row{name: "heal-rollout", steps: fmt.Sprintf("%d: A→B, %d hung mid-rollout", n, len(hung)), maxChildren: rep.MostExisting,
		final: "converged on B, healthy, the hung VMs replaced",
		injected: fmt.Sprintf("hung %v on B and %v on A with %d on B and %d on A; vCenter from the change: %s; events: %d Remediating, %d Restarting; watched: available ≥ %d (bound %d, %d − %d hung), existing ≤ %d (bound %d), in vCenter ≤ %d",
			hungB, hungA, onB, onA, calls, replacing, restarting, rep.FewestAvailable, bounds.MinAvailable()-len(hung), bounds.MinAvailable(), len(hung), rep.MostExisting, bounds.MaxExisting(), mostVC)}
	if rep.Breaches > 0 || rep.Gaps > 0 {
		t.Errorf("the independent watch saw the bounds (%s, less %d hung) broken after %d of %d changes, and lost track %d times: %s",
			bounds, len(hung), rep.Breaches, rep.Events, rep.Gaps, strings.Join(rep.First, "\n"))
	}
	if len(overVC) > 0 || polls == failed {
		t.Errorf("vCenter, polled %d times (%d failed), held more than %d of the set's VMs: %s", polls, failed, bounds.MaxExisting(), strings.Join(overVC, "\n"))
	}
	if replacing < len(hungB) {
		t.Errorf("%d Remediating events, want at least %d (each hung VM on B)", replacing, len(hungB))
	}
	finish(t, e, vcs, ns, planted, &r, begin)
	return r
}
