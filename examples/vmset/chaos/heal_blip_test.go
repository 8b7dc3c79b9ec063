package chaos_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// healBlip: a network blip that makes most VMs of a healing set look
// unhealthy at once (their heartbeats red together: vcsim.SetHeartbeats)
// for longer than its windows, then heals by itself (green together).
// The set heals with restarts first and the default storm guard (40% of
// replicas, rounded down); its start-up and unhealthy windows are far
// shorter than the blip, so that what holds is the storm guard, not a
// window. Small: 3 of 4 VMs red for 20 s, windows 6 s; large: 8 of 10 red
// for 2 minutes, windows 20 s. Throughout: no reset, clone or destroy in
// vCenter, no VirtualMachine deleted and the set's VMs the same, never
// more live children than replicas; once the set has counted every red
// VM, its RemediationAllowed condition says TooManyUnhealthy at every
// poll until they are green. Then the set settles healthy with the same
// VMs, and no event says anything was remediated.
func healBlip(t *seeded, e *testenv.Env) row {
	begin := time.Now()
	ctx := context.Background()
	n, red, window, blip := 4, 3, 6*time.Second, 20*time.Second
	if large() {
		n, red, window, blip = 10, 8, 20*time.Second, 2*time.Minute
	}
	ns, gate, sim, planted, op := healScene(t, e, "chaos-heal-blip")
	vcs := []vsphere.Config{sim.Config()}
	defer op.stop()

	set := healingSet(ns, int32(n), &vmv1.Remediation{StartupWindow: dur(window), UnhealthyWindow: dur(window)})
	if err := e.Client.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	before := waitHealed(t, e, vcs, set, n)
	planted.made(t, e)
	w := watchChildren(e, ns, set.UID)
	w.bound.Store(int64(n))
	base := callsOf(gate)
	sick := before.Live[:red]

	took := hang(t, sim.Config(), ns, sick, vmprovider.HeartbeatRed)
	redAt := time.Now()
	var stormAt time.Time
	var reasons []string
	why, polls := holdFor(blip, func() string {
		if c := callsOf(gate).since(base); c != (vcCalls{}) {
			return "vCenter saw " + c.String()
		}
		if why := sameVMs(e, ns, set.UID, before.Live); why != "" {
			return why
		}
		s, err := getSet(e, set)
		if err != nil {
			return ""
		}
		reason, unhealthy := remediationOf(s)
		if len(reasons) == 0 || reasons[len(reasons)-1] != reason {
			reasons = append(reasons, reason)
		}
		switch {
		case reason == replicaset.HoldTooManyUnhealthy.String() && unhealthy == int32(red):
			if stormAt.IsZero() {
				stormAt = time.Now()
			}
		case !stormAt.IsZero():
			return fmt.Sprintf("RemediationAllowed went from TooManyUnhealthy to %s (%d unhealthy) during the blip", reason, unhealthy)
		}
		return ""
	})
	if why != "" {
		t.Errorf("during the blip (%v after the red heartbeats): %s%s", time.Since(redAt).Round(100*time.Millisecond), why, unsettled(e, ns))
	}
	if stormAt.IsZero() {
		t.Errorf("the set's RemediationAllowed never said TooManyUnhealthy with %d unhealthy in the %v blip (reasons seen: %s)", red, blip, describeReasons(reasons))
	}
	heldFor := time.Since(stormAt)

	hang(t, sim.Config(), ns, sick, vmprovider.HeartbeatGreen)
	after := waitHealed(t, e, vcs, set, n)
	if !slices.Equal(after.Live, before.Live) {
		t.Errorf("after the blip the set's VMs are %v, want those before it %v", after.Live, before.Live)
	}
	if c := callsOf(gate).since(base); c != (vcCalls{}) {
		t.Errorf("vCenter saw %s from the blip to the end, want none", c)
	}
	if replacing, restarting, err := remediationEvents(e, ns); err != nil || replacing+restarting > 0 {
		t.Errorf("events: %d Remediating, %d Restarting (%v); want none", replacing, restarting, err)
	}
	w.stop()
	planted.reported(t, e)
	op.stop()

	r := row{name: "heal-blip", steps: fmt.Sprintf("%d of %d VMs red %v, windows %v", red, n, blip, window), maxChildren: int(w.max.Load()),
		final: "converged healthy, the same VMs",
		injected: fmt.Sprintf("%d heartbeats red in %v; TooManyUnhealthy %v after, held %v (%d polls; reasons %s); 0 resets, 0 clones, 0 destroys, 0 deletions",
			red, took.Round(time.Millisecond), stormAt.Sub(redAt).Round(100*time.Millisecond), heldFor.Round(time.Second), polls, describeReasons(reasons))}
	if over := w.over.Load(); over > 0 {
		t.Errorf("a watcher saw %d more live children than replicas", over)
	}
	finish(t, e, vcs, ns, planted, &r, begin)
	return r
}

// sameVMs says how the set's VirtualMachines differ from live (none being
// deleted, the same names), or "" when they do not.
func sameVMs(e *testenv.Env, ns string, uid types.UID, live []string) string {
	var got, deleting []string
	var l vmv1.VirtualMachineList
	if err := e.Client.List(context.Background(), &l, inNamespace(ns)); err != nil {
		return ""
	}
	for i := range l.Items {
		vm := &l.Items[i]
		if ref := controllerOf(vm); ref != uid {
			continue
		}
		if vm.DeletionTimestamp != nil {
			deleting = append(deleting, vm.Name)
		}
		got = append(got, vm.Name)
	}
	slices.Sort(got)
	if len(deleting) > 0 || !slices.Equal(got, live) {
		return fmt.Sprintf("the set's VMs are %v (deleting %v), want %v", got, deleting, live)
	}
	return ""
}
