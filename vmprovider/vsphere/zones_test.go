package vsphere_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
)

// TestSet_ZonesArePlacements spreads a Set over three zones, each a
// cluster in vCenter (a third is made over the API beside the simulator's
// two), and checks where the simulator actually put each VM, through its
// resource pool's owner, on the way up and after a scale-down by zone.
func TestSet_ZonesArePlacements(t *testing.T) {
	sim, p := start(t)
	ctx := context.Background()
	addCluster(t, sim, "DC0_C2")
	owners := map[string]string{"zone-a": "DC0_C0", "zone-b": "DC0_C1", "zone-c": "DC0_C2"}
	s := &vmprovider.Set{
		Provider: p,
		Template: vmprovider.Spec{Owner: ownerA, PowerOn: true},
		Policy:   deletionpolicy.Oldest{},
		Spec:     replicaset.Spec{Zones: []string{"zone-a", "zone-b", "zone-c"}},
		Zones: map[string]vmprovider.Placement{
			"zone-a": {ResourcePool: "/DC0/host/DC0_C0"},
			"zone-b": {ResourcePool: "/DC0/host/DC0_C1"},
			"zone-c": {ResourcePool: "/DC0/host/DC0_C2"},
		},
		Names: naming.Random{Base: "web", Source: rand.NewPCG(3, 4)},
	}
	now := time.Now()
	for _, step := range []struct {
		desired int
		want    map[string]int
	}{
		{6, map[string]int{"DC0_C0": 2, "DC0_C1": 2, "DC0_C2": 2}},
		{4, map[string]int{"DC0_C0": 2, "DC0_C1": 1, "DC0_C2": 1}},
	} {
		for range 4 { // slow start: a few passes
			if _, _, err := s.Scale(ctx, step.desired, now); err != nil {
				t.Fatalf("Scale(%d): %v", step.desired, err)
			}
		}
		vms, err := p.List(ctx, ownerA.UID)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, vm := range vms {
			placed := placedIn(t, sim, vm.Name)
			if placed != owners[vm.Zone] {
				t.Errorf("VM %s of zone %q is in %s, want %s", vm.Name, vm.Zone, placed, owners[vm.Zone])
			}
			got[placed]++
		}
		if diff := cmp.Diff(step.want, got); diff != "" {
			t.Fatalf("%d VMs: per cluster or host in vCenter (-want +got):\n%s", step.desired, diff)
		}
	}
}

// placedIn names the cluster or host owning the resource pool the VM
// called name runs in, as the simulator holds it.
func placedIn(t *testing.T, sim *vcsimtest.Sim, name string) string {
	t.Helper()
	obj := sim.Model.Map().Get(mustRef(t, sim, name)).(*simulator.VirtualMachine)
	pool := sim.Model.Map().Get(*obj.ResourcePool).(*simulator.ResourcePool)
	switch owner := sim.Model.Map().Get(pool.Owner).(type) {
	case *simulator.ClusterComputeResource:
		return owner.Name
	case interface{ Entity() *mo.ManagedEntity }:
		return owner.Entity().Name
	default:
		t.Fatalf("VM %s: pool owner %T", name, owner)
		return ""
	}
}

// addCluster adds a third cluster to the simulator (see vcsim.Sim.AddCluster).
func addCluster(t *testing.T, sim *vcsimtest.Sim, name string) {
	t.Helper()
	if err := sim.AddCluster(context.Background(), name); err != nil {
		t.Fatal(err)
	}
}
