package vmprovider_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/execute"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vmprovidertest"
)

// TestSet_LostCloneAnswer_Issue33 plays the wedge of issue 33: a Set over
// two vCenters (east holds zone a, west zone b), naming.Indexed names,
// MaxPerPass 2. During Scale(6), west makes the clone v2-3 but its answer
// is lost and west stops answering; later passes plan around west. Once
// west answers again, the Set must converge on 6 VMs with no name on both
// vCenters, where it used to fail every pass with `replica name "v2-3"
// appears twice` and stay at 8 VMs.
func TestSet_LostCloneAnswer_Issue33(t *testing.T) {
	ctx := context.Background()
	p := newPartitioned()
	owner := vmprovider.Owner{UID: "uid-1", Name: "ns/v2"}
	set := twoVCenters(p, owner, "v2")
	at := now
	pass := func() (replicaset.Plan, error) {
		at = at.Add(time.Minute)
		plan, _, err := set.Scale(ctx, 6, at)
		return plan, err
	}

	if _, err := pass(); err != nil {
		t.Fatalf("first pass: %v", err)
	}
	// West makes v2-3, loses the answer and stops answering.
	p.loseNext("west", loss{op: "create", name: "v2-3", cut: true})
	if _, err := pass(); err == nil {
		t.Fatal("the pass whose answer was lost reported no error")
	}
	if got := p.on(t, "west", owner.UID); !slices.Contains(got, "v2-3") {
		t.Fatalf("west holds %v, want v2-3 among them (the clone made, its answer lost)", got)
	}
	for i := range 4 {
		if _, err := pass(); !errors.Is(err, vmprovider.ErrUnreachable) {
			t.Fatalf("pass %d with west cut off: error %v, want ErrUnreachable", i, err)
		}
	}
	if got := p.on(t, "east", owner.UID); slices.Contains(got, "v2-3") {
		t.Errorf("east holds %v: v2-3 was given to a second VM while west could not say it holds one", got)
	}

	p.setCut("west", false)
	untilQuiet(t, pass)
	east, west := p.on(t, "east", owner.UID), p.on(t, "west", owner.UID)
	if len(east)+len(west) != 6 {
		t.Errorf("settled with east %v and west %v, want 6 VMs", east, west)
	}
	for _, name := range east {
		if slices.Contains(west, name) {
			t.Errorf("%s is on both vCenters (east %v, west %v)", name, east, west)
		}
	}
	if st, err := set.Status(ctx, at); err != nil || st.Replicas != 6 {
		t.Errorf("Status = %+v, %v; want 6 replicas and no error", st, err)
	}
}

// TestSet_DuplicateNameIsTwoReplicas: a person copies one of a Set's VMs,
// name and mark, onto the other vCenter. The Set keeps planning: the two
// are two replicas, the pass says so (ErrDuplicateName, in Scale's error
// and Status's), and the excess is the newer copy (deletionpolicy.Newest),
// destroyed on its own vCenter while the original stays untouched.
func TestSet_DuplicateNameIsTwoReplicas(t *testing.T) {
	ctx := context.Background()
	p := newPartitioned()
	owner := vmprovider.Owner{UID: "uid-1", Name: "ns/web"}
	set := &vmprovider.Set{
		Provider: p.e,
		Template: vmprovider.Spec{Owner: owner, PowerOn: true},
		Policy:   deletionpolicy.Newest{},
		Spec:     replicaset.Spec{Zones: []string{"a", "c"}},
		Zones:    map[string]vmprovider.Placement{"a": {Endpoint: "east"}, "c": {Endpoint: "west"}},
		Names:    naming.Indexed{Base: "web"},
	}
	if _, _, err := set.Scale(ctx, 3, now); err != nil {
		t.Fatal(err)
	}
	orig, err := p.fakes["east"].Get(ctx, "web-0")
	if err != nil {
		t.Fatalf("web-0 is not on east: %v", err)
	}
	copied := orig
	copied.InstanceUUID, copied.Zone, copied.CreatedAt = "copy-1", "c", now.Add(time.Hour)
	p.fakes["west"].Add(copied)

	st, err := set.Status(ctx, now)
	if !errors.Is(err, vmprovider.ErrDuplicateName) || st.Replicas != 4 {
		t.Errorf("Status with web-0 on both vCenters = %+v, %v; want 4 replicas and ErrDuplicateName", st, err)
	}
	plan, _, err := set.Scale(ctx, 3, now)
	if !errors.Is(err, vmprovider.ErrDuplicateName) || errors.Is(err, replicaset.ErrInvalidReplica) {
		t.Errorf("Scale with web-0 on both vCenters: %v, want ErrDuplicateName and no ErrInvalidReplica", err)
	}
	if len(plan.Delete) != 1 || plan.Delete[0].Name != "web-0@west" {
		t.Errorf("plan %v, want the copy on west (web-0@west) deleted", plan)
	}
	if _, err := p.fakes["west"].Get(ctx, "web-0"); !errors.Is(err, vmprovider.ErrNotFound) {
		t.Errorf("the copy on west is still there: %v", err)
	}
	if vm, err := p.fakes["east"].Get(ctx, "web-0"); err != nil || vm.InstanceUUID != orig.InstanceUUID {
		t.Errorf("web-0 on east = %+v, %v; want the original %s kept", vm, err, orig.InstanceUUID)
	}
	plan, _, err = set.Scale(ctx, 3, now)
	if err != nil || !plan.IsZero() {
		t.Errorf("pass after: plan %v, %v; want nothing to do", plan, err)
	}
	if st, err := set.Status(ctx, now); err != nil || st.Replicas != 3 {
		t.Errorf("Status = %+v, %v; want 3 replicas and no error", st, err)
	}
}

