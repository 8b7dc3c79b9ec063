package vmprovider_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/execute"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vmprovidertest"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func names(t interface {
	Helper()
	Fatal(...any)
}, p vmprovider.Provider, owner string) []string {
	t.Helper()
	vms, err := p.List(context.Background(), owner)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, vm := range vms {
		out = append(out, vm.Name)
	}
	return out
}

// TestSet_Story scales one owner's VMs 0→3→1→2→0 with no Kubernetes object,
// beside a foreign VM that must survive.
func TestSet_Story(t *testing.T) {
	fake := &vmprovidertest.Fake{Now: func() time.Time { return now }}
	fake.Add(vmprovider.VM{Name: "test-rs-zzzzz", InstanceUUID: "foreign", Power: vmprovider.PoweredOn})
	owner := vmprovider.Owner{UID: "uid-1", Name: "default/test-rs"}
	set := &vmprovider.Set{
		Provider: fake,
		Template: vmprovider.Spec{Owner: owner, PowerOn: true},
		Policy:   deletionpolicy.Random{Seed: 1},
		Names:    naming.Random{Base: "test-rs", Source: rand.NewPCG(1, 2)},
	}
	var survivor string
	for _, step := range []struct{ desired, create, delete int }{{3, 3, 0}, {1, 0, 2}, {2, 1, 0}, {0, 0, 2}} {
		plan, res, err := set.Scale(context.Background(), step.desired, now)
		if err != nil {
			t.Fatalf("Scale(%d): %v", step.desired, err)
		}
		if len(res.Created) != step.create || len(res.Deleted) != step.delete {
			t.Fatalf("Scale(%d): plan %v, result %+v; want %d created, %d deleted", step.desired, plan, res, step.create, step.delete)
		}
		got := names(t, fake, owner.UID)
		if len(got) != step.desired {
			t.Fatalf("after Scale(%d): VMs %v", step.desired, got)
		}
		switch step.desired {
		case 1:
			survivor = got[0]
		case 2:
			if !slices.Contains(got, survivor) {
				t.Fatalf("after 1→2: VMs %v lost the survivor %s", got, survivor)
			}
		}
	}
	if _, err := fake.Get(context.Background(), "test-rs-zzzzz"); err != nil {
		t.Errorf("the foreign VM is gone: %v", err)
	}
}

// TestSet_ConvergesThroughFailures fails a third of all operations and
// checks that repeated passes reach the desired count and never overshoot.
func TestSet_ConvergesThroughFailures(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	var mu sync.Mutex // the executor calls Fail concurrently
	boom := errors.New("injected")
	fake := &vmprovidertest.Fake{Fail: func(op, _ string) error {
		mu.Lock()
		defer mu.Unlock()
		if op != "list" && rng.IntN(3) == 0 {
			return boom
		}
		return nil
	}}
	set := &vmprovider.Set{
		Provider: fake,
		Template: vmprovider.Spec{Owner: vmprovider.Owner{UID: "uid-2"}, PowerOn: true},
		Policy:   deletionpolicy.Random{Seed: 2},
		Names:    naming.Random{Base: "web", Source: rand.NewPCG(3, 4)},
	}
	for _, desired := range []int{7, 2, 9, 0} {
		for pass := 0; ; pass++ {
			if pass == 50 {
				t.Fatalf("desired %d: not converged after 50 passes", desired)
			}
			plan, _, err := set.Scale(context.Background(), desired, now)
			if err != nil && !errors.Is(err, boom) {
				t.Fatalf("Scale(%d): unexpected error %v", desired, err)
			}
			if n := len(names(t, fake, "uid-2")); n > max(desired, 9) {
				t.Fatalf("overshoot: %d VMs while scaling to %d", n, desired)
			}
			if plan.IsZero() && err == nil {
				break
			}
		}
		if n := len(names(t, fake, "uid-2")); n != desired {
			t.Fatalf("converged at %d VMs, want %d", n, desired)
		}
	}
}

// TestSet_ConcurrentScaleNeverOvershoots runs two Scale(3) calls at once on
// one Set, from no VMs, many times over: each must end with three VMs.
func TestSet_ConcurrentScaleNeverOvershoots(t *testing.T) {
	for round := range 20 {
		fake := &vmprovidertest.Fake{Fail: func(op, _ string) error {
			if op == "create" {
				time.Sleep(time.Millisecond) // a clone takes a while
			}
			return nil
		}}
		set := &vmprovider.Set{
			Provider: fake,
			Template: vmprovider.Spec{Owner: vmprovider.Owner{UID: "uid-3"}, PowerOn: true},
			Policy:   deletionpolicy.Random{Seed: 3},
			Names:    naming.Random{Base: "web", Source: rand.NewPCG(uint64(round), 3)},
		}
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				if _, _, err := set.Scale(context.Background(), 3, now); err != nil {
					t.Errorf("Scale(3): %v", err)
				}
			})
		}
		wg.Wait()
		if got := names(t, fake, "uid-3"); len(got) != 3 {
			t.Fatalf("round %d: two concurrent Scale(3) left %d VMs: %v", round, len(got), got)
		}
	}
}

