package controllers_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// zones are the operator's zones, one per cluster of the simulator.
var zones = vcsim.Zones()

// startZoned is start with a third cluster and the operator configured
// with zones.
func startZoned(t *testing.T, ns string) (*testenv.Env, *vcsimtest.Sim) {
	t.Helper()
	sim := vcsimtest.Start(t)
	if err := sim.AddCluster(context.Background(), vcsim.ThirdCluster); err != nil {
		t.Fatal(err)
	}
	return startZonedOn(t, sim, ns), sim
}

// startZonedOn runs the operator, configured with zones, on sim, its
// controllers seeing only namespace ns.
func startZonedOn(t *testing.T, sim *vcsimtest.Sim, ns string) *testenv.Env {
	t.Helper()
	e := env.Require(t)
	p, err := vsphere.New(context.Background(), sim.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	e.StartManager(t, vmcheck.Scheme(), func(mgr ctrl.Manager) error {
		r := controllers.NewVirtualMachineReconciler(p)
		r.Zones = zones
		return controllers.Setup(mgr, r)
	}, testenv.OnlyNamespace(ns))
	return e
}

// createZonedSet creates namespace ns and in it the set test-rs of n
// replicas spread over zones.
func createZonedSet(t *testing.T, e *testenv.Env, ns string, n int, zones ...string) {
	t.Helper()
	createSet(t, e, ns, 0)
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d,"zones":[%s]}}`, n, `"`+strings.Join(zones, `","`)+`"`)
	set := &vmv1.VirtualMachineReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "test-rs"}}
	if err := e.Client.Patch(context.Background(), set, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
}

// waitSpread waits until vCenter holds the namespace's VMs per cluster as
// want says.
func waitSpread(t *testing.T, sim *vcsimtest.Sim, ns string, want map[string]int) {
	t.Helper()
	var got map[string]int
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		got, last = vmcheck.Spread(ctx, sim.Config(), ns)
		return last == nil && maps.Equal(got, want), nil
	})
	if err != nil {
		t.Fatalf("%s: VMs per cluster in vCenter (-want +got):\n%s(last read error: %v)", ns, cmp.Diff(want, got), last)
	}
}

// TestZones spreads a set over three zones, each a cluster: six VMs land
// two per cluster in vCenter, scaling to four leaves 2/1/1, each
// VirtualMachine names its zone, and kubectl shows the spread.
func TestZones(t *testing.T) {
	const ns = "zones"
	e, sim := startZoned(t, ns)
	ctx := context.Background()
	createZonedSet(t, e, ns, 6, "zone-a", "zone-b", "zone-c")
	settle(t, e, sim, ns, 6)
	waitSpread(t, sim, ns, map[string]int{"DC0_C0": 2, "DC0_C1": 2, "DC0_C2": 2})

	if _, err := e.Kubectl(ctx, "scale", "vmreplicaset", "test-rs", "-n", ns, "--replicas=4"); err != nil {
		t.Fatal(err)
	}
	settle(t, e, sim, ns, 4)
	waitSpread(t, sim, ns, map[string]int{"DC0_C0": 2, "DC0_C1": 1, "DC0_C2": 1})

	var vms vmv1.VirtualMachineList
	if err := e.Client.List(ctx, &vms, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	perZone := map[string]int{}
	for _, vm := range vms.Items {
		perZone[vm.Spec.Zone]++
	}
	if diff := cmp.Diff(map[string]int{"zone-a": 2, "zone-b": 1, "zone-c": 1}, perZone); diff != "" {
		t.Errorf("VirtualMachines per spec.zone (-want +got):\n%s", diff)
	}
	var got string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		out, err := e.Kubectl(ctx, "get", "vmreplicaset", "test-rs", "-n", ns, "-o", "wide", "--no-headers")
		got = out
		return err == nil && strings.Contains(out, "zone-a=2 zone-b=1 zone-c=1"), nil
	})
	if err != nil {
		t.Errorf("kubectl get vmrs -o wide: %q, want the ZONES column zone-a=2 zone-b=1 zone-c=1", got)
	}
	if cond := setCondition(t, e, ns, "ZonesBalanced"); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Errorf("ZonesBalanced = %+v, want True", cond)
	}
}

// setCondition reads condition typ of the namespace's set test-rs.
func setCondition(t *testing.T, e *testenv.Env, ns, typ string) *metav1.Condition {
	t.Helper()
	var set vmv1.VirtualMachineReplicaSet
	if err := e.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "test-rs"}, &set); err != nil {
		t.Fatal(err)
	}
	return meta.FindStatusCondition(set.Status.Conditions, typ)
}

// TestZones_Unknown: a set listing a zone the operator has no placement
// for is refused with a condition naming it, and nothing is cloned; a
// VirtualMachine naming one fails with the reason UnknownZone.
func TestZones_Unknown(t *testing.T) {
	const ns = "unknown-zone"
	e, sim := startZoned(t, ns)
	ctx := context.Background()
	createZonedSet(t, e, ns, 2, "zone-a", "zone-x")
	var cond *metav1.Condition
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		cond = setCondition(t, e, ns, "ReplicaFailure")
		return cond != nil && cond.Status == metav1.ConditionTrue, nil
	})
	if err != nil || cond.Reason != "InvalidSpec" || !strings.Contains(cond.Message, `zone "zone-x"`) {
		t.Fatalf("ReplicaFailure = %+v, want True InvalidSpec naming zone-x", cond)
	}
	// Status still says what was asked for (the trial saw "0 of 0").
	if ready := setCondition(t, e, ns, "Ready"); ready == nil || ready.Status != metav1.ConditionFalse || !strings.Contains(ready.Message, "of 2") {
		t.Errorf("Ready = %+v, want False, of 2 replicas", ready)
	}
	if zb := setCondition(t, e, ns, "ZonesBalanced"); zb == nil || zb.Reason != "ReplicaFailure" {
		t.Errorf("ZonesBalanced = %+v, want False ReplicaFailure", zb)
	}

	vm := &vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lost"},
		Spec: vmv1.VirtualMachineSpec{CPUs: 1, MemoryMiB: 512, Zone: "zone-x"}}
	if err := e.Client.Create(ctx, vm); err != nil {
		t.Fatal(err)
	}
	var ready *metav1.Condition
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(vm), vm); err != nil {
			return false, err
		}
		ready = meta.FindStatusCondition(vm.Status.Conditions, "Ready")
		return ready != nil, nil
	})
	if err != nil || ready.Reason != "UnknownZone" || !strings.Contains(ready.Message, "zone-x") {
		t.Fatalf("Ready = %+v, want False UnknownZone naming zone-x", ready)
	}
	st, err := vmcheck.Observe(ctx, e.Client, sim.Config(), ns, "test-rs")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.VCenter) != 0 {
		t.Errorf("vCenter holds %v for a set and a VM in an unknown zone, want nothing", st.VCenter)
	}
}

// TestZones_PlacementGone: a zone whose cluster is not in vCenter (removed,
// renamed) is routed around: its VMs fail with the reason
// ZoneUnavailable, and the set replaces them in the other zones and
// reaches its count.
func TestZones_PlacementGone(t *testing.T) {
	sim := vcsimtest.Start(t) // without vcsim.ThirdCluster: zone-c's cluster is not there
	const ns = "placement-gone"
	e := startZonedOn(t, sim, ns)
	ctx := context.Background()
	createZonedSet(t, e, ns, 3, "zone-a", "zone-b", "zone-c")
	settle(t, e, sim, ns, 3)
	got, err := vmcheck.Spread(ctx, sim.Config(), ns)
	if err != nil {
		t.Fatal(err)
	}
	if got["DC0_C0"]+got["DC0_C1"] != 3 {
		t.Errorf("VMs per cluster %v, want all three in DC0_C0 and DC0_C1", got)
	}
	if zb := setCondition(t, e, ns, "ZonesBalanced"); zb == nil || zb.Reason != "ZoneFailing" || !strings.Contains(zb.Message, "zone-c") {
		t.Errorf("ZonesBalanced = %+v, want False ZoneFailing naming zone-c", zb)
	}
}
