package chaos_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"
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

// healPartition spreads a healing set over two vCenters (east, and west
// behind a link the test cuts, as vcenterPartition does) and cuts west
// off; at the cut, one VM in
// each west zone turns red (set on the simulator directly, which the
// operator cannot read while cut). Its windows are shorter than the cut,
// and maxUnhealthy is 50%, so that two red VMs are no storm and, one per
// zone, trip no zone guard: what holds is that the planner takes west's
// VMs for unknown while west is away, and judges them from when it reads
// them again. Small: 4 replicas (one per zone), windows 10 s, cut 18 s;
// large: 8 (two per zone), windows 30 s, cut 75 s. While cut, and after
// the link heals until half the red VMs' window has run (measured from
// when the binding recorded them unhealthy, which must be after the
// heal): west's VirtualMachines are never deleted, west sees no reset,
// clone or destroy, east no reset, no event says anything was remediated,
// and live children stay within replicas + 1 (the VM east stands in for
// the unknown ones with, maxSurge being 1). Then the red VMs turn green:
// the set settles healthy at its count with every VM west held when cut
// off, and west saw no reset, clone or destroy from the cut to the end.
func healPartition(t *seeded, e *testenv.Env) row {
	begin := time.Now()
	ctx := context.Background()
	n, window, cut := 4, 10*time.Second, 18*time.Second
	if large() {
		n, window, cut = 8, 30*time.Second, 75*time.Second
	}
	ns := namespace(t, e, "chaos-heal-partition")
	eastGate, westGate := &vcsim.Faults{}, &vcsim.Faults{}
	east, west := vcsimtest.StartFaulty(t, eastGate), vcsimtest.StartFaulty(t, westGate, vcsim.Credentials("west-admin@vsphere.local", "west-Secr3t-pw"))
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
	planted := plantForeign(t, e, east, ns)
	stop := e.StartManager(t, vmcheck.Scheme(), func(mgr ctrl.Manager) error {
		r := controllers.NewVirtualMachineReconcilerOver(providers, "east")
		r.Zones = partitionZones
		return controllers.Setup(mgr, r)
	}, testenv.OnlyNamespace(ns))
	t.Cleanup(link.Heal) // so that the manager's last calls to west end
	defer stop()

	set := healingSet(ns, int32(n), &vmv1.Remediation{StartupWindow: dur(window), UnhealthyWindow: dur(window),
		MaxUnhealthy: ptr.To(intstr.FromString("50%"))})
	set.Spec.Zones = slices.Sorted(maps.Keys(partitionZones))
	if err := e.Client.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	vcs := []vsphere.Config{east.Config(), west.Config()}
	waitHealed(t, e, vcs, set, n)
	planted.made(t, e)

	// One red VM in each west zone, the first by name.
	var onWest, sick []string
	first := map[string]string{}
	for _, vm := range vms(t, e, ns) {
		if controllerOf(&vm) != set.UID || !strings.HasPrefix(vm.Spec.Zone, "west-") {
			continue
		}
		onWest = append(onWest, vm.Name)
		if f, ok := first[vm.Spec.Zone]; !ok || vm.Name < f {
			first[vm.Spec.Zone] = vm.Name
		}
	}
	slices.Sort(onWest)
	sick = slices.Sorted(maps.Values(first))
	if len(sick) != 2 || len(onWest) != n/2 {
		t.Fatalf("west holds %v, want %d VMs, one or more in each west zone", onWest, n/2)
	}
	held := namesOn(t, west.Config(), ns)
	w := watchChildren(e, ns, set.UID)
	w.bound.Store(int64(n + 1))
	baseEast, baseWest := callsOf(eastGate), callsOf(westGate)
	// check says what went wrong on west, or "".
	check := func() string {
		if c := callsOf(westGate).since(baseWest); c != (vcCalls{}) {
			return "west saw " + c.String()
		}
		if c := callsOf(eastGate).since(baseEast); c.resets > 0 {
			return "east saw " + c.String()
		}
		var l vmv1.VirtualMachineList
		if err := e.Client.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return ""
		}
		there := 0
		for _, vm := range l.Items {
			if !slices.Contains(onWest, vm.Name) {
				continue
			}
			if vm.DeletionTimestamp != nil {
				return fmt.Sprintf("west's VirtualMachine %s is being deleted", vm.Name)
			}
			there++
		}
		if there != len(onWest) {
			return fmt.Sprintf("only %d of west's VirtualMachines %v are there", there, onWest)
		}
		if replacing, restarting, err := remediationEvents(e, ns); err == nil && replacing+restarting > 0 {
			return fmt.Sprintf("events: %d Remediating, %d Restarting", replacing, restarting)
		}
		return ""
	}

	link.Cut(netcut.Drop)
	cutAt := time.Now()
	hang(t, west.Config(), ns, sick, vmprovider.HeartbeatRed)
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := getSet(e, set)
		if err != nil {
			return false, nil
		}
		away := 0
		for _, z := range s.Status.Zones {
			if z.Unreachable {
				away++
			}
		}
		return away == 2, nil
	})
	if err != nil {
		t.Fatalf("the set never said west's zones are unreachable%s", stacks())
	}
	detected := time.Since(cutAt)
	why, polls := holdFor(time.Until(cutAt.Add(cut)), check)
	if why != "" {
		t.Errorf("while west was cut off (%v after the cut): %s", time.Since(cutAt).Round(100*time.Millisecond), why)
	}
	if got := namesOn(t, west.Config(), ns); !slices.Equal(got, held) {
		t.Errorf("west held %v when cut off and %v at the end of the cut", held, got)
	}
	link.Heal()
	healAt := time.Now()

	// The binding records the red VMs unhealthy once west answers, not
	// before: their window runs from then.
	var since time.Time
	for _, name := range sick {
		var h health
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			if why := check(); why != "" {
				return false, fmt.Errorf("%s", why)
			}
			var vm vmv1.VirtualMachine
			if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &vm); err != nil {
				return false, nil
			}
			h = healthOf(&vm)
			return h.Unhealthy && h.Reason == vmprovider.ReasonHeartbeatRed, nil
		})
		if err != nil {
			t.Fatalf("after the heal, %s was not recorded unhealthy (health %+v): %v%s", name, h, err, unsettled(e, ns))
		}
		s, err := time.Parse(time.RFC3339, h.Since)
		if err != nil {
			t.Fatalf("%s unhealthy since %q: %v", name, h.Since, err)
		}
		if s.Before(healAt.Truncate(time.Second)) {
			t.Errorf("%s recorded unhealthy since %v, before the link healed at %v: its window ran while it was unknown", name, s, healAt)
		}
		if s.After(since) {
			since = s
		}
	}
	seen := time.Since(healAt)
	half := time.Until(since.Add(window / 2))
	why, more := holdFor(half, check)
	if why != "" {
		t.Errorf("after the heal, within the red VMs' window: %s", why)
	}
	hang(t, west.Config(), ns, sick, vmprovider.HeartbeatGreen)
	waitHealed(t, e, vcs, set, n)
	if got := namesOn(t, west.Config(), ns); !slices.Equal(got, held) {
		t.Errorf("west held %v when cut off and %v at the end", held, got)
	}
	if why := check(); why != "" {
		t.Errorf("at the end: %s", why)
	}
	eastCalls := callsOf(eastGate).since(baseEast)
	w.stop()
	planted.reported(t, e)
	stop()

	s, _ := getSet(e, set)
	final := "converged healthy, west's VMs all kept"
	if c := meta.FindStatusCondition(s.Status.Conditions, "RemediationAllowed"); c != nil {
		final += ", " + c.Reason
	}
	r := row{name: "heal-partition", steps: fmt.Sprintf("%d over 2 vCenters, west cut %v, windows %v", n, cut, window), maxChildren: int(w.max.Load()), final: final,
		injected: fmt.Sprintf("%d red on west at the cut; its zones unreachable after %v; recorded unhealthy %v after the heal; held %d polls cut, %d after; west: 0 resets, 0 clones, 0 destroys; east: %s",
			len(sick), detected.Round(100*time.Millisecond), seen.Round(100*time.Millisecond), polls, more, eastCalls)}
	if over := w.over.Load(); over > 0 {
		t.Errorf("a watcher saw %d more live children than replicas + 1", over)
	}
	finish(t, e, vcs, ns, planted, &r, begin)
	return r
}
