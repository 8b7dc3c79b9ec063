package chaos_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/rollwatch"
	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/faults"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// The templates the rollout scenario moves between: what vCenter shows
// of each is its CPUs and memory.
var (
	templateA = vmv1.VirtualMachineSpec{CPUs: 1, MemoryMiB: 256}
	templateB = vmv1.VirtualMachineSpec{CPUs: 2, MemoryMiB: 512}
)

// rolloutRevert rolls a set of nine VMs spread over three zones (with
// Rebalance, maxSurge and maxUnavailable 25%: 3 and 2) from template A to
// B and, once zone-c has refused a clone and three VMs on B are ready,
// back to A, so that the VMs still on A count as updated at once. Once the
// nine VMs on A are up, 20% of the operator's API writes and of vCenter's
// clone, power-on and destroy tasks fail, foreign objects sit in the
// namespace, the cache lags when lag is not nil, and zone-c refuses every
// clone from the change to B until the change back to A; the operator
// restarts in the middle of each change. The set must end on A (every
// VM's CPUs and memory read from vCenter), 3/3/3 in vCenter, the rollout
// back to A having kept the VMs that were on A at the revert (Rebalance
// may move them after it), 0 leaked or duplicate VMs and 0 foreign objects
// changed; an independent watch of the VirtualMachines
// must never see fewer than 7 available or more than 12 existing
// (counting those being deleted), nor a poll of vCenter more than 12 of
// the set's VMs.
func rolloutRevert(t *seeded, e *testenv.Env, lag *faults.Lag) row {
	begin := time.Now()
	ctx := context.Background()
	ns := namespace(t, e, "chaos-rollout")
	vcf := &vcsim.Faults{Methods: vcFaults, Seed: t.seed, FailFirst: true}
	sim := vcsimtest.StartFaulty(t, vcf)
	if err := sim.AddCluster(ctx, vcsim.ThirdCluster); err != nil {
		t.Fatal(err)
	}
	planted := plantForeign(t, e, sim, ns)
	op := &operator{t: t, e: e, ns: ns, sim: sim, lag: lag, zones: vcsim.Zones(), zoneBackoff: 2 * time.Second}
	op.start()

	set := &vmv1.VirtualMachineReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: setName},
		Spec: vmv1.VirtualMachineReplicaSetSpec{
			Replicas:  ptr.To[int32](9),
			Selector:  &vmv1.LabelSelector{MatchLabels: map[string]string{"app": setName}},
			Zones:     []string{"zone-a", "zone-b", "zone-c"},
			Rebalance: true,
			Strategy:  vmv1.UpdateStrategy{MaxSurge: ptr.To(intstr.FromString("25%")), MaxUnavailable: ptr.To(intstr.FromString("25%"))},
			Template: vmv1.VirtualMachineTemplate{
				Metadata: vmv1.TemplateMetadata{Labels: map[string]string{"app": setName}},
				Spec:     templateA,
			},
		},
	}
	if err := e.Client.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	converge(t, e, sim, ns, 9)
	revA := observedRevision(t, e, set, "")
	// The faults start with the rollout, on an operator started afresh:
	// making the nine VMs through them is what the other scenarios do.
	vcf.SetProbability(0.2)
	api := faults.New(0.2, t.seed)
	op.stop()
	op.api = api
	op.start()
	bounds, w, vc := watchRollout(t, e, sim, set)

	// A → B, zone-c refusing clones; a restart once the first VM is on B;
	// the revert once zone-c has refused a clone and three VMs on B are
	// ready.
	lift := vcf.Refuse("CloneVM_Task", poolOf(t, sim, "/DC0/host/DC0_C2/Resources"))
	setTemplate(t, e, set, templateB)
	revB := observedRevision(t, e, set, revA)
	var restarts []string
	restarts = append(restarts, op.restartWhen(ns, set.UID, revB, func(onB, _ int) bool { return onB > 0 }))
	waitVMs(t, e, ns, "a clone refused in zone-c and three VMs on B ready", func(l []vmv1.VirtualMachine) bool {
		return w.Report().Refused["zone-c"] > 0 && count(l, set.UID, revB, true) >= 3
	})

	// B → A, zone-c taking clones again: the VMs still on A are updated at
	// once; a restart once a VM on B has gone.
	lift()
	setTemplate(t, e, set, templateA)
	if got := observedRevision(t, e, set, revB); got != revA {
		t.Errorf("back on template A, the set's revision is %s, want A's %s", got, revA)
	}
	atRevert := vms(t, e, ns)
	survivors := names(atRevert, set.UID, revA, true)
	if len(survivors) == 0 {
		t.Errorf("no VM was left on A when the template went back to it: the scenario exercised nothing")
	}
	onBAtRevert := count(atRevert, set.UID, revB, false)
	restarts = append(restarts, op.restartWhen(ns, set.UID, revB, func(onB, _ int) bool { return onB < onBAtRevert }))
	// Rebalance, which may move any VM, waits for the rollout to end: until
	// then only the rollout deletes, and it keeps every VM on A.
	rolled := waitVMs(t, e, ns, "no VM left on B", func(l []vmv1.VirtualMachine) bool { return count(l, set.UID, revB, false) == 0 })
	onA := names(rolled, set.UID, revA, false)
	if gone := slices.DeleteFunc(slices.Clone(survivors), func(n string) bool { return slices.Contains(onA, n) }); len(gone) > 0 {
		t.Errorf("the rollout back to A replaced VMs that were on A: %v (of %v); once no VM was on B, the VMs on A were %v", gone, survivors, onA)
	}

	final := settleOn(t, e, sim, set, revA, 9, map[string]int{"DC0_C0": 3, "DC0_C1": 3, "DC0_C2": 3})
	rep, mostVC := stopRollout(t, bounds, w, vc, 0)
	planted.reported(t, e)
	op.stop()

	r := row{name: "rollout-revert", steps: "9: A→B→A", maxChildren: rep.MostExisting, final: "converged on A, 3/3/3"}
	r.leaked, r.duplicates = leaksAndDuplicates(t, e, sim, ns)
	r.foreignChanged = planted.changed(t, e)
	if api.Injected() == 0 || vcf.Injected() == 0 {
		t.Errorf("faults injected: API %d, vCenter %d; the scenario exercised nothing", api.Injected(), vcf.Injected())
	}
	checkHardware(t, sim, ns, final, templateA)
	inj := []string{api.String()}
	if lag != nil {
		inj = append(inj, fmt.Sprintf("%d lagging watch reads", lag.Reads.Load()))
		if lag.Reads.Load() == 0 {
			t.Errorf("the cache never lagged: the scenario exercised nothing")
		}
	}
	r.injected = strings.Join(append(inj,
		fmt.Sprintf("%d vCenter task failures", vcf.Injected()),
		fmt.Sprintf("zone-c refusing clones from A→B to the revert (%d refused)", rep.Refused["zone-c"]),
		fmt.Sprintf("%d restarts at (on B, on A) %s", len(restarts), strings.Join(restarts, " ")),
		"3 foreign objects",
		fmt.Sprintf("%d VMs on A at the revert, all kept by the rollout", len(survivors)),
		fmt.Sprintf("watched: available ≥ %d (bound %d), existing ≤ %d (bound %d), in vCenter ≤ %d", rep.FewestAvailable, bounds.MinAvailable(), rep.MostExisting, bounds.MaxExisting(), mostVC)), "; ")
	if r.leaked+r.duplicates+r.foreignChanged > 0 {
		t.Errorf("%d leaked vSphere VMs, %d duplicates, %d foreign objects changed", r.leaked, r.duplicates, r.foreignChanged)
	}
	if t.Failed() {
		r.final = "FAILED"
	}
	r.took = time.Since(begin)
	return r
}

