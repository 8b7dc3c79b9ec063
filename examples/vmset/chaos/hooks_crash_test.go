package chaos_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/utils/ptr"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// hooksCrash runs a set whose drain hook's controller has crashed and
// never releases a VM. Small: 4 VMs, timeout 4 s; large: 10, 8 s. With
// defaultResult Continue the set is scaled to half: each VM chosen
// prepares, and is deleted once its timeout has passed, not before (the
// gate checker), and a HookTimedOut event names each of them
// (waitHookTimedOut); the set converges at half. Then, in one patch, defaultResult Abandon and a
// quarter (at least 1): the VMs chosen prepare and stay past their
// timeout. Once the set's ReplicaFailure condition says HookAbandoned
// (after the timeout), for another timeout, every 100 ms: vCenter
// destroys nothing, none of the set's VMs is deleted, the
// same VMs prepare with the same preparing times; then vCenter still
// holds every VM of the set's half and status.preparingReplicas counts
// the abandoned ones. Then the drainer recovers (releases each after
// 0–2 s): the set converges at the quarter, ReplicaFailure no longer says
// HookAbandoned, every VM gone having been released by the drainer. Never
// more VMs than the set started with; 0 leaked, 0 duplicate, 0 foreign
// changed.
func hooksCrash(t *seeded, e *testenv.Env) row {
	begin := time.Now()
	n, timeout := 4, 4*time.Second
	if large() {
		n, timeout = 10, 8*time.Second
	}
	half, quarter := n/2, max(1, n/4)
	s := startHookScene(t, e, "chaos-hooks-crash", n, timeout, "Continue", 2*time.Second)
	defer s.op.stop()

	// Continue: every VM chosen goes at its timeout.
	patchSet(t, e, s.set, func(spec *vmv1.VirtualMachineReplicaSetSpec) { spec.Replicas = ptr.To(int32(half)) })
	converge(t, e, s.sim, s.ns, half)
	first := s.g.check(t, e, timeout, s.d)
	if len(first.timedOut) != n-half || len(first.released)+len(first.skipped) > 0 {
		t.Errorf("scaled %d→%d with the drainer crashed: %d VMs deleted at their timeout %v, %d released %v, %d without preparing %v; want the %d timed out alone",
			n, half, len(first.timedOut), first.timedOut, len(first.released), first.released, len(first.skipped), first.skipped, n-half)
	}
	timedOutEvents := len(waitHookTimedOut(t, e, s.ns, first.timedOut))

	// Abandon: the VMs chosen stay past their timeout.
	patchSet(t, e, s.set, func(spec *vmv1.VirtualMachineReplicaSetSpec) {
		spec.Replicas = ptr.To(int32(quarter))
		spec.Lifecycle.DefaultResult = "Abandon"
	})
	leaving := s.waitPreparing(t, e, half-quarter)
	var last time.Time
	for _, since := range leaving {
		p, err := time.Parse(time.RFC3339Nano, since)
		if err != nil {
			t.Fatalf("preparing time %q: %v", since, err)
		}
		last = later(last, p)
	}
	abandoned := waitReason(t, e, s.set, kube.ConditionReplicaFailure, replicaset.HoldHookAbandoned.String(), true)
	saidAbandoned := time.Since(last.Add(timeout))
	// Held for another timeout from then: at least twice the timeout
	// since each began to prepare, however late the condition came.
	why, polls := holdFor(timeout, s.unchanged(t, e, half, leaving))
	if why != "" {
		t.Errorf("abandoned past their timeout: %s", why)
	}
	past := time.Since(last.Add(timeout))
	st, err := observeAll(e, s.vcs, s.ns)
	if err != nil {
		t.Fatal(err)
	}
	if inVC := setVMs(s.ns, st.VCenter); len(inVC) != half {
		t.Errorf("vCenter holds %d of the set's VMs (%v) after the abandoned ones' timeout, want all %d", len(inVC), inVC, half)
	}
	if got := ptr.Deref(st.Set.Status.PreparingReplicas, -1); got != int32(half-quarter) {
		t.Errorf("status.preparingReplicas is %d while %d VMs are abandoned", got, half-quarter)
	}

	s.d.recover()
	converge(t, e, s.sim, s.ns, quarter)
	waitReason(t, e, s.set, kube.ConditionReplicaFailure, replicaset.HoldHookAbandoned.String(), false)
	second := s.g.check(t, e, timeout, s.d)
	if gone := slices.Sorted(maps.Keys(leaving)); !slices.Equal(second.released, gone) || len(second.timedOut)+len(second.skipped) > 0 {
		t.Errorf("once the drainer recovered: released %v, timed out %v, without preparing %v; want the abandoned %v released",
			second.released, second.timedOut, second.skipped, gone)
	}
	s.g.checkRestamps(t)
	most := s.stop(t, e, n)

	r := row{name: "hooks-crash", steps: fmt.Sprintf("%d→%d (Continue), →%d (Abandon)", n, half, quarter), maxChildren: most,
		final: fmt.Sprintf("converged at %d, ReplicaFailure cleared", quarter),
		injected: fmt.Sprintf("drainer crashed: %d deleted at %s after preparing (timeout %v), %d HookTimedOut events; Abandon: ReplicaFailure HookAbandoned (%q) %.1f s after the timeout, %d held %.1f s past it (%d polls: nothing destroyed, the %d VMs in vCenter); drainer recovered: released after 0–2 s",
			len(first.timedOut), afterPreparing(first.after), timeout, timedOutEvents, strings.SplitN(abandoned, ":", 2)[0], saidAbandoned.Seconds(),
			half-quarter, past.Seconds(), polls, half)}
	finish(t, e, s.vcs, s.ns, s.planted, &r, begin)
	return r
}

// setVMs are the names of names (a namespace's VMs in vCenter) that are
// the set's.
func setVMs(ns string, names []string) []string {
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return !strings.HasPrefix(n, ns+"-"+setName+"-") })
}
