package vsphere_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/replicakit/replicakit/deletionpolicy"
	simfaults "github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
)

// TestSet_HealsInVCenter: a Set of 3 VMs in vCenter, healing with
// restarts first. One guest hangs (a red heartbeat, as the simulator
// plays it). The pass at which its unhealthy window ends resets it in
// vCenter (one ResetVM_Task); as the reset does not bring the guest back,
// the pass at which the start-up window the reset gave it ends replaces
// it: destroyed in vCenter, a new VM cloned, and no second reset. The
// passes take the time as an argument, so each is made at the moment a
// window ends, not slept toward.
func TestSet_HealsInVCenter(t *testing.T) {
	faults, sim, p := startCounted(t)
	ctx := context.Background()
	set := &vmprovider.Set{
		Provider: p,
		Template: vmprovider.Spec{Owner: ownerA, PowerOn: true},
		Policy:   deletionpolicy.Oldest{},
		Names:    naming.Indexed{Base: "heal"},
		Spec:     replicaset.Spec{Remediation: &replicaset.Remediation{Restart: true}},
	}
	at := time.Now()
	pass := func() replicaset.Plan {
		t.Helper()
		plan, _, err := set.Scale(ctx, 3, at)
		if err != nil {
			t.Fatalf("Scale at %v: %v", at, err)
		}
		return plan
	}
	pass()
	at = at.Add(time.Minute)
	if plan := pass(); plan.Health.Unhealthy != 0 {
		t.Fatalf("the VMs just made: health %+v, want none unhealthy", plan.Health)
	}
	if err := simfaults.SetHeartbeat(ctx, sim.Config(), "heal-1", vmprovider.HeartbeatRed); err != nil {
		t.Fatal(err)
	}
	plan := pass()
	if plan.Health.Unhealthy != 1 || plan.Health.NextCheck.IsZero() {
		t.Fatalf("the pass that saw heal-1 hang: health %+v; want 1 unhealthy and a time to look again", plan.Health)
	}

	at = plan.Health.NextCheck
	plan = pass()
	if len(plan.Restart) != 1 || plan.Restart[0].Name != "heal-1" || len(plan.Delete) > 0 {
		t.Fatalf("when its window ended: %v, want heal-1 restarted, nothing deleted", plan)
	}
	if n := faults.Calls()["ResetVM_Task"]; n != 1 {
		t.Fatalf("vCenter saw %d resets, want 1", n)
	}
	if vm, err := p.Get(ctx, "heal-1"); err != nil || vm.Power != vmprovider.PoweredOn || vm.Heartbeat != vmprovider.HeartbeatRed {
		t.Fatalf("heal-1 after the reset: %+v, %v; want it on, its guest still hung", vm, err)
	}

	at = at.Add(replicaset.DefaultStartupWindow - time.Second)
	if plan := pass(); !plan.IsZero() {
		t.Fatalf("a second before the start-up window the reset gave ends: %v, want nothing done", plan)
	}
	at = at.Add(time.Second)
	plan = pass()
	if len(plan.Replace) != 1 || plan.Replace[0].Name != "heal-1" || plan.Create != 1 {
		t.Fatalf("when the start-up window ended: %v, want heal-1 replaced", plan)
	}
	if _, err := p.Get(ctx, "heal-1"); !errors.Is(err, vmprovider.ErrNotFound) {
		t.Errorf("heal-1 after its replacement: %v, want it destroyed in vCenter", err)
	}
	vms, err := p.List(ctx, ownerA.UID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, vm := range vms {
		got = append(got, vm.Name)
		if vm.Power != vmprovider.PoweredOn {
			t.Errorf("%s is %s, want PoweredOn", vm.Name, vm.Power)
		}
	}
	slices.Sort(got)
	if want := []string{"heal-0", "heal-2", "heal-3"}; !slices.Equal(got, want) {
		t.Errorf("VMs in vCenter %v, want %v", got, want)
	}
	if n := faults.Calls()["ResetVM_Task"]; n != 1 {
		t.Errorf("vCenter saw %d resets in all, want 1", n)
	}
}
