package chaos_test

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/vim25/types"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/replicakit/replicakit/examples/internal/rollwatch"
	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// The memory the in-place scenario's set moves through: up in place twice
// (memory hot-add on), then down, which needs each VM off.
const (
	memStart, memUp, memUpOnly, memDown = 256, 512, 768, 384
)

// inplaceFaults rolls a set's memory in place (spec.strategy.method,
// issue 36) through vCenter faults on its reconfigures, a zone refusing
// operations and restarts of the operator. A set of 4 (large, 10), memory
// hot-add on, spread over three zones with rebalance, in three phases:
//
//  1. InPlaceIfPossible, 256 → 512 MiB, live (maxUnavailable 0): vCenter
//     holds the rollout's reconfigures from the change on; once one is
//     caught, zone-c refuses every reconfigure of its VMs and every clone
//     into it, vCenter refuses one VM in zone-a for good, a reconfigure
//     fails with probability 0.1 from then on, and the operator restarts;
//     then the hold lets go. Once zone-c has refused its VMs' reconfigures
//     and a clone, it takes operations again.
//  2. InPlaceOnly, 512 → 768 MiB, live: vCenter refuses one VM in zone-b
//     for good (and 0.1 of the rest at random).
//  3. InPlaceIfPossible, 768 → 384 MiB, a power cycle each, maxUnavailable
//     1 (large, 2): vCenter refuses one VM on 768 for good; it holds the
//     reconfigures, and once one is caught (its VM off, waiting for it),
//     the operator restarts while the call is in flight.
//
// An independent watch of the API server and a poll of vCenter
// (sizeWatch) check throughout that no VM is labelled with a revision
// whose memory vCenter does not show, nor recorded in vCenter on one with
// another size; the bounds of each phase's strategy hold (rollwatch:
// available ≥ replicas − maxUnavailable, existing ≤ replicas + maxSurge,
// vCenter too). After phases 1 and 3 every VM is on the new revision with
// the new memory in vCenter (rollwatch.ReadHardware), the zones within
// one of each other, and every VM vCenter refused for good (ResizeFailed)
// replaced; the VMs kept were updated in place, never powered off in
// phases 1 and 2, powered off in phase 3. After phase 2 nothing was
// cloned or destroyed, every VM is on 768 MiB or held on 512 with Resized
// False (ResizeFailed), and RolledOut holds, naming the held VMs. At each
// phase's end no VM's vCenter memory differs from its spec without its
// Resized condition saying why. At the end: 0 leaked, 0 duplicate, 0
// foreign changed.
func inplaceFaults(t *seeded, e *testenv.Env) row {
	begin := time.Now()
	ctx := context.Background()
	n, down, p := 4, 1, 0.1
	if large() {
		n, down = 10, 2
	}
	ns := namespace(t, e, "chaos-inplace")
	gate := &vcsim.Faults{Methods: []string{"ReconfigVM_Task"}, Seed: t.seed}
	sim := vcsimtest.StartFaulty(t, gate)
	if err := sim.AddCluster(ctx, vcsim.ThirdCluster); err != nil {
		t.Fatal(err)
	}
	planted := plantForeign(t, e, sim, ns)
	op := &operator{t: t, e: e, ns: ns, sim: sim, zones: vcsim.Zones(), zoneBackoff: 2 * time.Second}
	op.start()
	defer func() { op.stop() }() // the operator running then, restarted or not

	set := &vmv1.VirtualMachineReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: setName},
		Spec: vmv1.VirtualMachineReplicaSetSpec{
			Replicas:  ptr.To(int32(n)),
			Selector:  &vmv1.LabelSelector{MatchLabels: map[string]string{"app": setName}},
			Zones:     []string{"zone-a", "zone-b", "zone-c"},
			Rebalance: true,
			Strategy:  vmv1.UpdateStrategy{Method: "InPlaceIfPossible"},
			Template: vmv1.VirtualMachineTemplate{
				Metadata: vmv1.TemplateMetadata{Labels: map[string]string{"app": setName}},
				Spec:     vmv1.VirtualMachineSpec{CPUs: 1, MemoryMiB: memStart, MemoryHotAdd: true},
			},
		},
	}
	if err := e.Client.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	start := settleInPlace(t, e, sim, set, "", n)
	planted.made(t, e)
	rev0 := observedRevision(t, e, set, "")
	sw := watchSizes(t, e, sim, set, n+1)
	sw.revision(rev0, memStart)
	var restarts, notes []string
	mostExisting := 0

	// 1. InPlaceIfPossible, live: zone-c refusing, one VM refused for
	// good, random refusals, a restart while a reconfigure is in flight.
	where := vcenterVMs(t, sim, ns)
	bad1 := pick(start, where, "DC0_C0", nil)
	var zoneC []string
	for _, name := range start {
		if where[name].cluster == "DC0_C2" {
			zoneC = append(zoneC, name)
		}
	}
	bounds, w := startBounds(t, e, set)
	held := gate.Hold("ReconfigVM_Task")
	patchSet(t, e, set, func(s *vmv1.VirtualMachineReplicaSetSpec) { s.Template.Spec.MemoryMiB = memUp })
	rev1 := observedRevision(t, e, set, rev0)
	sw.revision(rev1, memUp)
	caught(t, e, ns, held)
	var lifts []func()
	for _, name := range append([]string{bad1}, zoneC...) {
		lifts = append(lifts, gate.Refuse("ReconfigVM_Task", where[name].ref))
	}
	lifts = append(lifts, gate.Refuse("CloneVM_Task", poolOf(t, sim, "/DC0/host/DC0_C2/Resources")))
	gate.SetProbability(p)
	op.stop()
	op.start()
	restarts = append(restarts, "with a live reconfigure in flight")
	held.Release()
	waitVMs(t, e, ns, "zone-c's VMs refused their reconfigures and a clone into zone-c refused", func(l []vmv1.VirtualMachine) bool {
		live := liveNames(l, set.UID)
		refused := sw.refused(memUp)
		for _, name := range zoneC {
			if slices.Contains(live, name) && !slices.Contains(refused, name) {
				return false
			}
		}
		return w.Report().Refused["zone-c"] > 0
	})
	for _, lift := range lifts {
		lift()
	}
	final1 := settleInPlace(t, e, sim, set, rev1, n)
	checkHardware(t, sim, ns, final1, vmv1.VirtualMachineSpec{CPUs: 1, MemoryMiB: memUp})
	replaced1 := fellBack(t, sw, "1 (InPlaceIfPossible)", memUp, start, final1, append([]string{bad1}, zoneC...))
	refused1 := sw.refused(memUp)
	kept1 := intersect(start, final1)
	inPlace(t, e, sw, "1", kept1, rev1)
	if offs := powerOffs(t, sim, ns, kept1); len(offs) > 0 {
		t.Errorf("phase 1 (memory hot-add): VMs kept were powered off: %v", offs)
	}
	if held := halfChanged(t, e, sim, set); len(held) > 0 {
		t.Errorf("phase 1: VMs whose vCenter memory differs from their spec at the end: %v", held)
	}
	rep := w.Stop()
	checkBounds(t, bounds, rep, 0)
	mostExisting = max(mostExisting, rep.MostExisting)
	notes = append(notes, fmt.Sprintf("1 (InPlaceIfPossible, %d→%d MiB live): zone-c refused its %d VMs' reconfigures and %d clones, 1 VM refused for good, %d at random; %d replaced, %d updated in place, none powered off; watched available ≥ %d (bound %d), existing ≤ %d (bound %d)",
		memStart, memUp, len(zoneC), rep.Refused["zone-c"], len(refused1)-len(intersect(refused1, append([]string{bad1}, zoneC...))),
		len(replaced1), len(kept1), rep.FewestAvailable, bounds.MinAvailable(), rep.MostExisting, bounds.MaxExisting()))

	// 2. InPlaceOnly, live: one VM refused for good, random refusals; no VM
	// replaced, the refused held and named.
	where = vcenterVMs(t, sim, ns)
	bad2 := pick(final1, where, "DC0_C1", nil)
	base := callsOf(gate)
	bounds, w = startBounds(t, e, set)
	held = gate.Hold("ReconfigVM_Task")
	lift2 := gate.Refuse("ReconfigVM_Task", where[bad2].ref)
	patchSet(t, e, set, func(s *vmv1.VirtualMachineReplicaSetSpec) {
		s.Strategy.Method = "InPlaceOnly"
		s.Template.Spec.MemoryMiB = memUpOnly
	})
	rev2 := observedRevision(t, e, set, rev1)
	sw.revision(rev2, memUpOnly)
	caught(t, e, ns, held)
	held.Release()
	heldVMs, message := waitHeld(t, e, set, rev2, n)
	if !slices.Contains(heldVMs, bad2) {
		t.Errorf("phase 2 (InPlaceOnly): %s, refused for good, is not held: held %v", bad2, heldVMs)
	}
	var refused2 []string
	if !eventually(func() bool { refused2 = sw.refused(memUpOnly); return slices.Equal(refused2, heldVMs) }) {
		t.Errorf("phase 2 (InPlaceOnly): the watch saw %v refused, and %v are held", refused2, heldVMs)
	}
	final2 := liveNames(vms(t, e, ns), set.UID)
	if !slices.Equal(final2, final1) {
		t.Errorf("phase 2 (InPlaceOnly) replaced VMs: %v, were %v", final2, final1)
	}
	if c := callsOf(gate).since(base); c.clones != 0 || c.destroys != 0 {
		t.Errorf("phase 2 (InPlaceOnly): vCenter saw %s; want no clone and no destroy", c)
	}
	checkHeldHardware(t, sim, set, final2, heldVMs)
	if got := halfChanged(t, e, sim, set); !slices.Equal(slices.Sorted(maps.Keys(got)), heldVMs) {
		t.Errorf("phase 2 (InPlaceOnly): VMs whose vCenter memory differs from their spec, with why: %v; want the held ones %v", got, heldVMs)
	}
	if offs := powerOffs(t, sim, ns, final2); len(offs) > 0 {
		t.Errorf("phases 1 and 2 (memory hot-add): VMs were powered off: %v", offs)
	}
	inPlace(t, e, sw, "2", slices.DeleteFunc(slices.Clone(final2), func(name string) bool { return slices.Contains(heldVMs, name) }), rev2)
	lift2()
	rep = w.Stop()
	checkBounds(t, bounds, rep, 0)
	mostExisting = max(mostExisting, rep.MostExisting)
	notes = append(notes, fmt.Sprintf("2 (InPlaceOnly, %d→%d MiB live): 1 VM refused for good, %d at random; %d held and named in RolledOut, %d updated in place, 0 clones, 0 destroys, none powered off; watched available ≥ %d (bound %d)",
		memUp, memUpOnly, len(heldVMs)-1, len(heldVMs), n-len(heldVMs), rep.FewestAvailable, bounds.MinAvailable()))
	t.Logf("phase 2: RolledOut %s", message)

	// 3. InPlaceIfPossible, a power cycle each: one VM refused for good, a
	// restart while a VM is off and its reconfigure in flight.
	where = vcenterVMs(t, sim, ns)
	bad3 := pick(final2, where, "DC0_C0", heldVMs)
	patchMeta := func(s *vmv1.VirtualMachineReplicaSetSpec) {
		s.Strategy.Method = "InPlaceIfPossible"
		s.Strategy.MaxUnavailable = ptr.To(intstr.FromInt32(int32(down)))
		s.Template.Spec.MemoryMiB = memDown
	}
	next := set.DeepCopy()
	patchMeta(&next.Spec)
	bounds, w = startBounds(t, e, next)
	held = gate.Hold("ReconfigVM_Task")
	lift3 := gate.Refuse("ReconfigVM_Task", where[bad3].ref)
	patchSet(t, e, set, patchMeta)
	rev3 := observedRevision(t, e, set, rev2)
	sw.revision(rev3, memDown)
	caught(t, e, ns, held)
	// The VM whose reconfigure is held is off: a read after the catch
	// shows it.
	readsAtCatch := sw.reads()
	var off []string
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		off = sw.poweredOff()
		return sw.reads() > readsAtCatch+1 && len(off) > 0, nil
	}); err != nil {
		t.Errorf("phase 3: with a power cycle's reconfigure held, vCenter showed none of the set's VMs off")
	}
	stopped := make(chan struct{})
	go func() {
		op.stop() // returns once the held reconfigure has ended: the cycle finishes on its own deadline
		close(stopped)
	}()
	held.Release()
	<-stopped
	op.start()
	restarts = append(restarts, fmt.Sprintf("with a power cycle's reconfigure in flight (%d VM off)", len(off)))
	final3 := settleInPlace(t, e, sim, set, rev3, n)
	lift3()
	checkHardware(t, sim, ns, final3, vmv1.VirtualMachineSpec{CPUs: 1, MemoryMiB: memDown})
	replaced3 := fellBack(t, sw, "3 (InPlaceIfPossible, power cycles)", memDown, final2, final3, []string{bad3})
	refused3 := sw.refused(memDown)
	kept3 := intersect(final2, final3)
	inPlace(t, e, sw, "3", kept3, rev3)
	cycled := 0
	offs := powerOffs(t, sim, ns, kept3)
	for _, name := range kept3 {
		if offs[name] == 0 {
			t.Errorf("phase 3 (memory lowered): %s was kept but never powered off", name)
		}
		cycled += offs[name]
	}
	if held := halfChanged(t, e, sim, set); len(held) > 0 {
		t.Errorf("phase 3: VMs whose vCenter memory differs from their spec at the end: %v", held)
	}
	rep = w.Stop()
	checkBounds(t, bounds, rep, 0)
	mostExisting = max(mostExisting, rep.MostExisting)
	notes = append(notes, fmt.Sprintf("3 (InPlaceIfPossible, %d→%d MiB by power cycles, maxUnavailable %d): 1 VM refused for good, %d at random; %d replaced, %d updated in place, powered off %d times; watched available ≥ %d (bound %d), existing ≤ %d (bound %d)",
		memUpOnly, memDown, down, len(refused3)-len(intersect(refused3, []string{bad3})), len(replaced3), len(kept3), cycled,
		rep.FewestAvailable, bounds.MinAvailable(), rep.MostExisting, bounds.MaxExisting()))

	sr := sw.check(t)
	planted.reported(t, e)
	op.stop()
	if sr.Moves == 0 {
		t.Errorf("the size watch saw no label move: the scenario exercised nothing")
	}
	r := row{name: "inplace-faults", steps: fmt.Sprintf("%d: %d→%d live (IfPossible), →%d live (InPlaceOnly), →%d by power cycles (IfPossible)", n, memStart, memUp, memUpOnly, memDown),
		maxChildren: mostExisting, final: fmt.Sprintf("converged on %d MiB in place, zones within one", memDown)}
	r.injected = strings.Join(append(notes,
		fmt.Sprintf("%d reconfigures refused in all; %d restarts: %s", gate.Injected(), len(restarts), strings.Join(restarts, ", ")),
		"3 foreign objects", "size watch: "+sr.String()), "; ")
	finish(t, e, []vsphere.Config{sim.Config()}, ns, planted, &r, begin)
	return r
}

