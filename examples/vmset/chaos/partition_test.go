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
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/netcut"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// partitionZones are the scenario's zones: two clusters of each vCenter.
var partitionZones = map[string]vmprovider.Placement{
	"east-a": {ResourcePool: "/DC0/host/DC0_C0"},
	"east-b": {ResourcePool: "/DC0/host/DC0_C1"},
	"west-a": {ResourcePool: "/DC0/host/DC0_C0", Endpoint: "west"},
	"west-b": {ResourcePool: "/DC0/host/DC0_C1", Endpoint: "west"},
}

// vcenterPartition spreads a set over two vCenters, east and west, and
// cuts west off (its endpoint stops answering: a netcut link dropping
// what it carries) in the middle of a scale-up 4→8, with a clone in
// flight at west (its gate holds it until the cut is in place; the cut
// loses it), and again in the middle of a rollout, bringing it back each
// time. At every moment: no VM name is held twice, west's VMs from
// before the cut are all there when it answers again (nothing was
// destroyed there), live children stay within D + MaxSurge
// (D + 2 × MaxSurge in the rollout), and available VMs never go below
// what the change may take them down to (MaxUnavailable being 0, the
// scale-up's first count, 4, and the rollout's D) less west's unknown
// VMs. At the end: 0 leaked, 0 duplicate, the set at its count on the
// new template, two VMs in each zone.
func vcenterPartition(t *seeded, e *testenv.Env) row {
	begin := time.Now()
	ctx := context.Background()
	ns := namespace(t, e, "chaos-partition")
	// West's gate holds its clones and destroys around each cut: the
	// moment to cut is made, not raced for, and what west holds when cut
	// off is exactly what the test read.
	eastGate, westGate := &vcsim.Faults{}, &vcsim.Faults{}
	east, west := vcsimtest.StartFaulty(t, eastGate), vcsimtest.StartFaulty(t, westGate, vcsim.Credentials("west-admin@vsphere.local", "west-Secr3t-pw"))
	// gates says what each simulator's gate serves, for a failure message:
	// a read that waits long waits behind it.
	gates := func() string {
		var b strings.Builder
		for name, g := range map[string]*vcsim.Faults{"east": eastGate, "west": westGate} {
			m, d := g.Serving()
			if m == "" {
				m = "nothing"
			}
			fmt.Fprintf(&b, "; %s's gate serving %s for %v", name, m, d.Round(time.Millisecond))
		}
		return b.String()
	}
	westCfg, link := vcsimtest.BehindLink(t, west)
	providers := map[string]*vsphere.Provider{}
	for name, cfg := range map[string]vsphere.Config{"east": east.Config(), "west": westCfg} {
		p, err := vsphere.New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close(context.Background()) })
		providers[name] = p
	}
	stop := e.StartManager(t, vmcheck.Scheme(), func(mgr ctrl.Manager) error {
		r := controllers.NewVirtualMachineReconcilerOver(providers, "east")
		r.Zones = partitionZones
		return controllers.Setup(mgr, r)
	}, testenv.OnlyNamespace(ns))
	t.Cleanup(link.Heal) // so that the manager's last calls to west end
	defer stop()

	set := &vmv1.VirtualMachineReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: setName},
		Spec: vmv1.VirtualMachineReplicaSetSpec{
			Replicas:  ptr.To[int32](4),
			Selector:  &vmv1.LabelSelector{MatchLabels: map[string]string{"app": setName}},
			Zones:     slices.Sorted(maps.Keys(partitionZones)),
			Rebalance: true,
			Template: vmv1.VirtualMachineTemplate{
				Metadata: vmv1.TemplateMetadata{Labels: map[string]string{"app": setName}},
				Spec:     vmv1.VirtualMachineSpec{CPUs: 1, MemoryMiB: 256},
			},
		},
	}
	if err := e.Client.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	vcs := []vsphere.Config{east.Config(), west.Config()}
	settleAll := func(n int) {
		t.Helper()
		var st vmcheck.State
		var last error
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
			got, err := observeAll(e, vcs, ns)
			if err != nil {
				last = err
				return false, nil
			}
			st, last = got, nil
			return st.Settled(n), nil
		})
		if err != nil {
			t.Fatalf("not converged on %d over both vCenters in 3 minutes: last read %v (then a read failed: %v%s)%s", n, st, last, gates(), unsettled(e, ns)+stacks())
		}
	}
	settleAll(4)
	w := watchChildren(e, ns, set.UID)
	var steps []string
	// available watches the available VMs through one change and checks
	// them against its floor: what the change may take them down to
	// without a partition (MaxUnavailable is 0: a scale-up's first count,
	// a rollout's D) less the VMs west held when cut off, which are
	// unknown until it answers again.
	var floors []string
	available := func(what string, before int) (stop func(held int)) {
		lowest := watchAvailable(e, ns, set.UID)
		return func(held int) {
			t.Helper()
			low, floor := lowest.stop(), int64(before-held)
			if low < floor {
				t.Errorf("%s: available VMs dropped to %d, below %d (%d less west's %d unknown VMs)", what, low, floor, before, held)
			}
			floors = append(floors, fmt.Sprintf("%s: available ≥ %d (floor %d)", what, low, floor))
		}
	}

	// cutDuring holds west's clones and destroys, makes change, waits
	// until moment (given the hold on clones) says it has come, reads
	// what west holds (nothing changes it while held), cuts west off and
	// drops the held calls (lost in the partition), waits until the set
	// says west's zones are unreachable, checks that west still holds
	// what it held, and heals the link. It returns how many VMs west
	// held when cut off.
	cutDuring := func(what string, change func(), moment func(clones *vcsim.Held) bool) int {
		t.Helper()
		clones, destroys := westGate.Hold("CloneVM_Task"), westGate.Hold("Destroy_Task")
		defer destroys.Release()
		defer clones.Release()
		change()
		if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
			return moment(clones), nil
		}); err != nil {
			t.Fatalf("%s: the moment to cut west never came in 2 minutes (%d clones held at west)%s", what, clones.Count(), unsettled(e, ns)+stacks())
		}
		before, err := readSpread(west.Config(), ns)
		if err != nil {
			t.Fatal(err)
		}
		held := namesOn(t, west.Config(), ns)
		link.Cut(netcut.Drop)
		clones.Drop()
		destroys.Drop()
		cut := time.Now()
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			var s vmv1.VirtualMachineReplicaSet
			if err := e.Client.Get(ctx, client.ObjectKeyFromObject(set), &s); err != nil {
				return false, nil
			}
			away := 0
			for _, z := range s.Status.Zones {
				if z.Unreachable {
					away++
				}
			}
			c := meta.FindStatusCondition(s.Status.Conditions, "ZonesBalanced")
			return away == 2 && c != nil && c.Reason == "ZoneUnreachable", nil
		})
		if err != nil {
			t.Fatalf("%s: the set never said west's zones are unreachable", what)
		}
		detected := time.Since(cut)
		time.Sleep(5 * time.Second) // the partition lasts: the set works around it
		if got := namesOn(t, west.Config(), ns); !slices.Equal(got, held) {
			t.Errorf("%s: west held %v when cut off and %v while cut off", what, held, got)
		}
		link.Heal()
		steps = append(steps, fmt.Sprintf("%s: cut with west at %v and %d of its clones in flight, its zones unreachable in the set's status after %v",
			what, before, clones.Count(), detected.Round(100*time.Millisecond)))
		if got := namesOn(t, west.Config(), ns); !isSubset(held, got) {
			t.Errorf("%s: west's VMs from before the cut %v are not all there after it: %v", what, held, got)
		}
		return len(held)
	}

	// 1. A scale-up 4→8, cut while east and west clone.
	w.bound.Store(9) // D + MaxSurge, the unknown ones included
	checkAvailable := available("scale-up 4→8", 4)
	held := cutDuring("scale-up 4→8", func() {
		patch := client.MergeFrom(set.DeepCopy())
		set.Spec.Replicas = ptr.To[int32](8)
		if err := e.Client.Patch(ctx, set, patch); err != nil {
			t.Fatal(err)
		}
	}, func(clones *vcsim.Held) bool {
		// A clone of the scale-up in flight at west.
		select {
		case <-clones.Caught():
			return true
		default:
			return false
		}
	})
	settleAll(8)
	checkAvailable(held)

	// 2. A rollout onto more memory, cut once one VM is on it. The known
	// VMs' rollout surges over what stands in for the unknown ones:
	// D + 2 × MaxSurge (replicaset.Compute).
	w.bound.Store(10)
	checkAvailable = available("rollout", 8)
	held = cutDuring("rollout", func() {
		patch := client.MergeFrom(set.DeepCopy())
		set.Spec.Template.Spec.MemoryMiB = 512
		if err := e.Client.Patch(ctx, set, patch); err != nil {
			t.Fatal(err)
		}
	}, func(*vcsim.Held) bool {
		// A VirtualMachine on the new template, its VM cloned or not:
		// once there, one stays until the rollout ends.
		var l vmv1.VirtualMachineList
		if err := e.Client.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return false
		}
		return slices.ContainsFunc(l.Items, func(vm vmv1.VirtualMachine) bool { return vm.Spec.MemoryMiB == 512 })
	})
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		var l vmv1.VirtualMachineList
		if err := e.Client.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		on := 0
		for _, vm := range l.Items {
			if vm.Spec.MemoryMiB == 512 && vm.DeletionTimestamp == nil {
				on++
			}
		}
		return on == 8 && len(l.Items) == 8, nil
	})
	if err != nil {
		t.Fatalf("the rollout did not finish after west answered again%s", unsettled(e, ns)+stacks())
	}
	settleAll(8)
	checkAvailable(held)
	// A set settled on 8 VMs may still be moving one between zones:
	// Rebalance makes the VM in the emptiest zone before it deletes the
	// one in the fullest, so a single read after a settle can meet 9 VMs
	// (3/2/2/2, as a CI run once did). The spread is read until it is
	// even, and then the set must be settled on 8 again.
	var spread map[string]int
	var atSettle map[string]int
	var readErr error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		got, err := spreadAll(vcs, ns)
		if readErr = err; err != nil {
			return false, nil
		}
		spread = got
		if atSettle == nil {
			atSettle = got
		}
		return len(got) == 4 && !slices.ContainsFunc(slices.Collect(maps.Values(got)), func(n int) bool { return n != 2 }), nil
	})
	if err != nil {
		// What each vCenter holds by name, beside the set's children: a VM
		// made twice has a name no child has, or one name twice.
		t.Errorf("VMs per vCenter and cluster %v 3 minutes after the set settled on 8 (%v when it did; last read error: %v), want two in each of the four; east holds %v, west %v%s",
			spread, atSettle, readErr, namesOn(t, east.Config(), ns), namesOn(t, west.Config(), ns), unsettled(e, ns))
	}
	if !maps.Equal(spread, atSettle) {
		t.Logf("the set settled on 8 with the VMs spread %v; Rebalance evened them out", atSettle)
	}
	settleAll(8)
	w.stop()
	st, err := observeAll(e, vcs, ns)
	if err != nil {
		t.Fatal(err)
	}
	r := row{name: "vcenter-partition", steps: "4→8 and a rollout, west cut off in each", maxChildren: int(w.max.Load()),
		final: "converged 2/2/2/2 over two vCenters", injected: strings.Join(steps, "; ")}
	for i, name := range st.VCenter {
		if i > 0 && st.VCenter[i-1] == name {
			r.duplicates++
			t.Errorf("VM name %s is held twice", name)
		}
		if !slices.Contains(st.Want, name) {
			r.leaked++
			t.Errorf("leaked vSphere VM %s", name)
		}
	}
	if over := w.over.Load(); over > 0 {
		t.Errorf("a watcher saw %d more live children than desired plus one surge", over)
	}
	r.injected += "; " + strings.Join(floors, "; ")
	if t.Failed() {
		r.final = "FAILED"
	}
	r.took = time.Since(begin)
	return r
}

// spreadAll counts the namespace's VMs per vCenter (its user name) and
// cluster, over every vCenter of vcs.
func spreadAll(vcs []vsphere.Config, ns string) (map[string]int, error) {
	out := map[string]int{}
	for _, cfg := range vcs {
		got, err := readSpread(cfg, ns)
		if err != nil {
			return nil, err
		}
		for cluster, n := range got {
			out[cfg.Username+"/"+cluster] += n
		}
	}
	return out, nil
}

// namesOn returns the names of the namespace's VMs in the vCenter cfg
// reaches, sorted.
func namesOn(t testing.TB, cfg vsphere.Config, ns string) []string {
	t.Helper()
	var all []string
	err := read(func(ctx context.Context) error {
		var err error
		all, err = vcsim.VMNames(ctx, cfg)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	out := slices.DeleteFunc(all, func(n string) bool { return !strings.HasPrefix(n, ns+"-") })
	slices.Sort(out)
	return out
}

// isSubset reports whether every name of sub is in of.
func isSubset(sub, of []string) bool {
	return !slices.ContainsFunc(sub, func(n string) bool { return !slices.Contains(of, n) })
}
