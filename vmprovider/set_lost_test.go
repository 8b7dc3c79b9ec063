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
	"github.com/replicakit/replicakit/vmprovider"
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
	set := &vmprovider.Set{
		Provider: p.e,
		Template: vmprovider.Spec{Owner: owner, PowerOn: true},
		Policy:   deletionpolicy.Random{Seed: 1},
		Spec:     replicaset.Spec{Zones: []string{"a", "b"}, MaxPerPass: 2},
		Zones:    map[string]vmprovider.Placement{"a": {Endpoint: "east"}, "b": {Endpoint: "west"}},
		Names:    naming.Indexed{Base: "v2"},
	}
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
	for i := 0; ; i++ {
		plan, err := pass()
		if err != nil {
			t.Fatalf("healed pass %d: %v", i, err)
		}
		if plan.IsZero() {
			break
		}
		if i > 10 {
			t.Fatalf("not converged after %d healed passes: %v", i, plan)
		}
	}
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