// startBounds starts an independent watch of set's VirtualMachines
// against the bounds of set's spec (which may be ahead of the server's).
func startBounds(t *seeded, e *testenv.Env, set *vmv1.VirtualMachineReplicaSet) (rollwatch.Bounds, *rollwatch.Watcher) {
	t.Helper()
	bounds, err := rollwatch.BoundsOf(set)
	if err != nil {
		t.Fatal(err)
	}
	w, err := rollwatch.Start(context.Background(), e.Config, set, bounds)
	if err != nil {
		t.Fatal(err)
	}
	return bounds, w
}

// caught waits until held has caught a call.
func caught(t *seeded, e *testenv.Env, ns string, held *vcsim.Held) {
	t.Helper()
	select {
	case <-held.Caught():
	case <-time.After(2 * time.Minute):
		t.Fatalf("no reconfigure of the rollout reached vCenter in 2 minutes%s", unsettled(e, ns)+stacks())
	}
}

// vcenterVM is where a VirtualMachine's VM is in vCenter.
type vcenterVM struct {
	ref     types.ManagedObjectReference
	cluster string
}

// vcenterVMs reads the namespace's VMs in vCenter, by the name of their
// VirtualMachine.
func vcenterVMs(t testing.TB, sim *vcsimtest.Sim, ns string) map[string]vcenterVM {
	t.Helper()
	out := map[string]vcenterVM{}
	err := read(func(ctx context.Context) error {
		clusters, err := vcsim.VMClusters(ctx, sim.Config())
		if err != nil {
			return err
		}
		vc, logout, err := vsphere.Connect(ctx, sim.Config())
		if err != nil {
			return err
		}
		defer func() { _ = logout(context.WithoutCancel(ctx)) }()
		vms, err := vcsim.FolderVMs(ctx, vc, sim.Config(), "name")
		if err != nil {
			return err
		}
		clear(out)
		for _, vm := range vms {
			if name, ok := strings.CutPrefix(vm.Name, ns+"-"); ok {
				out[name] = vcenterVM{ref: vm.Self, cluster: clusters[vm.Name]}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// pick returns the first of names whose VM is in cluster and not in
// not, or failing that the first not in not.
func pick(names []string, where map[string]vcenterVM, cluster string, not []string) string {
	for _, name := range names {
		if where[name].cluster == cluster && !slices.Contains(not, name) {
			return name
		}
	}
	for _, name := range names {
		if !slices.Contains(not, name) {
			return name
		}
	}
	return names[0]
}

// liveNames lists, sorted, the VirtualMachines of l controlled by uid and
// not being deleted.
func liveNames(l []vmv1.VirtualMachine, uid ktypes.UID) []string {
	var out []string
	for i := range l {
		if controllerOf(&l[i]) == uid && l[i].DeletionTimestamp == nil {
			out = append(out, l[i].Name)
		}
	}
	slices.Sort(out)
	return out
}

// intersect lists, sorted, the names in both a and b.
func intersect(a, b []string) []string {
	out := slices.DeleteFunc(slices.Clone(a), func(name string) bool { return !slices.Contains(b, name) })
	slices.Sort(out)
	return out
}

// settleInPlace waits until the set holds n VMs on both sides, all Ready
// and labelled with revision rev (any, when rev is empty), the set
// reporting its rollout complete, and vCenter holding them over the three
// zones' clusters within one of each other; it returns their names.
func settleInPlace(t *seeded, e *testenv.Env, sim *vcsimtest.Sim, set *vmv1.VirtualMachineReplicaSet, rev string, n int) []string {
	t.Helper()
	var st vmcheck.State
	var spread map[string]int
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		st, last = observeAll(e, []vsphere.Config{sim.Config()}, set.Namespace)
		if last != nil || !st.Settled(n) || (rev != "" && (st.Set.Status.UpdateRevision != rev || st.Set.Status.UpdatedReplicas != int32(n))) {
			return false, nil
		}
		if rev != "" {
			var l vmv1.VirtualMachineList
			if last = read(func(ctx context.Context) error { return e.Client.List(ctx, &l, inNamespace(set.Namespace)) }); last != nil || count(l.Items, set.UID, rev, true) != n {
				return false, nil
			}
			c := meta.FindStatusCondition(st.Set.Status.Conditions, kube.ConditionRolledOut)
			if c == nil || c.Reason != kube.ReasonRolloutComplete {
				return false, nil
			}
		}
		last = read(func(ctx context.Context) error {
			var err error
			spread, err = setSpread(ctx, sim, set.Namespace)
			return err
		})
		if last != nil || len(spread) != 3 {
			return false, nil
		}
		lo, hi := n, 0
		for _, k := range spread {
			lo, hi = min(lo, k), max(hi, k)
		}
		return hi-lo <= 1, nil
	})
	if err != nil {
		t.Fatalf("not settled on revision %q with the zones within one in 3 minutes: %v; per cluster %v (last read error: %v)%s", rev, st, spread, last, unsettled(e, set.Namespace)+stacks())
	}
	return st.Live
}

// heldCount reads how many replicas RolledOut says InPlaceOnly holds.
var heldCount = regexp.MustCompile(`(\d+) replicas? on (?:an )?older revisions? cannot be updated in place, and the update method InPlaceOnly replaces none`)

// waitHeld waits until the set, under InPlaceOnly, stands with each of
// its n VMs either labelled with rev and Ready or held: its resize
// refused (Resized False, ResizeFailed, for its spec), still on an
// older revision; the status counting them (updatedReplicas, and
// RolledOut RolloutHeld with the counts), RolledOut naming each of the
// first three (and how many more) with vCenter's refusal. It returns the held VMs, sorted, and the condition's message.
func waitHeld(t *seeded, e *testenv.Env, set *vmv1.VirtualMachineReplicaSet, rev string, n int) ([]string, string) {
	t.Helper()
	var held []string
	var why, message string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := getSet(e, set)
		if err != nil {
			return false, nil
		}
		var vl vmv1.VirtualMachineList
		if err := e.Client.List(ctx, &vl, inNamespace(set.Namespace)); err != nil {
			return false, nil
		}
		l := vl.Items
		held, why = nil, ""
		live, on := liveNames(l, set.UID), count(l, set.UID, rev, true)
		if k := countHeld(l, set.UID, rev, &held); len(live) != n || on+k != n {
			why = fmt.Sprintf("%d live, %d on %s and Ready, %d held", len(live), on, rev, k)
			return false, nil
		}
		c := meta.FindStatusCondition(s.Status.Conditions, kube.ConditionRolledOut)
		if s.Status.ObservedGeneration != s.Generation || c == nil {
			why = "status not current"
			return false, nil
		}
		message = c.Message
		if c.Reason != kube.ReasonRolloutHeld {
			why = "RolledOut " + c.Reason + ": " + c.Message
			return false, nil
		}
		m := heldCount.FindStringSubmatch(c.Message)
		counts := fmt.Sprintf("%d of %d replicas on revision %s, %d available; %d on older revisions", n-len(held), n, rev, n-len(held), len(held))
		if m == nil || m[1] != strconv.Itoa(len(held)) || !strings.HasPrefix(c.Message, counts) || s.Status.UpdatedReplicas != int32(n-len(held)) {
			why = fmt.Sprintf("RolledOut does not count the %d held (%q): %s; updatedReplicas %d", len(held), counts, c.Message, s.Status.UpdatedReplicas)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the set did not stand held under InPlaceOnly in 3 minutes (%s)%s", why, unsettled(e, set.Namespace)+stacks())
	}
	named := 0
	for _, name := range held {
		if strings.Contains(message, name+" (vCenter refused the reconfigure") {
			named++
		}
	}
	if want := min(3, len(held)); named != want || (len(held) > 3) != strings.Contains(message, fmt.Sprintf("and %d more", len(held)-3)) {
		t.Errorf("RolledOut names %d of the %d held VMs %v with vCenter's refusal, want %d (and how many more): %s", named, len(held), held, want, message)
	}
	return held, message
}

// countHeld counts the VirtualMachines of l controlled by uid, not being
// deleted, not labelled with rev, whose resize vCenter refused for their
// spec (Resized False, ResizeFailed), appending their names to held.
func countHeld(l []vmv1.VirtualMachine, uid ktypes.UID, rev string, held *[]string) int {
	k := 0
	for i := range l {
		vm := &l[i]
		c := meta.FindStatusCondition(vm.Status.Conditions, controllers.ConditionResized)
		if controllerOf(vm) != uid || vm.DeletionTimestamp != nil || vm.Labels[kube.RevisionLabel] == rev ||
			c == nil || c.Status != metav1.ConditionFalse || c.Reason != controllers.ReasonResizeFailed || c.ObservedGeneration != vm.Generation {
			continue
		}
		k++
		*held = append(*held, vm.Name)
	}
	slices.Sort(*held)
	return k
}

// checkHeldHardware reads the set's VMs from vCenter
// (rollwatch.ReadHardware) and checks that they are the VMs of names, the
// held ones with memUp, the rest with memUpOnly.
func checkHeldHardware(t *seeded, sim *vcsimtest.Sim, set *vmv1.VirtualMachineReplicaSet, names, held []string) {
	t.Helper()
	var got map[string]rollwatch.Hardware
	if err := read(func(ctx context.Context) error {
		var err error
		got, err = rollwatch.ReadHardware(ctx, sim.Config(), set.Namespace+"-"+setName+"-")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string]rollwatch.Hardware{}
	for _, name := range names {
		mem := int32(memUpOnly)
		if slices.Contains(held, name) {
			mem = memUp
		}
		want[set.Namespace+"-"+name] = rollwatch.Hardware{CPUs: 1, MemoryMiB: mem}
	}
	if !maps.Equal(got, want) {
		t.Errorf("phase 2 (InPlaceOnly): vCenter holds the set's VMs as %v, want %v (held %v)", got, want, held)
	}
}

// halfChanged reads the set's live VirtualMachines and their VMs' memory
// in vCenter (rollwatch.ReadHardware) and returns those whose memory
// differs from their spec, each with its Resized condition's reason. It
// fails on any whose Resized condition does not say why: False, with a
// reason, for its current spec.
func halfChanged(t *seeded, e *testenv.Env, sim *vcsimtest.Sim, set *vmv1.VirtualMachineReplicaSet) map[string]string {
	t.Helper()
	var hw map[string]rollwatch.Hardware
	if err := read(func(ctx context.Context) error {
		var err error
		hw, err = rollwatch.ReadHardware(ctx, sim.Config(), set.Namespace+"-"+setName+"-")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, vm := range vms(t, e, set.Namespace) {
		h, ok := hw[controllers.VSphereName(&vm)]
		if controllerOf(&vm) != set.UID || vm.DeletionTimestamp != nil || !ok || int64(h.MemoryMiB) == vm.Spec.MemoryMiB {
			continue
		}
		c := meta.FindStatusCondition(vm.Status.Conditions, controllers.ConditionResized)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason == "" || c.ObservedGeneration != vm.Generation {
			t.Errorf("%s: vCenter shows %d MiB, its spec asks for %d, and its Resized condition %+v does not say why", vm.Name, h.MemoryMiB, vm.Spec.MemoryMiB, c)
			out[vm.Name] = "unexplained"
			continue
		}
		out[vm.Name] = c.Reason
	}
	return out
}

// fellBack checks, for a phase under InPlaceIfPossible that went from the
// VMs before to those after, its template asking for memory MiB, that
// every VM the watch saw refused a resize to it was replaced, each of
// mustGo (refused for good by the test) among them; it returns the VMs
// replaced.
func fellBack(t *seeded, sw *sizeWatch, phase string, memory int64, before, after, mustGo []string) []string {
	t.Helper()
	refused := sw.refused(memory)
	replaced := slices.DeleteFunc(slices.Clone(before), func(name string) bool { return slices.Contains(after, name) })
	for _, name := range refused {
		if slices.Contains(after, name) {
			t.Errorf("phase %s: %s, whose resize vCenter refused, is still there: the fallback replaces it", phase, name)
		}
	}
	for _, name := range mustGo {
		if !eventually(func() bool { return slices.Contains(sw.refused(memory), name) }) {
			t.Errorf("phase %s: the watch never saw %s refused (ResizeFailed), though vCenter refused its reconfigures", phase, name)
		}
	}
	return replaced
}

// inPlace checks that the watch saw the revision label of each of names
// move to rev (the VM kept its identity: updated in place), and that each
// is annotated as updated in place.
func inPlace(t *seeded, e *testenv.Env, sw *sizeWatch, phase string, names []string, rev string) {
	t.Helper()
	l := vms(t, e, sw.ns)
	for _, name := range names {
		if !eventually(func() bool { return sw.moved(name, rev) }) {
			t.Errorf("phase %s: %s was kept, but the watch never saw its revision label move to %s", phase, name, rev)
		}
		i := slices.IndexFunc(l, func(vm vmv1.VirtualMachine) bool { return vm.Name == name })
		if i < 0 || l[i].Annotations[kube.AnnotationUpdatedInPlace] == "" {
			t.Errorf("phase %s: %s was kept, but is not annotated %s", phase, name, kube.AnnotationUpdatedInPlace)
		}
	}
}

// powerOffs counts, for each of the namespace's VirtualMachines names,
// its VM's power-offs in vCenter, guest shutdowns and hard ones
// (vcsim.PowerOffs); it leaves out those never powered off.
func powerOffs(t *seeded, sim *vcsimtest.Sim, ns string, names []string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, name := range names {
		var guest, hard int
		if err := read(func(ctx context.Context) error {
			var err error
			guest, hard, err = vcsim.PowerOffs(ctx, sim.Config(), ns+"-"+name)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if guest+hard > 0 {
			out[name] = guest + hard
		}
	}
	return out
}

// eventually reports whether ok holds within 10 s, asked every 50 ms: for
// what a watch has surely been sent by then, which it may not have read
// yet.
func eventually(ok func() bool) bool {
	return wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return ok(), nil
	}) == nil
}