// TestSet_PlannerOptions: Spec's MaxPerPass bounds each pass, and ordinal
// names let HighestOrdinal delete the highest ordinal (web-10 after web-9,
// not in name order).
func TestSet_PlannerOptions(t *testing.T) {
	fake := &vmprovidertest.Fake{}
	set := &vmprovider.Set{
		Provider: fake,
		Template: vmprovider.Spec{Owner: vmprovider.Owner{UID: "uid-4"}, PowerOn: true},
		Policy:   deletionpolicy.HighestOrdinal{},
		Spec:     replicaset.Spec{MaxPerPass: 4},

		Names: naming.Indexed{Base: "web"},
	}
	var creates []int
	for {
		plan, _, err := set.Scale(context.Background(), 11, now)
		if err != nil {
			t.Fatal(err)
		}
		if plan.IsZero() {
			break
		}
		creates = append(creates, plan.Create)
	}
	if diff := cmp.Diff([]int{4, 4, 3}, creates); diff != "" {
		t.Errorf("creates per pass with MaxPerPass 4 (-want +got):\n%s", diff)
	}
	if _, _, err := set.Scale(context.Background(), 9, now); err != nil {
		t.Fatal(err)
	}
	got := names(t, fake, "uid-4")
	slices.Sort(got)
	want := []string{"web-0", "web-1", "web-2", "web-3", "web-4", "web-5", "web-6", "web-7", "web-8"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after 11→9 with HighestOrdinal (-want +got):\n%s", diff)
	}
}

// zoneCounts counts owner's VMs per zone.
func zoneCounts(t *testing.T, p vmprovider.Provider, owner string) map[string]int {
	t.Helper()
	vms, err := p.List(context.Background(), owner)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, vm := range vms {
		out[vm.Zone]++
	}
	return out
}

// TestSet_Zones spreads a Set over three zones, scales it down by zone,
// routes around a zone whose creates fail (backing off from it for
// ZoneBackoff), and with Rebalance moves VMs back once the zone recovers.
func TestSet_Zones(t *testing.T) {
	ctx := context.Background()
	var down sync.Map // zone -> true while it refuses creates
	fake := &vmprovidertest.Fake{Now: func() time.Time { return now }, FailZone: func(zone string) error {
		if _, ok := down.Load(zone); ok {
			return errors.New("zone " + zone + " is down")
		}
		return nil
	}}
	s := &vmprovider.Set{
		Provider: fake,
		Template: vmprovider.Spec{Owner: vmprovider.Owner{UID: "uid-web"}, PowerOn: true},
		Policy:   deletionpolicy.Oldest{},
		Spec:     replicaset.Spec{Zones: []string{"a", "b", "c"}},
		Zones:    map[string]vmprovider.Placement{"a": {ResourcePool: "pool-a"}, "b": {ResourcePool: "pool-b"}, "c": {ResourcePool: "pool-c"}},
		Names:    naming.Random{Base: "web", Source: rand.NewPCG(1, 2)},
		Options:  execute.Options{InitialBatch: 10},
	}
	scale := func(n int, at time.Time) execute.Result {
		t.Helper()
		_, res, _ := s.Scale(ctx, n, at)
		return res
	}
	want := func(what string, zones map[string]int) {
		t.Helper()
		if diff := cmp.Diff(zones, zoneCounts(t, fake, "uid-web")); diff != "" {
			t.Fatalf("%s: VMs per zone (-want +got):\n%s", what, diff)
		}
	}
	scale(6, now)
	want("0 to 6", map[string]int{"a": 2, "b": 2, "c": 2})
	scale(4, now)
	want("6 to 4", map[string]int{"a": 2, "b": 1, "c": 1})

	down.Store("b", true)
	if res := scale(7, now); !slices.Equal(res.FailedZones, []string{"b"}) {
		t.Fatalf("4 to 7 with b down: FailedZones %v, want [b]", res.FailedZones)
	}
	for range 3 {
		scale(7, now.Add(time.Second))
	}
	want("7 with b down", map[string]int{"a": 3, "b": 1, "c": 3})
	if zs, err := s.ZoneStatus(ctx, now.Add(time.Second)); err != nil || len(zs) != 3 ||
		!zs[1].BackoffUntil.Equal(now.Add(replicaset.DefaultZoneBackoff)) || !zs[0].BackoffUntil.IsZero() {
		t.Fatalf("zone status with b backing off: %+v, %v; want b's BackoffUntil %v", zs, err, now.Add(replicaset.DefaultZoneBackoff))
	}

	// b recovers; after the backoff, Rebalance moves one VM at a time.
	down.Delete("b")
	s.Spec.Rebalance = true
	for i := range 12 {
		scale(7, now.Add(replicaset.DefaultZoneBackoff+time.Duration(i)*time.Second))
	}
	want("7 rebalanced", map[string]int{"a": 3, "b": 2, "c": 2})
	zs, err := s.ZoneStatus(ctx, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]replicaset.ZoneStatus{
		{Zone: "a", Listed: true, Replicas: 3, Ready: 3, Available: 3},
		{Zone: "b", Listed: true, Replicas: 2, Ready: 2, Available: 2},
		{Zone: "c", Listed: true, Replicas: 2, Ready: 2, Available: 2},
	}, zs); diff != "" {
		t.Errorf("ZoneStatus (-want +got):\n%s", diff)
	}

	s.Spec.Zones = append(s.Spec.Zones, "d")
	if _, _, err := s.Scale(ctx, 7, now); !errors.Is(err, vmprovider.ErrInvalidSpec) {
		t.Fatalf("a zone without a placement: %v; want ErrInvalidSpec", err)
	}
}
