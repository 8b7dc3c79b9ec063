package chaos_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/rollwatch"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// templateBad is a template whose VMs never become healthy: readiness
// IPAddress, and no guest ever reports an address (the simulator reports
// none unless told: vcsim.ReportGuest).
var templateBad = vmv1.VirtualMachineSpec{CPUs: 1, MemoryMiB: 512, Readiness: vmv1.ReadyWhenIPAddress}

// healBadTemplate rolls a healing set of healthy VMs on template A onto a
// template whose VMs never become healthy (templateBad), with the default
// strategy (maxSurge 1, maxUnavailable 0: one VM on the new template at
// a time, since none becomes available) and maxFailures 3, a short
// start-up window and a short backoff (given with the template change,
// the VMs on A being healthy by then). Each VM on the bad template falls
// due when its start-up window ends, is (in the large run) reset first,
// and replaced when due again: a failed replacement, never healthy. After
// the first failure the next replacement waits the backoff, after the
// second twice it; after the third, remediation is suspended. Small: 3
// replicas, start-up window 2 s, backoff 3 s, no restarts; large: 6
// replicas, start-up window 8 s, backoff 15 s, restarts first.
//
// It asserts: exactly maxFailures (3) VMs on the bad template replaced
// when the set's condition RemediationAllowed says Suspended, the gap
// between the k-th replacement and the next at least the backoff after k
// failures (backoff × 2^(k−1)) less a second (the binding keeps times to
// the second), the condition saying RemediationBackoff between them;
// once suspended, and the rollout's VM standing in for the last replaced
// one on, the condition staying Suspended with nothing cloned, destroyed,
// reset or deleted for twice the start-up window and 5 s more (the last
// VM would have been remediated by then); vCenter's clones from the change
// to the suspension exactly 1 + maxFailures (the rollout's one VM on the
// bad template, and one for each failed replacement: with one VM on it
// at a time, at most one is due at once, so the cap in flight plays no
// part and there is no first wave; over the set's life,
// replicas + 1 + maxFailures), destroys maxFailures, resets maxFailures in
// the large run (each replaced VM reset once first; the last, suspended,
// not) and none in the small; and an independent watch never seeing
// fewer than replicas available (maxUnavailable 0: the VMs on A serve
// throughout) nor more than replicas + 1 existing. Then the template goes
// back to A: the set settles on A with the very VMs it had, nothing
// cloned, every VM on the bad template destroyed; 0 leaked, 0 duplicate,
// 0 foreign changed.
func healBadTemplate(t *seeded, e *testenv.Env) row {
	begin := time.Now()
	ctx := context.Background()
	const maxFailures = 3
	n, startupWin, backoff, restart := 3, 2*time.Second, 3*time.Second, false
	if large() {
		n, startupWin, backoff, restart = 6, 8*time.Second, 15*time.Second, true
	}
	ns, gate, sim, planted, op := healScene(t, e, "chaos-heal-template")
	vcs := []vsphere.Config{sim.Config()}
	defer op.stop()

	set := healingSet(ns, int32(n), &vmv1.Remediation{Backoff: dur(backoff), MaxFailures: ptr.To[int32](maxFailures), Restart: ptr.To(restart)})
	if err := e.Client.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	before := waitHealed(t, e, vcs, set, n)
	planted.made(t, e)
	revA := observedRevision(t, e, set, "")
	bounds, err := rollwatch.BoundsOf(set)
	if err != nil {
		t.Fatal(err)
	}
	w, err := rollwatch.Start(ctx, e.Config, set, bounds)
	if err != nil {
		t.Fatal(err)
	}
	base := callsOf(gate)

	patch := client.MergeFrom(set.DeepCopy())
	set.Spec.Template.Spec = templateBad
	set.Spec.Remediation.StartupWindow = dur(startupWin)
	if err := e.Client.Patch(ctx, set, patch); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	revBad := observedRevision(t, e, set, revA)

	// Follow the VMs on the bad template: when each is first seen being
	// deleted (replaced), and the set's condition.
	replacedAt := map[string]time.Time{}
	var order []string
	seenOn := map[string]bool{} // VMs on the bad template seen live
	var reasons []string
	var suspendedAt time.Time
	follow := func() (string, bool) {
		lastOn := false // a VM on the bad template, not being deleted, is on
		var l vmv1.VirtualMachineList
		if err := e.Client.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return "", false
		}
		now := time.Now()
		there := map[string]bool{}
		for _, vm := range l.Items {
			if controllerOf(&vm) != set.UID {
				continue
			}
			there[vm.Name] = vm.DeletionTimestamp == nil
			if vm.Labels[kube.RevisionLabel] != revBad {
				if vm.DeletionTimestamp != nil || !slices.Contains(before.Live, vm.Name) {
					return fmt.Sprintf("VM %s on A is being deleted or new", vm.Name), false
				}
				continue
			}
			if vm.DeletionTimestamp == nil {
				seenOn[vm.Name] = true
				lastOn = lastOn || vm.Status.PowerState == string(vmv1.PoweredOn)
			}
		}
		// Replaced: seen live, now being deleted or gone (a destroy in
		// the simulator is quick: a VirtualMachine may go between polls).
		for _, name := range slices.Sorted(maps.Keys(seenOn)) {
			if _, done := replacedAt[name]; !done && !there[name] {
				replacedAt[name] = now
				order = append(order, name)
			}
		}
		s, err := getSet(e, set)
		if err != nil {
			return "", false
		}
		reason, _ := remediationOf(s)
		if len(reasons) == 0 || reasons[len(reasons)-1] != reason {
			reasons = append(reasons, reason)
		}
		if reason == replicaset.HoldSuspended.String() && suspendedAt.IsZero() {
			suspendedAt = time.Now()
		}
		return "", len(order) > 0 && !suspendedAt.IsZero() && lastOn
	}
	var why string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		var done bool
		why, done = follow()
		return done || why != "", nil
	})
	if err != nil || why != "" {
		t.Fatalf("%d VMs on the bad template replaced (%v), condition reasons %s; want %d and Suspended: %v %s; the set: %s%s",
			len(order), order, describeReasons(reasons), maxFailures, err, why, describeHealing(e, set), unsettled(e, ns)+stacks())
	}
	// Suspended, and the rollout's VM on the bad template that stands in
	// for the last one replaced is on: nothing more for twice the
	// start-up window and 5 s.
	atSuspension := callsOf(gate).since(base)
	quiet := 2*startupWin + 5*time.Second
	replaced := len(order)
	if replaced != maxFailures {
		t.Errorf("%d VMs on the bad template replaced (%v) when the set said Suspended, want maxFailures %d: %s", replaced, order, maxFailures, describeHealing(e, set))
	}
	stillWhy, polls := holdFor(quiet, func() string {
		if c := callsOf(gate).since(base); c != atSuspension {
			return fmt.Sprintf("vCenter saw %s after the suspension, %s at it", c, atSuspension)
		}
		if why, _ := follow(); why != "" {
			return why
		}
		if len(order) != replaced {
			return fmt.Sprintf("%d VMs on the bad template replaced after the suspension: %v", len(order)-replaced, order[replaced:])
		}
		if r := reasons[len(reasons)-1]; r != replicaset.HoldSuspended.String() {
			return "RemediationAllowed says " + r
		}
		return ""
	})
	if stillWhy != "" {
		t.Errorf("once suspended: %s", stillWhy)
	}
	if !slices.Contains(reasons, replicaset.HoldRemediationBackoff.String()) {
		t.Errorf("RemediationAllowed never said RemediationBackoff: %s", describeReasons(reasons))
	}
	var gaps []string
	for k := 1; k < len(order); k++ {
		gap := replacedAt[order[k]].Sub(replacedAt[order[k-1]])
		least := backoff << (k - 1)
		gaps = append(gaps, fmt.Sprintf("%v (backoff %v)", gap.Round(100*time.Millisecond), least))
		if gap < least-time.Second {
			t.Errorf("replacement %d came %v after replacement %d, before the backoff of %v after %d failures", k+1, gap, k, least, k)
		}
	}
	wantResets := int64(0)
	if restart {
		wantResets = int64(replaced)
	}
	if want := int64(1 + replaced); atSuspension.clones != want || atSuspension.destroys != int64(replaced) || atSuspension.resets != wantResets {
		t.Errorf("vCenter saw %s from the bad template to the suspension; want %d clones (1 + %d replaced, at most 1 + maxFailures %d), %d destroys, %d resets",
			atSuspension, want, replaced, maxFailures, replaced, wantResets)
	}

	// The fix: back to A. The VMs on A are the set's again, untouched,
	// and the failures were the bad template's: remediation resumes.
	setTemplate(t, e, set, templateA)
	final := settleOn(t, e, sim, set, revA, n, nil)
	waitHealed(t, e, []vsphere.Config{sim.Config()}, set, n)
	if !slices.Equal(final, before.Live) {
		t.Errorf("back on A, the set's VMs are %v, want those it had before the bad template %v", final, before.Live)
	}
	end := callsOf(gate).since(base)
	if end.clones != atSuspension.clones || end.destroys != int64(replaced+1) || end.resets != atSuspension.resets {
		t.Errorf("vCenter saw %s from the bad template to the end; want the %d clones of it, %d destroys (every VM on it), %d resets", end, atSuspension.clones, replaced+1, atSuspension.resets)
	}
	s, err := getSet(e, set)
	if err != nil {
		t.Fatal(err)
	}
	after := "RemediationAllowed " + meta.FindStatusCondition(s.Status.Conditions, kube.ConditionRemediationAllowed).Reason
	rep := w.Stop()
	planted.reported(t, e)
	op.stop()

	r := row{name: "heal-bad-template", steps: fmt.Sprintf("%d: A→bad→A, maxFailures %d", n, maxFailures), maxChildren: rep.MostExisting,
		final: "suspended, then converged on A with the same VMs (" + after + ")",
		injected: fmt.Sprintf("start-up %v, backoff %v, restart %v; replaced %v after %v, gaps %s; Suspended %v after the change; to the suspension %s; reasons %s; held %d polls; watched: available ≥ %d (bound %d), existing ≤ %d (bound %d)",
			startupWin, backoff, restart, order, replacedAt[order[0]].Sub(changed).Round(100*time.Millisecond), strings.Join(gaps, ", "),
			suspendedAt.Sub(changed).Round(100*time.Millisecond), atSuspension, describeReasons(reasons), polls,
			rep.FewestAvailable, bounds.MinAvailable(), rep.MostExisting, bounds.MaxExisting())}
	checkBounds(t, bounds, rep, 0)
	finish(t, e, vcs, ns, planted, &r, begin)
	return r
}

// describeHealing says what the set says of its healing, for a failure
// message: its remediation history and RemediationAllowed condition.
func describeHealing(e *testenv.Env, set *vmv1.VirtualMachineReplicaSet) string {
	s, err := getSet(e, set)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("history %s, RemediationAllowed %+v", s.Annotations[kube.AnnotationRemediationHistory],
		meta.FindStatusCondition(s.Status.Conditions, kube.ConditionRemediationAllowed))
}
