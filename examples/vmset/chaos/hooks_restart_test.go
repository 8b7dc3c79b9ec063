package chaos_test

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/utils/ptr"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/internal/testenv"
)

// hooksRestart restarts the operator (a new manager: caches,
// expectations, vCenter session) while VMs prepare to leave. A set with a
// drain hook of a long timeout (10 minutes) is scaled to half while the
// drainer holds everything; once the VMs chosen all prepare and the
// set's status counts them (the old operator's pass done), the test
// records their names and preparing times, stops the operator and starts
// a new one. It then changes spec.minReadySeconds (0 → 1, which keeps
// every VM: all have been ready far longer) and waits until the status
// describes that generation: the new operator has made passes over the
// preparations it found, at its start and for the change. Then, and for
// 2 s more every 100 ms, the same VMs must prepare with the same
// preparing times, no other VM chosen, none deleted, vCenter destroying
// nothing. Then the drainer releases each after a random 0–2 s: the set
// must converge at half with exactly those VMs gone, each released by the
// drainer before it was deleted (the gate checker). Small: 4 VMs; large:
// 10. Never more VMs than it had; 0 leaked, 0 duplicate, 0 foreign
// changed.
func hooksRestart(t *seeded, e *testenv.Env) row {
	begin := time.Now()
	n := 4
	if large() {
		n = 10
	}
	half := n / 2
	const timeout = 10 * time.Minute
	s := startHookScene(t, e, "chaos-hooks-restart", n, timeout, "", 2*time.Second)
	defer s.op.stop()
	before, err := observeAll(e, s.vcs, s.ns)
	if err != nil {
		t.Fatal(err)
	}

	patchSet(t, e, s.set, func(spec *vmv1.VirtualMachineReplicaSetSpec) { spec.Replicas = ptr.To(int32(half)) })
	leaving := s.waitPreparing(t, e, n-half)
	waitSet(t, e, s.set, fmt.Sprintf("its status counting %d preparing", n-half), func(set *vmv1.VirtualMachineReplicaSet) bool {
		return set != nil && set.Status.ObservedGeneration == set.Generation && ptr.Deref(set.Status.PreparingReplicas, -1) == int32(n-half)
	})
	s.op.stop()
	s.op.start()
	restarted := time.Now()
	patchSet(t, e, s.set, func(spec *vmv1.VirtualMachineReplicaSetSpec) { spec.MinReadySeconds = 1 })
	observedRevision(t, e, s.set, "")
	passed := time.Since(restarted)
	why, polls := holdFor(2*time.Second, s.unchanged(t, e, n, leaving))
	if why != "" {
		t.Errorf("after the restart: %s (before it: %v)", why, leaving)
	}

	s.d.recover()
	converge(t, e, s.sim, s.ns, half)
	after, err := observeAll(e, s.vcs, s.ns)
	if err != nil {
		t.Fatal(err)
	}
	gone := slices.Sorted(maps.Keys(leaving))
	if want := slices.DeleteFunc(slices.Clone(before.Live), func(n string) bool { return slices.Contains(gone, n) }); !slices.Equal(after.Live, want) {
		t.Errorf("converged on %v; want %v: the %v before the restart less %v, preparing at the restart", after.Live, want, before.Live, gone)
	}
	gs := s.g.check(t, e, timeout, s.d)
	if !slices.Equal(gs.released, gone) || len(gs.timedOut)+len(gs.skipped) > 0 {
		t.Errorf("the VMs went: released %v, timed out %v, without preparing %v; want %v released", gs.released, gs.timedOut, gs.skipped, gone)
	}
	s.g.checkRestamps(t)
	most := s.stop(t, e, n)

	r := row{name: "hooks-restart", steps: fmt.Sprintf("%d→%d, a restart while %d prepare", n, half, n-half), maxChildren: most,
		final: fmt.Sprintf("converged at %d, exactly the VMs preparing at the restart gone", half),
		injected: fmt.Sprintf("1 restart with %v preparing; the new operator's pass %.1f s after it; the same VMs preparing, their times unchanged, nothing else chosen (%d polls over 2 s); then released after 0–2 s",
			gone, passed.Seconds(), polls)}
	finish(t, e, s.vcs, s.ns, s.planted, &r, begin)
	return r
}
