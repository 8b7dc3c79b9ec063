package vmprovider_test

import (
	"context"
	"errors"
	"fmt"
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

// bounded is a provider that checks, after every create and delete and
// before any other operation may run, that the owner's VMs stay within a
// rollout's bounds: at most maxLive VMs exist, and at least minAvailable
// are powered on (the Set's readiness; MinReady is zero, so ready is
// available). It is the independent watcher of the Set's rollouts.
type bounded struct {
	*vmprovidertest.Fake
	owner string

	mu                    sync.Mutex
	maxLive, minAvailable int
	broken                []string
}

func (b *bounded) check(op string) {
	vms, err := b.Fake.List(context.Background(), b.owner)
	if err != nil {
		b.broken = append(b.broken, fmt.Sprintf("after %s: list: %v", op, err))
		return
	}
	on := 0
	for _, vm := range vms {
		if vm.Power == vmprovider.PoweredOn {
			on++
		}
	}
	if len(vms) > b.maxLive || on < b.minAvailable {
		b.broken = append(b.broken, fmt.Sprintf("after %s: %d VMs, %d on; bounds: at most %d, at least %d on", op, len(vms), on, b.maxLive, b.minAvailable))
	}
}

func (b *bounded) Create(ctx context.Context, spec vmprovider.Spec) (vmprovider.VM, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	vm, err := b.Fake.Create(ctx, spec)
	b.check("create " + spec.Name)
	return vm, err
}

func (b *bounded) Delete(ctx context.Context, name, owner string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	err := b.Fake.Delete(ctx, name, owner)
	b.check("delete " + name)
	return err
}

// bounds sets the bounds later operations are checked against.
func (b *bounded) bounds(maxLive, minAvailable int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.maxLive, b.minAvailable = maxLive, minAvailable
}

// revisions counts owner's VMs per recorded revision.
func revisions(t *testing.T, p vmprovider.Provider, owner string) map[string]int {
	t.Helper()
	vms, err := p.List(context.Background(), owner)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, vm := range vms {
		out[vm.Revision]++
	}
	return out
}

// rolloutSet is a Set of owner uid-web over zones a, b and c whose
// creates in a zone fail while down holds it, watched by a bounded
// provider.
func rolloutSet(down *sync.Map, strategy replicaset.Strategy) (*vmprovider.Set, *bounded) {
	fake := &vmprovidertest.Fake{FailZone: func(zone string) error {
		if _, ok := down.Load(zone); ok {
			return errors.New("zone " + zone + " has no capacity")
		}
		return nil
	}}
	p := &bounded{Fake: fake, owner: "uid-web", maxLive: 1 << 30}
	return &vmprovider.Set{
		Provider: p,
		Template: vmprovider.Spec{Owner: vmprovider.Owner{UID: "uid-web"}, Template: "web-a", PowerOn: true},
		Policy:   deletionpolicy.Oldest{},
		Spec:     replicaset.Spec{Zones: []string{"a", "b", "c"}},
		Zones:    map[string]vmprovider.Placement{"a": {}, "b": {}, "c": {}},
		Names:    naming.Random{Base: "web", Source: rand.NewPCG(5, 6)},
		Options:  execute.Options{InitialBatch: 10},
		Rollout:  &strategy,
	}, p
}

// settle runs passes toward desired until one changes nothing, and fails
// the test after limit passes.
func settle(t *testing.T, s *vmprovider.Set, desired, limit int, at time.Time) (passes int) {
	t.Helper()
	for passes = 1; passes <= limit; passes++ {
		plan, res, err := s.Scale(context.Background(), desired, at)
		if err == nil && plan.Create == 0 && len(plan.Delete) == 0 {
			return passes
		}
		if err != nil && len(res.Created)+len(res.Deleted) == 0 && plan.Create+len(plan.Delete) == 0 {
			t.Fatalf("pass %d: %v", passes, err)
		}
	}
	t.Fatalf("not settled after %d passes", limit)
	return limit
}

// TestSet_Rollout rolls a zoned Set of 6 VMs to a new template, 1 surge and
// 0 unavailable, then back to the first with a partition holding half of
// them on the second: every pass keeps the bounds, the VMs end on the
// wanted revision, 2 per zone, and rolling back deletes none of the VMs
// still on the first template.
func TestSet_Rollout(t *testing.T) {
	var down sync.Map
	s, p := rolloutSet(&down, replicaset.Strategy{MaxSurge: replicaset.Count(1)})
	revA := vmprovider.TemplateRevision(s.Template)
	settle(t, s, 6, 10, now)
	if diff := cmp.Diff(map[string]int{revA: 6}, revisions(t, p, "uid-web")); diff != "" {
		t.Fatalf("created on A: VMs per revision (-want +got):\n%s", diff)
	}

	p.bounds(7, 6)
	b := s.Template
	b.Template = "web-b"
	revB := vmprovider.TemplateRevision(b)
	s.SetTemplate(b)
	if passes := settle(t, s, 6, 20, now); passes < 6 {
		t.Errorf("A→B settled in %d passes; with 1 surge it takes one per VM", passes)
	}
	if diff := cmp.Diff(map[string]int{revB: 6}, revisions(t, p, "uid-web")); diff != "" {
		t.Errorf("after A→B: VMs per revision (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"a": 2, "b": 2, "c": 2}, zoneCounts(t, p, "uid-web")); diff != "" {
		t.Errorf("after A→B: VMs per zone (-want +got):\n%s", diff)
	}
	st, err := s.RolloutStatus(context.Background(), 6, now)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(replicaset.RolloutStatus{Updated: 6, UpdatedReady: 6, UpdatedAvailable: 6, Complete: true, Current: revB}, st); diff != "" {
		t.Errorf("RolloutStatus (-want +got):\n%s", diff)
	}

	// Back to A, halfway: Partition keeps 3 VMs on B.
	s.SetRollout(&replicaset.Strategy{MaxSurge: replicaset.Count(1), Partition: replicaset.Count(3)})
	a := b
	a.Template = "web-a"
	s.SetTemplate(a)
	settle(t, s, 6, 20, now)
	if diff := cmp.Diff(map[string]int{revA: 3, revB: 3}, revisions(t, p, "uid-web")); diff != "" {
		t.Errorf("B→A with partition 3: VMs per revision (-want +got):\n%s", diff)
	}
	onA := func() []string {
		vms, _ := p.List(context.Background(), "uid-web")
		var out []string
		for _, vm := range vms {
			if vm.Revision == revA {
				out = append(out, vm.Name)
			}
		}
		return out
	}
	keep := onA()

	// To B again and at once back to A: the VMs on A are updated as they
	// stand, and not one of them is replaced.
	s.SetRollout(&replicaset.Strategy{MaxSurge: replicaset.Count(1)})
	s.SetTemplate(b)
	if _, _, err := s.Scale(context.Background(), 6, now); err != nil {
		t.Fatal(err)
	}
	s.SetTemplate(a)
	settle(t, s, 6, 20, now)
	got := onA()
	for _, name := range keep {
		if !slices.Contains(got, name) {
			t.Errorf("rolling back to A replaced %s, which was on A all along", name)
		}
	}
	if diff := cmp.Diff(map[string]int{revA: 6}, revisions(t, p, "uid-web")); diff != "" {
		t.Errorf("after the rollback: VMs per revision (-want +got):\n%s", diff)
	}
	if len(p.broken) > 0 {
		t.Errorf("the bounds broke %d times; first: %s", len(p.broken), p.broken[0])
	}
}

// TestSet_RolloutZoneRefusesClones rolls 6 VMs while zone b refuses
// clones: b's VMs stay on the old template while the other zones roll,
// within the bounds, and b rolls once it recovers and its backoff ends.
func TestSet_RolloutZoneRefusesClones(t *testing.T) {
	var down sync.Map
	s, p := rolloutSet(&down, replicaset.Strategy{MaxSurge: replicaset.Count(1)})
	settle(t, s, 6, 10, now)
	p.bounds(7, 6)
	down.Store("b", true)
	b := s.Template
	b.Template = "web-b"
	revB := vmprovider.TemplateRevision(b)
	s.SetTemplate(b)
	var plan replicaset.Plan
	for i := range 30 {
		plan, _, _ = s.Scale(context.Background(), 6, now.Add(time.Duration(i)*time.Second))
	}
	vms, _ := p.List(context.Background(), "uid-web")
	byZone := map[string]int{}
	for _, vm := range vms {
		if vm.Revision == revB {
			byZone[vm.Zone]++
		}
	}
	if diff := cmp.Diff(map[string]int{"a": 2, "c": 2}, byZone); diff != "" {
		t.Errorf("with b refusing clones: VMs on B per zone (-want +got):\n%s", diff)
	}
	held := false
	for _, h := range plan.Holds {
		held = held || h.By == replicaset.HoldZoneBackoff
	}
	if !held {
		t.Errorf("the plan does not say that zone b holds the rollout: %+v", plan.Holds)
	}

	down.Delete("b")
	settle(t, s, 6, 20, now.Add(replicaset.DefaultZoneBackoff+time.Minute))
	if diff := cmp.Diff(map[string]int{revB: 6}, revisions(t, p, "uid-web")); diff != "" {
		t.Errorf("after b recovered: VMs per revision (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"a": 2, "b": 2, "c": 2}, zoneCounts(t, p, "uid-web")); diff != "" {
		t.Errorf("after b recovered: VMs per zone (-want +got):\n%s", diff)
	}
	if len(p.broken) > 0 {
		t.Errorf("the bounds broke %d times; first: %s", len(p.broken), p.broken[0])
	}
}

// TestSet_RolloutTurnedOn: VMs made without a Rollout record no revision;
// turning it on replaces none of them but marks each with the Template's
// revision, so that the next change of the Template replaces them all.
func TestSet_RolloutTurnedOn(t *testing.T) {
	var down sync.Map
	s, p := rolloutSet(&down, replicaset.Strategy{})
	s.Rollout = nil
	settle(t, s, 4, 10, now)
	before := names(t, p, "uid-web")
	if diff := cmp.Diff(map[string]int{"": 4}, revisions(t, p, "uid-web")); diff != "" {
		t.Fatalf("without a Rollout: VMs per revision (-want +got):\n%s", diff)
	}

	s.SetRollout(&replicaset.Strategy{MaxSurge: replicaset.Count(1)})
	settle(t, s, 4, 10, now)
	if diff := cmp.Diff(before, names(t, p, "uid-web")); diff != "" {
		t.Errorf("turning the Rollout on replaced VMs (-before +after):\n%s", diff)
	}
	revA := vmprovider.TemplateRevision(s.Template)
	if diff := cmp.Diff(map[string]int{revA: 4}, revisions(t, p, "uid-web")); diff != "" {
		t.Errorf("turning the Rollout on: VMs per revision (-want +got):\n%s", diff)
	}

	b := s.Template
	b.MemoryMiB = 4096
	s.SetTemplate(b)
	settle(t, s, 4, 20, now)
	for _, name := range names(t, p, "uid-web") {
		if slices.Contains(before, name) {
			t.Errorf("VM %s, made before the Rollout, was not replaced by the next template", name)
		}
	}
}

// unmarking is a provider that cannot record a revision on a VM it has:
// its Fake is a field, so Fake's MarkRevision is not promoted.
type unmarking struct{ vmprovider.Provider }

// TestSet_RolloutWithoutMarker: with a provider that cannot mark VMs, the
// Set remembers the revision its VMs without one were on when the Rollout
// was turned on, so a later Template replaces them.
func TestSet_RolloutWithoutMarker(t *testing.T) {
	var down sync.Map
	s, p := rolloutSet(&down, replicaset.Strategy{})
	s.Rollout = nil
	s.Provider = unmarking{p}
	settle(t, s, 3, 10, now)
	before := names(t, p, "uid-web")
	s.SetRollout(&replicaset.Strategy{MaxSurge: replicaset.Count(1)})
	settle(t, s, 3, 10, now)
	if diff := cmp.Diff(before, names(t, p, "uid-web")); diff != "" {
		t.Errorf("turning the Rollout on replaced VMs (-before +after):\n%s", diff)
	}
	b := s.Template
	b.CPUs = 8
	s.SetTemplate(b)
	settle(t, s, 3, 20, now)
	if diff := cmp.Diff(map[string]int{vmprovider.TemplateRevision(b): 3}, revisions(t, p, "uid-web")); diff != "" {
		t.Errorf("after the Template changed: VMs per revision (-want +got):\n%s", diff)
	}
}

// TestSet_SetRolloutCopies: a strategy changed after SetRollout does not
// reach the Set behind its lock.
func TestSet_SetRolloutCopies(t *testing.T) {
	s := &vmprovider.Set{}
	r := &replicaset.Strategy{}
	s.SetRollout(r)
	r.Paused = true
	if s.Rollout == r || s.Rollout.Paused {
		t.Errorf("SetRollout kept the caller's pointer: %+v", s.Rollout)
	}
}

// TestSet_RolloutMarkFails: a VM whose revision cannot be recorded still
// counts as current, and the pass says what failed.
func TestSet_RolloutMarkFails(t *testing.T) {
	var down sync.Map
	s, p := rolloutSet(&down, replicaset.Strategy{})
	s.Rollout = nil
	settle(t, s, 2, 10, now)
	p.Fail = func(op, _ string) error {
		if op == "mark" {
			return errors.New("vCenter said no")
		}
		return nil
	}
	s.SetRollout(&replicaset.Strategy{})
	plan, _, err := s.Scale(context.Background(), 2, now)
	if err == nil {
		t.Fatalf("Scale with every mark failing: no error; plan %v", plan)
	}
	if plan.Create != 0 || len(plan.Delete) != 0 {
		t.Errorf("unmarked VMs were planned for replacement: %v", plan)
	}
}

// TestTemplateRevision: what differs between a set's VMs leaves the
// revision alone; what shapes a VM changes it.
func TestTemplateRevision(t *testing.T) {
	base := vmprovider.Spec{Template: "ubuntu", CPUs: 2, MemoryMiB: 2048, PowerOn: true, Networks: []string{"VM Network"},
		CloudInit: &vmprovider.CloudInit{UserData: "#cloud-config\n"}}
	rev := vmprovider.TemplateRevision(base)
	same := base
	same.Name, same.Owner, same.Zone, same.Revision = "web-1", vmprovider.Owner{UID: "u"}, "zone-a", "x"
	if got := vmprovider.TemplateRevision(same); got != rev {
		t.Errorf("name, owner, zone and revision changed the revision: %s, want %s", got, rev)
	}
	noNets := base
	noNets.Networks = nil
	emptyNets := base
	emptyNets.Networks = []string{}
	if vmprovider.TemplateRevision(noNets) != vmprovider.TemplateRevision(emptyNets) {
		t.Errorf("nil and empty Networks, which mean the same, give different revisions")
	}
	for what, change := range map[string]func(*vmprovider.Spec){
		"template":  func(s *vmprovider.Spec) { s.Template = "ubuntu-2" },
		"CPUs":      func(s *vmprovider.Spec) { s.CPUs = 4 },
		"memory":    func(s *vmprovider.Spec) { s.MemoryMiB = 4096 },
		"power":     func(s *vmprovider.Spec) { s.PowerOn = false },
		"networks":  func(s *vmprovider.Spec) { s.Networks = []string{"VM Network", "DVS"} },
		"user data": func(s *vmprovider.Spec) { s.CloudInit = &vmprovider.CloudInit{UserData: "#!/bin/sh\n"} },
		"placement": func(s *vmprovider.Spec) { s.Placement.Datastore = "ds2" },
	} {
		s := base
		s.Networks = slices.Clone(base.Networks)
		change(&s)
		if vmprovider.TemplateRevision(s) == rev {
			t.Errorf("a change of %s left the revision %s", what, rev)
		}
	}
}
