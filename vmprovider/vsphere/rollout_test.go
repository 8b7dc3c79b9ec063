package vsphere_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vmware/govmomi/simulator"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// TestSet_RolloutOnVCenter rolls a Set of 4 VMs over three clusters from
// 1 CPU and 1 GiB to 2 CPUs and 2 GiB, one surge VM at a time, and checks
// in the simulator's own inventory that every VM ends with the new
// hardware and revision, 2/1/1 over the clusters as before, and that no
// pass left more than 5 VMs or fewer than 4 powered on.
func TestSet_RolloutOnVCenter(t *testing.T) {
	sim, p := start(t)
	ctx := context.Background()
	addCluster(t, sim, "DC0_C2")
	s := &vmprovider.Set{
		Provider: p,
		Template: vmprovider.Spec{Owner: ownerA, PowerOn: true, CPUs: 1, MemoryMiB: 1024},
		Policy:   deletionpolicy.Oldest{},
		Spec:     replicaset.Spec{Zones: []string{"zone-a", "zone-b", "zone-c"}},
		Zones: map[string]vmprovider.Placement{
			"zone-a": {ResourcePool: "/DC0/host/DC0_C0"},
			"zone-b": {ResourcePool: "/DC0/host/DC0_C1"},
			"zone-c": {ResourcePool: "/DC0/host/DC0_C2"},
		},
		Names:   naming.Random{Base: "web", Source: rand.NewPCG(8, 9)},
		Rollout: &replicaset.Strategy{MaxSurge: replicaset.Count(1)},
	}
	now := time.Now()
	pass := func(what string) (replicaset.Plan, int) {
		t.Helper()
		plan, _, err := s.Scale(ctx, 4, now)
		if err != nil {
			t.Fatalf("%s: Scale: %v", what, err)
		}
		vms, err := p.List(ctx, ownerA.UID)
		if err != nil {
			t.Fatal(err)
		}
		on := 0
		for _, vm := range vms {
			if vm.Power == vmprovider.PoweredOn {
				on++
			}
		}
		if len(vms) > 5 || (on < 4 && what == "rollout") {
			t.Errorf("%s: after a pass %d VMs, %d powered on; want at most 5, at least 4 on", what, len(vms), on)
		}
		return plan, len(vms)
	}
	for range 4 {
		pass("create")
	}
	next := s.Template
	next.CPUs, next.MemoryMiB = 2, 2048
	s.SetTemplate(next)
	want := vmprovider.TemplateRevision(next)
	settled := false
	for range 20 {
		plan, n := pass("rollout")
		if settled = plan.Create == 0 && len(plan.Delete) == 0 && n == 4; settled {
			break
		}
	}
	if !settled {
		t.Fatal("the rollout did not settle in 20 passes")
	}
	vms, err := p.List(ctx, ownerA.UID)
	if err != nil {
		t.Fatal(err)
	}
	perCluster := map[string]int{}
	for _, vm := range vms {
		obj := sim.Model.Map().Get(mustRef(t, sim, vm.Name)).(*simulator.VirtualMachine)
		hw := obj.Config.Hardware
		if hw.NumCPU != 2 || hw.MemoryMB != 2048 || vm.Revision != want {
			t.Errorf("VM %s: %d CPUs, %d MiB, revision %q; want 2, 2048, %q", vm.Name, hw.NumCPU, hw.MemoryMB, vm.Revision, want)
		}
		perCluster[placedIn(t, sim, vm.Name)]++
	}
	if diff := cmp.Diff(map[string]int{"DC0_C0": 2, "DC0_C1": 1, "DC0_C2": 1}, perCluster); diff != "" {
		t.Errorf("after the rollout: VMs per cluster (-want +got):\n%s", diff)
	}
}

// TestMarkRevision records a revision on an owned VM, and refuses a
// foreign one and a missing one.
func TestMarkRevision(t *testing.T) {
	sim, p := start(t)
	ctx := context.Background()
	if _, err := p.Create(ctx, vmprovider.Spec{Name: "web-1", Owner: ownerA}); err != nil {
		t.Fatal(err)
	}
	clone(t, sim, "web-2", map[string]string{vsphere.KeyOwnerUID: "someone-else"})
	if err := p.MarkRevision(ctx, "web-1", ownerA.UID, "rev-1"); err != nil {
		t.Fatalf("MarkRevision(web-1): %v", err)
	}
	if vm, err := p.Get(ctx, "web-1"); err != nil || vm.Revision != "rev-1" {
		t.Errorf("web-1 after MarkRevision: revision %q, %v; want rev-1", vm.Revision, err)
	}
	if err := p.MarkRevision(ctx, "web-2", ownerA.UID, "rev-1"); !errors.Is(err, vmprovider.ErrNotOwned) {
		t.Errorf("MarkRevision of another owner's VM: %v, want ErrNotOwned", err)
	}
	if vm, err := p.Get(ctx, "web-2"); err != nil || vm.Revision != "" {
		t.Errorf("web-2 after a refused MarkRevision: revision %q, %v; want none", vm.Revision, err)
	}
	if err := p.MarkRevision(ctx, "web-3", ownerA.UID, "rev-1"); !errors.Is(err, vmprovider.ErrNotFound) {
		t.Errorf("MarkRevision of a missing VM: %v, want ErrNotFound", err)
	}
}