// setTemplate changes the set's template spec to spec.
func setTemplate(t testing.TB, e *testenv.Env, set *vmv1.VirtualMachineReplicaSet, spec vmv1.VirtualMachineSpec) {
	t.Helper()
	patchSet(t, e, set, func(s *vmv1.VirtualMachineReplicaSetSpec) { s.Template.Spec = spec })
}

// patchSet changes the set's spec as edit does, with a merge patch.
func patchSet(t testing.TB, e *testenv.Env, set *vmv1.VirtualMachineReplicaSet, edit func(*vmv1.VirtualMachineReplicaSetSpec)) {
	t.Helper()
	patch := client.MergeFrom(set.DeepCopy())
	edit(&set.Spec)
	if err := e.Client.Patch(context.Background(), set, patch); err != nil {
		t.Fatal(err)
	}
}

// observedRevision waits until the set's status describes its current
// generation with a revision other than not, and returns it.
func observedRevision(t testing.TB, e *testenv.Env, set *vmv1.VirtualMachineReplicaSet, not string) string {
	t.Helper()
	var got vmv1.VirtualMachineReplicaSet
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := e.Client.Get(ctx, client.ObjectKeyFromObject(set), &got)
		st := got.Status
		return err == nil && st.ObservedGeneration == got.Generation && st.UpdateRevision != "" && st.UpdateRevision != not, nil
	})
	if err != nil {
		t.Fatalf("the set's status never described generation %d with a revision other than %q: %+v", got.Generation, not, got.Status)
	}
	return got.Status.UpdateRevision
}

