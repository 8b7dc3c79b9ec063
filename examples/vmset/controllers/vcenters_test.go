package controllers_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/netcut"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// namesIn returns the names of the namespace's VMs in the vCenter cfg
// reaches, sorted.
func namesIn(ctx context.Context, cfg vsphere.Config, ns string) ([]string, error) {
	where, err := vcsim.VMClusters(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var out []string
	for name := range where {
		if strings.HasPrefix(name, ns+"-") {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// TestVCenters_Partition runs a set of four over two vCenters, zone-a on
// "default" and zone-b on "west", which the operator reaches through a
// link the test cuts while the set scales to six. While west does not
// answer: its two VMs stay as they were, its VirtualMachines say Ready
// Unknown (VCenterUnreachable), the set's status marks zone-b unreachable
// with when west last answered, and one VM (the default surge) stands in
// for them in default, which holds five. Once the link is back, the set
// converges on six, three per vCenter (spec.rebalance), and zone-b
// answers again.
func TestVCenters_Partition(t *testing.T) {
	e := env.Require(t)
	ctx := context.Background()
	simA, simB := vcsimtest.Start(t), vcsimtest.Start(t)
	cfgB, link := vcsimtest.BehindLink(t, simB)
	providers := map[string]*vsphere.Provider{}
	for name, cfg := range map[string]vsphere.Config{"default": simA.Config(), "west": cfgB} {
		p, err := vsphere.New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close(context.Background()) })
		providers[name] = p
	}
	e.StartManager(t, vmcheck.Scheme(), func(mgr ctrl.Manager) error {
		r := controllers.NewVirtualMachineReconcilerOver(providers, "default")
		r.Zones = map[string]vmprovider.Placement{
			"zone-a": {ResourcePool: "/DC0/host/DC0_C0"},
			"zone-b": {ResourcePool: "/DC0/host/DC0_C0", Endpoint: "west"},
		}
		return controllers.Setup(mgr, r)
	}, testenv.OnlyNamespace("vcenters"))
	t.Cleanup(link.Heal) // so that the manager's last calls to west end

	const ns = "vcenters"
	createZonedSet(t, e, ns, 4, "zone-a", "zone-b")
	set := &vmv1.VirtualMachineReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "test-rs"}}
	if err := e.Client.Patch(ctx, set, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"rebalance":true}}`))); err != nil {
		t.Fatal(err)
	}
	counts := func(wantA, wantB int) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			a, errA := namesIn(ctx, simA.Config(), ns)
			b, errB := namesIn(ctx, simB.Config(), ns)
			return errA == nil && errB == nil && len(a) == wantA && len(b) == wantB, nil
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, counts(2, 2)); err != nil {
		t.Fatal("the set of four never held two VMs in each vCenter")
	}
	westBefore, err := namesIn(ctx, simB.Config(), ns)
	if err != nil {
		t.Fatal(err)
	}

	link.Cut(netcut.Drop)
	cut := time.Now()
	if err := e.Client.Patch(ctx, set, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":6}}`))); err != nil {
		t.Fatal(err)
	}
	// Default makes three more (K = 6 - 2 + min(2, surge 1) = 5), never
	// more, while west's two stay as they were.
	most := 0
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		a, err := namesIn(ctx, simA.Config(), ns)
		if err != nil {
			return false, nil
		}
		most = max(most, len(a))
		return len(a) >= 5 && time.Since(cut) > 5*time.Second, nil
	})
	if err != nil || most != 5 {
		_ = e.Client.Get(ctx, client.ObjectKeyFromObject(set), set)
		var vms vmv1.VirtualMachineList
		_ = e.Client.List(ctx, &vms, client.InNamespace(ns))
		t.Fatalf("default held at most %d VMs while west was cut off, want 5 (%v); set status %+v; VirtualMachines %v",
			most, err, set.Status, readiness(vms.Items))
	}
	var zoneB vmv1.ZoneStatus
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(set), set); err != nil {
			return false, nil
		}
		for _, z := range set.Status.Zones {
			if z.Zone == "zone-b" {
				zoneB = z
			}
		}
		c := meta.FindStatusCondition(set.Status.Conditions, kube.ConditionZonesBalanced)
		return zoneB.Unreachable && zoneB.LastSeen != nil && c != nil && c.Reason == kube.ReasonZoneUnreachable, nil
	})
	if err != nil {
		t.Fatalf("the set's status never said zone-b is unreachable: zone %+v, conditions %+v", zoneB, set.Status.Conditions)
	}
	if zoneB.LastSeen.After(cut) {
		t.Errorf("zone-b last seen %v, after the cut at %v", zoneB.LastSeen, cut)
	}
	var vms vmv1.VirtualMachineList
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := e.Client.List(ctx, &vms, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		unknown := 0
		for _, vm := range vms.Items {
			c := meta.FindStatusCondition(vm.Status.Conditions, "Ready")
			if vm.Spec.Zone == "zone-b" && c != nil && c.Status == metav1.ConditionUnknown && c.Reason == controllers.ReasonVCenterUnreachable {
				unknown++
			}
		}
		return unknown == 2, nil
	})
	if err != nil {
		t.Errorf("zone-b's VirtualMachines never both said Ready Unknown, VCenterUnreachable: %v", readiness(vms.Items))
	}
	if west, err := namesIn(ctx, simB.Config(), ns); err != nil || !slices.Equal(west, westBefore) {
		t.Errorf("west held %v when cut off, %v now (%v)", westBefore, west, err)
	}

	link.Heal()
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, counts(3, 3)); err != nil {
		a, _ := namesIn(ctx, simA.Config(), ns)
		b, _ := namesIn(ctx, simB.Config(), ns)
		t.Fatalf("after the link came back: default %v, west %v; want three in each", a, b)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(set), set); err != nil {
			return false, nil
		}
		unreachable := slices.ContainsFunc(set.Status.Zones, func(z vmv1.ZoneStatus) bool { return z.Unreachable })
		return !unreachable && set.Status.ReadyReplicas == 6, nil
	})
	if err != nil {
		t.Errorf("the set never said six ready, every zone answering: %+v", set.Status)
	}
	if west, _ := namesIn(ctx, simB.Config(), ns); !isSubset(westBefore, west) {
		t.Errorf("west's VMs from before the cut %v are not all there after it: %v", westBefore, west)
	}
}