// TestSet_StatusReportsRefusal: while Scale refuses to plan (here a zone
// with no placement), Status, RolloutStatus and ZoneStatus say why
// (ErrRefused with the cause), where they used to report no error; once
// a Scale plans again they stop.
func TestSet_StatusReportsRefusal(t *testing.T) {
	ctx := context.Background()
	owner := vmprovider.Owner{UID: "uid-1", Name: "ns/web"}
	set := &vmprovider.Set{
		Provider: &vmprovidertest.Fake{Now: func() time.Time { return now }},
		Template: vmprovider.Spec{Owner: owner, PowerOn: true},
		Policy:   deletionpolicy.Oldest{},
		Spec:     replicaset.Spec{Zones: []string{"a", "b"}},
		Zones:    map[string]vmprovider.Placement{"a": {}},
		Names:    naming.Indexed{Base: "web"},
	}
	if _, err := set.Status(ctx, now); err != nil {
		t.Errorf("Status before any Scale: %v, want none (nothing refused yet)", err)
	}
	if _, _, err := set.Scale(ctx, 2, now); !errors.Is(err, vmprovider.ErrInvalidSpec) {
		t.Fatalf("Scale with zone b unplaced: %v, want ErrInvalidSpec", err)
	}
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, vmprovider.ErrRefused) || !errors.Is(err, vmprovider.ErrInvalidSpec) {
			t.Errorf("%s while Scale refuses: %v, want ErrRefused and the cause, ErrInvalidSpec", what, err)
		}
	}
	_, err := set.Status(ctx, now)
	refused("Status", err)
	_, err = set.RolloutStatus(ctx, 2, now)
	refused("RolloutStatus", err)
	_, err = set.ZoneStatus(ctx, now)
	refused("ZoneStatus", err)

	set.Zones["b"] = vmprovider.Placement{}
	if _, _, err := set.Scale(ctx, 2, now); err != nil {
		t.Fatal(err)
	}
	if st, err := set.Status(ctx, now); err != nil || st.Replicas != 2 {
		t.Errorf("Status once Scale plans = %+v, %v; want 2 replicas, no error", st, err)
	}
}

// TestSet_LostCloneStillRunning: a clone west has not finished when the
// Set's create gives up on it and west stops answering (the client timed
// out; vCenter goes on cloning). When west answers again its List does not
// show the VM yet, and the Set makes another in its stead, but not under
// that name: the clone ends a pass later, and its VM must not share a
// name with one the Set made meanwhile. The Set then scales the excess
// down, with no name held twice.
func TestSet_LostCloneStillRunning(t *testing.T) {
	ctx := context.Background()
	p := newPartitioned()
	owner := vmprovider.Owner{UID: "uid-1", Name: "ns/v"}
	set := twoVCenters(p, owner, "v")
	at := now
	pass := func() (replicaset.Plan, error) {
		at = at.Add(time.Minute)
		plan, _, err := set.Scale(ctx, 4, at)
		return plan, err
	}
	if _, err := pass(); err != nil {
		t.Fatalf("first pass: %v", err)
	}
	// West's next create times out before it answers, the clone not done,
	// and west stops answering.
	p.loseNext("west", loss{op: "create", cut: true, before: true})
	_, err := pass()
	var op *execute.OpError
	if !errors.As(err, &op) || op.Op != execute.OpCreate {
		t.Fatalf("the pass whose create timed out: %v, want a failed create", err)
	}
	lost := op.Name
	if got := p.on(t, "west", owner.UID); slices.Contains(got, lost) {
		t.Fatalf("west holds %v: the clone of %s was to be still running", got, lost)
	}

	// West answers again at once: no pass stood a VM in for the lost one.
	p.setCut("west", false)
	for i := range 2 {
		if _, err := pass(); err != nil {
			t.Fatalf("healed pass %d: %v", i, err)
		}
		east, west := p.on(t, "east", owner.UID), p.on(t, "west", owner.UID)
		if slices.Contains(east, lost) || slices.Contains(west, lost) {
			t.Fatalf("healed pass %d gave %s, whose clone may still end, to a new VM (east %v, west %v)", i, lost, east, west)
		}
	}

	// The clone ends.
	vms, err := p.fakes["west"].List(ctx, owner.UID)
	if err != nil || len(vms) == 0 {
		t.Fatalf("west holds %v (%v), want a VM to copy the clone from", vms, err)
	}
	clone := vms[0]
	clone.Name, clone.InstanceUUID, clone.CreatedAt = lost, "late-clone", at
	p.fakes["west"].Add(clone)

	untilQuiet(t, pass)
	east, west := p.on(t, "east", owner.UID), p.on(t, "west", owner.UID)
	all := append(slices.Clone(east), west...)
	slices.Sort(all)
	if len(all) != 4 || len(slices.Compact(slices.Clone(all))) != 4 {
		t.Errorf("settled with east %v and west %v, want 4 VMs of 4 names", east, west)
	}
}