// count counts the VirtualMachines of l controlled by uid, not being
// deleted, labelled with revision rev, and Ready when ready.
func count(l []vmv1.VirtualMachine, uid types.UID, rev string, ready bool) int {
	n := 0
	for i := range l {
		vm := &l[i]
		ref := metav1.GetControllerOfNoCopy(vm)
		if ref == nil || ref.UID != uid || vm.DeletionTimestamp != nil || vm.Labels[kube.RevisionLabel] != rev {
			continue
		}
		if !ready || meta.IsStatusConditionTrue(vm.Status.Conditions, "Ready") {
			n++
		}
	}
	return n
}

// names lists, sorted, the names of the VirtualMachines count counts.
func names(l []vmv1.VirtualMachine, uid types.UID, rev string, ready bool) []string {
	var out []string
	for _, vm := range l {
		if count([]vmv1.VirtualMachine{vm}, uid, rev, ready) == 1 {
			out = append(out, vm.Name)
		}
	}
	slices.Sort(out)
	return out
}

// vms lists the namespace's VirtualMachines.
func vms(t testing.TB, e *testenv.Env, ns string) []vmv1.VirtualMachine {
	t.Helper()
	var l vmv1.VirtualMachineList
	if err := e.Client.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// waitVMs polls the namespace's VirtualMachines until ok holds, and
// returns them as they were then.
func waitVMs(t testing.TB, e *testenv.Env, ns, what string, ok func([]vmv1.VirtualMachine) bool) []vmv1.VirtualMachine {
	t.Helper()
	var l vmv1.VirtualMachineList
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := e.Client.List(ctx, &l, client.InNamespace(ns))
		return err == nil && ok(l.Items), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v%s", what, err, unsettled(e, ns)+stacks())
	}
	return l.Items
}

// restartWhen waits until ok holds of the set's VMs on revision rev and
// those on others (live, Ready or not), stops the operator and starts a
// new one. It says where it stopped.
func (o *operator) restartWhen(ns string, uid types.UID, rev string, ok func(onRev, others int) bool) string {
	onRev, others := -1, -1
	_ = wait.PollUntilContextTimeout(context.Background(), 2*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var l vmv1.VirtualMachineList
		if err := o.e.Client.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		live := 0
		for i := range l.Items {
			if ref := metav1.GetControllerOfNoCopy(&l.Items[i]); ref != nil && ref.UID == uid && l.Items[i].DeletionTimestamp == nil {
				live++
			}
		}
		onRev = count(l.Items, uid, rev, false)
		others = live - onRev
		return ok(onRev, others), nil
	})
	o.stop()
	o.start()
	return fmt.Sprintf("(%d,%d)", onRev, others)
}

// settleOn waits until the set holds n VMs on both sides, all on
// revision rev, the set reporting its rollout complete, and vCenter
// holding them per cluster as spread says (nil: anywhere); it returns
// their names.
func settleOn(t testing.TB, e *testenv.Env, sim *vcsimtest.Sim, set *vmv1.VirtualMachineReplicaSet, rev string, n int, spread map[string]int) []string {
	t.Helper()
	var st vmcheck.State
	var got map[string]int
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		// The API server first: vCenter serves one call at a time, the
		// operator's among them.
		var l vmv1.VirtualMachineList
		if last = read(func(ctx context.Context) error { return e.Client.List(ctx, &l, client.InNamespace(set.Namespace)) }); last != nil || count(l.Items, set.UID, rev, true) != n {
			return false, nil
		}
		st, last = observeAll(e, []vsphere.Config{sim.Config()}, set.Namespace)
		if last != nil || !st.Settled(n) || st.Set.Status.UpdateRevision != rev || st.Set.Status.UpdatedReplicas != int32(n) {
			return false, nil
		}
		c := meta.FindStatusCondition(st.Set.Status.Conditions, kube.ConditionRolledOut)
		if c == nil || c.Reason != kube.ReasonRolloutComplete {
			return false, nil
		}
		if spread == nil {
			return true, nil
		}
		last = read(func(ctx context.Context) error {
			var err error
			got, err = setSpread(ctx, sim, set.Namespace)
			return err
		})
		return last == nil && maps.Equal(got, spread), nil
	})
	if err != nil {
		t.Fatalf("not settled on revision %s, spread %v, in 3 minutes: %v; per cluster %v (last read error: %v)%s", rev, spread, st, got, last, unsettled(e, set.Namespace)+stacks())
	}
	return st.Live
}