// isSubset reports whether every name of sub is in of.
func isSubset(sub, of []string) bool {
	return !slices.ContainsFunc(sub, func(n string) bool { return !slices.Contains(of, n) })
}

// readiness lists each VirtualMachine's zone and Ready condition.
func readiness(vms []vmv1.VirtualMachine) []string {
	var out []string
	for _, vm := range vms {
		c := meta.FindStatusCondition(vm.Status.Conditions, "Ready")
		if c == nil {
			out = append(out, vm.Name+"@"+vm.Spec.Zone+": none")
			continue
		}
		out = append(out, fmt.Sprintf("%s@%s: %s %s", vm.Name, vm.Spec.Zone, c.Status, c.Reason))
	}
	return out
}

// TestVCenters_UnreachableAtStart starts the operator while west does not
// answer (ConnectLater): default is served at once (the set of four lands
// there, zone-b unreachable and never seen), a VirtualMachine of west's
// zone says Ready Unknown, VCenterUnreachable, and nothing is made there;
// once west answers, the operator connects, makes that VM, and the set
// converges on two per vCenter (spec.rebalance) with every zone answering.
func TestVCenters_UnreachableAtStart(t *testing.T) {
	e := env.Require(t)
	ctx := context.Background()
	simA, simB := vcsimtest.Start(t), vcsimtest.Start(t)
	cfgB, link := vcsimtest.BehindLink(t, simB)
	link.Cut(netcut.Refuse)
	pA, err := vsphere.New(ctx, simA.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pA.Close(context.Background()) })
	var attempts atomic.Int32
	e.StartManager(t, vmcheck.Scheme(), func(mgr ctrl.Manager) error {
		r := controllers.NewVirtualMachineReconcilerOver(map[string]*vsphere.Provider{"default": pA}, "default")
		r.ConnectLater("west", func(ctx context.Context) (*vsphere.Provider, error) {
			attempts.Add(1)
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			return vsphere.New(ctx, cfgB)
		})
		r.Zones = map[string]vmprovider.Placement{
			"zone-a": {ResourcePool: "/DC0/host/DC0_C0"},
			"zone-b": {ResourcePool: "/DC0/host/DC0_C0", Endpoint: "west"},
		}
		return controllers.Setup(mgr, r)
	}, testenv.OnlyNamespace("vcenters-start"))
	t.Cleanup(link.Heal)

	const ns = "vcenters-start"
	createZonedSet(t, e, ns, 4, "zone-a", "zone-b")
	set := &vmv1.VirtualMachineReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "test-rs"}}
	if err := e.Client.Patch(ctx, set, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"rebalance":true}}`))); err != nil {
		t.Fatal(err)
	}
	lone := &vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lone"},
		Spec: vmv1.VirtualMachineSpec{CPUs: 1, MemoryMiB: 512, Zone: "zone-b"}}
	if err := e.Client.Create(ctx, lone); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		a, errA := namesIn(ctx, simA.Config(), ns)
		if errA != nil || len(a) != 4 || e.Client.Get(ctx, client.ObjectKeyFromObject(set), set) != nil ||
			e.Client.Get(ctx, client.ObjectKeyFromObject(lone), lone) != nil {
			return false, nil
		}
		zoneB := slices.IndexFunc(set.Status.Zones, func(z vmv1.ZoneStatus) bool { return z.Zone == "zone-b" })
		c := meta.FindStatusCondition(lone.Status.Conditions, "Ready")
		return zoneB >= 0 && set.Status.Zones[zoneB].Unreachable && set.Status.Zones[zoneB].LastSeen == nil &&
			c != nil && c.Status == metav1.ConditionUnknown && c.Reason == controllers.ReasonVCenterUnreachable, nil
	})
	if err != nil {
		a, _ := namesIn(ctx, simA.Config(), ns)
		t.Fatalf("while west never answered: default held %v (want 4), set zones %+v, lone %+v", a, set.Status.Zones, lone.Status.Conditions)
	}
	if b, err := namesIn(ctx, simB.Config(), ns); err != nil || len(b) != 0 {
		t.Fatalf("west holds %v (%v) before the operator could reach it", b, err)
	}

	link.Heal()
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		a, errA := namesIn(ctx, simA.Config(), ns)
		b, errB := namesIn(ctx, simB.Config(), ns)
		return errA == nil && errB == nil && len(a) == 2 && len(b) == 3 && slices.Contains(b, ns+"-lone"), nil
	})
	if err != nil {
		a, _ := namesIn(ctx, simA.Config(), ns)
		b, _ := namesIn(ctx, simB.Config(), ns)
		t.Fatalf("once west answered: default %v, west %v; want two of the set in each, and %s-lone in west", a, b, ns)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(set), set); err != nil {
			return false, nil
		}
		unreachable := slices.ContainsFunc(set.Status.Zones, func(z vmv1.ZoneStatus) bool { return z.Unreachable })
		return !unreachable && set.Status.ReadyReplicas == 4, nil
	})
	if err != nil {
		t.Errorf("the set never said four ready, every zone answering: %+v", set.Status)
	}
	t.Logf("west connected after %d attempts", attempts.Load())
}
