package vmprovider_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
)

// TestSet_HealNothingInUnreachableEndpoint: over two endpoints, a VM on
// west hangs and west stops answering. For an hour nothing is asked of
// west, while a VM that hangs on east is reset. When west answers again,
// with its VM still hung, the unhealthy window runs from then: the VM is
// reset when it ends, not at once.
func TestSet_HealNothingInUnreachableEndpoint(t *testing.T) {
	p, c := clockedPartition()
	owner := vmprovider.Owner{UID: "uid-part"}
	s := twoVCenters(p, owner, "web")
	s.Spec.Remediation = &replicaset.Remediation{Restart: true}
	pass := func() replicaset.Plan {
		plan, _, err := s.Scale(context.Background(), 4, c.t)
		if err != nil && !errors.Is(err, vmprovider.ErrUnreachable) {
			t.Fatalf("Scale at +%v: %v", c.t.Sub(now), err)
		}
		return plan
	}
	for range 3 { // two creates a pass (MaxPerPass)
		pass()
	}
	west := p.on(t, "west", owner.UID)
	east := p.on(t, "east", owner.UID)
	if len(west) != 2 || len(east) != 2 {
		t.Fatalf("VMs on west %v, east %v; want 2 each", west, east)
	}
	c.t = c.t.Add(time.Minute)
	pass()
	if err := p.fakes["west"].SetHeartbeat(west[0], vmprovider.HeartbeatRed); err != nil {
		t.Fatal(err)
	}
	pass() // sees it hang
	p.setCut("west", true)
	if err := p.fakes["east"].SetHeartbeat(east[0], vmprovider.HeartbeatRed); err != nil {
		t.Fatal(err)
	}
	for end := c.t.Add(time.Hour); c.t.Before(end); c.t = c.t.Add(30 * time.Second) {
		plan := pass()
		for _, r := range append(slices.Clone(plan.Restart), plan.Replace...) {
			if slices.Contains(west, r.Name) {
				t.Fatalf("at +%v, west cut off: %s remediated: %v", c.t.Sub(now), r.Name, plan)
			}
		}
	}
	if len(p.changes) > 0 {
		t.Errorf("changes asked of west while it was cut off: %v", p.changes)
	}
	if diff := cmp.Diff(west, p.on(t, "west", owner.UID)); diff != "" {
		t.Errorf("west's VMs changed while it was cut off (-before +after):\n%s", diff)
	}
	if got := p.fakes["west"].Resets(); len(got) > 0 {
		t.Errorf("west reset %v", got)
	}
	if got := p.fakes["east"].Resets(); !slices.Equal(got, east[:1]) {
		t.Errorf("east reset %v, want %v: the hung VM there healed meanwhile", got, east[:1])
	}

	p.setCut("west", false)
	back := c.t
	for ; c.t.Before(back.Add(replicaset.DefaultUnhealthyWindow)); c.t = c.t.Add(30 * time.Second) {
		if plan := pass(); slices.ContainsFunc(append(plan.Restart, plan.Replace...), func(r replicaset.Replica) bool { return r.Name == west[0] }) {
			t.Fatalf("%v after west answered again: %s remediated before its window ran from then: %v", c.t.Sub(back), west[0], plan)
		}
	}
	pass()
	if got := p.fakes["west"].Resets(); !slices.Equal(got, west[:1]) {
		t.Errorf("once the window ran from west's return, west reset %v, want %v", got, west[:1])
	}
}

// TestSet_HealLostCreateStartsWhenSeen: a create on west makes its VM
// but the answer is lost, and west stops answering for 20 minutes; its
// guest hangs meanwhile. When west answers again, the Set sees the VM for
// the first time, booted 20 minutes before: its start-up window runs from
// then, not from the boot the Set never saw, so it is restarted when that
// window ends, not at once.
func TestSet_HealLostCreateStartsWhenSeen(t *testing.T) {
	p, c := clockedPartition()
	owner := vmprovider.Owner{UID: "uid-lost"}
	s := twoVCenters(p, owner, "web")
	rm := &replicaset.Remediation{Restart: true, StartupWindow: 5 * time.Minute}
	s.Spec.Remediation = rm
	pass := func() replicaset.Plan {
		plan, _, err := s.Scale(context.Background(), 2, c.t)
		if err != nil && !errors.Is(err, vmprovider.ErrUnreachable) && !p.isCut("west") {
			t.Fatalf("Scale at +%v: %v", c.t.Sub(now), err)
		}
		return plan
	}
	p.loseNext("west", loss{op: "create", cut: true})
	pass()
	lost := p.on(t, "west", owner.UID)
	if len(lost) != 1 || !p.isCut("west") {
		t.Fatalf("west holds %v, cut off %v; want the VM whose create lost its answer, west cut off", lost, p.isCut("west"))
	}
	if err := p.fakes["west"].SetHeartbeat(lost[0], vmprovider.HeartbeatRed); err != nil {
		t.Fatal(err)
	}
	for end := c.t.Add(20 * time.Minute); c.t.Before(end); {
		c.t = c.t.Add(30 * time.Second)
		pass()
	}
	p.setCut("west", false)
	back := c.t.Add(30 * time.Second)
	for c.t = back; c.t.Before(back.Add(rm.StartupWindow)); c.t = c.t.Add(30 * time.Second) {
		plan := pass()
		if slices.Contains(replicaNames(append(plan.Restart, plan.Replace...)), lost[0]) || len(p.fakes["west"].Resets()) > 0 {
			t.Fatalf("%v after west answered: %s remediated before its start-up window ran from then: %v", c.t.Sub(back), lost[0], plan)
		}
	}
	plan := pass()
	if got := p.fakes["west"].Resets(); !slices.Equal(got, lost) {
		t.Errorf("once its start-up window ran from west's return: west reset %v, want %v (plan %v)", got, lost, plan)
	}
}

// clockedPartition is newPartitioned with every endpoint's fake on one
// clock, which starts at now.
func clockedPartition() (*partitioned, *clock) {
	p := newPartitioned()
	c := &clock{now}
	for _, f := range p.fakes {
		f.Now = c.now
	}
	return p, c
}