// checkHardware reads the set's VMs from vCenter and checks that they are
// the VMs of names, each with spec's CPUs and memory.
func checkHardware(t testing.TB, sim *vcsimtest.Sim, ns string, names []string, spec vmv1.VirtualMachineSpec) {
	t.Helper()
	var got map[string]rollwatch.Hardware
	err := read(func(ctx context.Context) error {
		var err error
		got, err = rollwatch.ReadHardware(ctx, sim.Config(), ns+"-"+setName+"-")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]rollwatch.Hardware{}
	for _, n := range names {
		vm := vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}}
		want[controllers.VSphereName(&vm)] = rollwatch.Hardware{CPUs: spec.CPUs, MemoryMiB: int32(spec.MemoryMiB)}
	}
	if !maps.Equal(got, want) {
		t.Errorf("vCenter holds the set's VMs as %v, want %v", got, want)
	}
}

// setSpread counts the set's VMs in vCenter (not the foreign ones beside
// them) per cluster they run in, read over the API.
func setSpread(ctx context.Context, sim *vcsimtest.Sim, ns string) (map[string]int, error) {
	where, err := vcsim.VMClusters(ctx, sim.Config())
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for name, cluster := range where {
		if strings.HasPrefix(name, ns+"-"+setName+"-") {
			out[cluster]++
		}
	}
	return out, nil
}

// watchRollout starts the independent watchers of set's rollout bounds:
// a watch of its VirtualMachines on the API server and a poll of its VMs
// in sim every 100 ms. Stop both when the scenario ends.
func watchRollout(t *seeded, e *testenv.Env, sim *vcsimtest.Sim, set *vmv1.VirtualMachineReplicaSet) (rollwatch.Bounds, *rollwatch.Watcher, *rollwatch.VCenterCount) {
	bounds, err := rollwatch.BoundsOf(set)
	if err != nil {
		t.Fatal(err)
	}
	w, err := rollwatch.Start(context.Background(), e.Config, set, bounds)
	if err != nil {
		t.Fatal(err)
	}
	vc, err := rollwatch.PollVCenter(context.Background(), sim.Config(), set.Namespace+"-"+set.Name+"-", bounds.MaxExisting(), 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	return bounds, w, vc
}

// checkBounds fails when the independent watch saw the set's bounds
// broken, less excused VMs that the test hung (rollwatch.Watcher.Excuse),
// or lost track.
func checkBounds(t *seeded, bounds rollwatch.Bounds, rep rollwatch.Report, excused int) {
	t.Helper()
	what := bounds.String()
	if excused > 0 {
		what += fmt.Sprintf(", less %d hung", excused)
	}
	if rep.Breaches > 0 || rep.Gaps > 0 {
		t.Errorf("the independent watch saw the bounds (%s) broken after %d of %d changes, and lost track %d times: %s",
			what, rep.Breaches, rep.Events, rep.Gaps, strings.Join(rep.First, "\n"))
	}
}

// stopRollout stops the watchers watchRollout started and fails on what
// they saw: the bounds broken (checkBounds), or vCenter holding more than
// replicas + maxSurge of the set's VMs or never answering its poll. It
// returns the watch's report and the most VMs vCenter held.
func stopRollout(t *seeded, bounds rollwatch.Bounds, w *rollwatch.Watcher, vc *rollwatch.VCenterCount, excused int) (rollwatch.Report, int) {
	t.Helper()
	rep := w.Stop()
	polls, failed, mostVC, overVC := vc.Stop()
	checkBounds(t, bounds, rep, excused)
	if len(overVC) > 0 || polls == failed {
		t.Errorf("vCenter, polled %d times (%d failed), held more than %d of the set's VMs: %s", polls, failed, bounds.MaxExisting(), strings.Join(overVC, "\n"))
	}
	return rep, mostVC
}
