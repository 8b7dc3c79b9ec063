package vsphere_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replicakit/replicakit/deletionpolicy"
	simfaults "github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
)

// The Set's in-place rollouts on the simulator, which changes a VM's
// size only as vCenter would (vcsim.Hotplug): memory raised live only
// with hot-add on, lowered only while the VM is off.

// inPlaceSet is a Set of ownerA's VMs on p, named web-0, web-1 and so on,
// of 1 CPU and memoryMiB MiB with memory hot-add on, rolling under
// strategy.
func inPlaceSet(p vmprovider.Provider, memoryMiB int64, strategy replicaset.Strategy) *vmprovider.Set {
	return &vmprovider.Set{
		Provider: p,
		Template: vmprovider.Spec{Owner: ownerA, PowerOn: true, CPUs: 1, MemoryMiB: memoryMiB, MemoryHotAdd: true},
		Policy:   deletionpolicy.Oldest{},
		Names:    naming.Indexed{Base: "web"},
		Rollout:  &strategy,
	}
}

// grow runs passes until s has n VMs.
func grow(t *testing.T, s *vmprovider.Set, p vmprovider.Provider, n int) {
	t.Helper()
	for range 10 {
		if _, _, err := s.Scale(context.Background(), n, time.Now()); err != nil {
			t.Fatalf("Scale(%d): %v", n, err)
		}
		if len(fleet(t, p)) == n {
			return
		}
	}
	t.Fatalf("no %d VMs after 10 passes", n)
}

// vmState is what the in-place tests check of a VM, as vCenter reports it.
type vmState struct {
	UUID                   string
	Power                  vmprovider.PowerState
	MemoryMiB              int64
	Revision, BaseRevision string
}

// fleet returns ownerA's VMs as vCenter reports them, by name.
func fleet(t *testing.T, p vmprovider.Provider) map[string]vmState {
	t.Helper()
	vms, err := p.List(context.Background(), ownerA.UID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]vmState{}
	for _, vm := range vms {
		out[vm.Name] = vmState{vm.InstanceUUID, vm.Power, vm.MemoryMiB, vm.Revision, vm.BaseRevision}
	}
	return out
}

// resized returns before with every VM at memoryMiB and revision, as an
// in-place update leaves it.
func resized(before map[string]vmState, memoryMiB int64, revision string) map[string]vmState {
	out := map[string]vmState{}
	for name, st := range before {
		st.MemoryMiB, st.Revision = memoryMiB, revision
		out[name] = st
	}
	return out
}

// powerOffs returns how many times vCenter stopped each VM, guest
// shutdowns and power-offs together, by name.
func powerOffs(t *testing.T, sim *vcsimtest.Sim, names map[string]vmState) map[string]int {
	t.Helper()
	out := map[string]int{}
	for name := range names {
		guest, hard, err := simfaults.PowerOffs(context.Background(), sim.Config(), name)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = guest + hard
	}
	return out
}

func updated(p replicaset.Plan) (live, cycled int) {
	for _, u := range p.Update {
		if u.PowerCycle {
			cycled++
		} else {
			live++
		}
	}
	return live, cycled
}

// TestSet_InPlaceLiveOnVCenter rolls a Set of 3 VMs with memory hot-add
// from 512 to 1024 MiB: one pass changes all three where they run,
// creating and deleting nothing; vCenter reports each with its instance
// UUID, the new memory and the new revision, and never stopped one.
func TestSet_InPlaceLiveOnVCenter(t *testing.T) {
	sim, p := start(t)
	ctx := context.Background()
	s := inPlaceSet(p, 512, replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible})
	grow(t, s, p, 3)
	before := fleet(t, p)
	base := vmprovider.BaseRevision(s.Template)
	for name, st := range before {
		if st.BaseRevision != base {
			t.Fatalf("%s made with base revision %q, want the Template's, %q", name, st.BaseRevision, base)
		}
	}
	next := s.Template
	next.MemoryMiB = 1024
	s.SetTemplate(next)
	rev := vmprovider.TemplateRevision(next)
	plan, _, err := s.Scale(ctx, 3, time.Now())
	if err != nil {
		t.Fatalf("Scale: %v", err)
	}
	if live, cycled := updated(plan); live != 3 || cycled != 0 || plan.Create != 0 || len(plan.Delete) != 0 {
		t.Fatalf("1024 MiB: %v; want 3 live updates and nothing else", plan)
	}
	if diff := cmp.Diff(resized(before, 1024, rev), fleet(t, p)); diff != "" {
		t.Errorf("VMs after the pass (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"web-0": 0, "web-1": 0, "web-2": 0}, powerOffs(t, sim, before)); diff != "" {
		t.Errorf("vCenter's power-off events (-want +got):\n%s", diff)
	}
	if plan, _, err := s.Scale(ctx, 3, time.Now()); err != nil || !plan.IsZero() {
		t.Errorf("the pass after: %v, %v; want nothing to do", plan, err)
	}
	st, err := s.RolloutStatus(ctx, 3, time.Now())
	if err != nil || !st.Complete || st.Updated != 3 || st.Current != rev {
		t.Errorf("RolloutStatus: %+v, %v; want complete, 3 updated", st, err)
	}
}

// TestSet_InPlacePowerCyclesOneAtATime lowers the memory of 3 VMs with
// MaxUnavailable 1 and no surge: a decrease needs each VM off, so each
// pass power-cycles one, never two at once (the power-on of each cycle is
// held while the test counts the VMs off), and each VM keeps its UUID and
// was stopped once.
func TestSet_InPlacePowerCyclesOneAtATime(t *testing.T) {
	faults, sim, p := startCounted(t)
	ctx := context.Background()
	s := inPlaceSet(p, 1024, replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible,
		MaxUnavailable: replicaset.Count(1), MaxSurge: replicaset.Count(0)})
	grow(t, s, p, 3)
	before := fleet(t, p)
	next := s.Template
	next.MemoryMiB = 512
	s.SetTemplate(next)
	rev := vmprovider.TemplateRevision(next)
	for pass := range 3 {
		held := faults.Hold("PowerOnVM_Task")
		type result struct {
			plan replicaset.Plan
			err  error
		}
		done := make(chan result, 1)
		go func() {
			plan, _, err := s.Scale(ctx, 3, time.Now())
			done <- result{plan, err}
		}()
		select {
		case <-held.Caught():
		case r := <-done:
			held.Release()
			t.Fatalf("pass %d ended without powering a VM on: %v, %v", pass, r.plan, r.err)
		}
		off := 0
		for _, st := range fleet(t, p) {
			if st.Power != vmprovider.PoweredOn {
				off++
			}
		}
		held.Release()
		r := <-done
		if r.err != nil {
			t.Fatalf("pass %d: %v", pass, r.err)
		}
		if live, cycled := updated(r.plan); off != 1 || live != 0 || cycled != 1 || r.plan.Create+len(r.plan.Delete) > 0 {
			t.Fatalf("pass %d: %v, %d VMs off during it; want one power cycle, one VM off", pass, r.plan, off)
		}
	}
	if diff := cmp.Diff(resized(before, 512, rev), fleet(t, p)); diff != "" {
		t.Errorf("VMs after 3 passes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"web-0": 1, "web-1": 1, "web-2": 1}, powerOffs(t, sim, before)); diff != "" {
		t.Errorf("vCenter's power-off events (-want +got):\n%s", diff)
	}
}

// TestSet_InPlaceOnlyHoldsOnVCenter: under InPlaceOnly with MaxUnavailable
// 0, a decrease, which needs the VMs off, is made nowhere: no VM is
// changed, replaced or stopped, and the plan's hold says why, naming the
// change. MaxUnavailable 1 then lets the power cycles go on.
func TestSet_InPlaceOnlyHoldsOnVCenter(t *testing.T) {
	faults, _, p := startCounted(t)
	ctx := context.Background()
	s := inPlaceSet(p, 1024, replicaset.Strategy{Method: replicaset.UpdateInPlaceOnly, MaxUnavailable: replicaset.Count(0)})
	grow(t, s, p, 2)
	before := fleet(t, p)
	next := s.Template
	next.MemoryMiB = 512
	s.SetTemplate(next)
	calls := faults.Calls()
	for range 2 {
		plan, _, err := s.Scale(ctx, 2, time.Now())
		if err != nil {
			t.Fatalf("Scale: %v", err)
		}
		var why string
		for _, h := range plan.Holds {
			if h.By == replicaset.HoldInPlaceOnly {
				why = h.Reason
			}
		}
		if !plan.IsZero() || !strings.Contains(why, "memory lowered from 1024 to 512 MiB needs the VM off") || !strings.Contains(why, "MaxUnavailable 0") {
			t.Fatalf("512 MiB under InPlaceOnly, MaxUnavailable 0: %v, hold %q; want nothing done, held for the power cycle", plan, why)
		}
	}
	if diff := cmp.Diff(before, fleet(t, p)); diff != "" {
		t.Errorf("VMs while held (-before +after):\n%s", diff)
	}
	after := faults.Calls()
	for _, method := range []string{"ReconfigVM_Task", "PowerOffVM_Task", "CloneVM_Task", "Destroy_Task"} {
		if n := after[method] - calls[method]; n != 0 {
			t.Errorf("%d calls of %s while held, want none", n, method)
		}
	}
	s.SetRollout(&replicaset.Strategy{Method: replicaset.UpdateInPlaceOnly, MaxUnavailable: replicaset.Count(1)})
	plan, _, err := s.Scale(ctx, 2, time.Now())
	if live, cycled := updated(plan); err != nil || live != 0 || cycled != 1 {
		t.Errorf("with MaxUnavailable 1: %v, %v; want one power cycle", plan, err)
	}
}

// TestSet_InPlaceRefusedFallsBack: vCenter refuses web-1's reconfigure.
// The pass reports the failure; web-1 is not asked again but, under
// InPlaceIfPossible, replaced by a new VM on the new revision, while the
// other two keep their UUIDs, changed in place.
func TestSet_InPlaceRefusedFallsBack(t *testing.T) {
	faults, sim, p := startCounted(t)
	ctx := context.Background()
	s := inPlaceSet(p, 512, replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible})
	grow(t, s, p, 3)
	before := fleet(t, p)
	lift := faults.Refuse("ReconfigVM_Task", mustRef(t, sim, "web-1"))
	defer lift()
	next := s.Template
	next.MemoryMiB = 1024
	s.SetTemplate(next)
	rev := vmprovider.TemplateRevision(next)
	calls := faults.Calls()["ReconfigVM_Task"]
	plan, _, err := s.Scale(ctx, 3, time.Now())
	if live, _ := updated(plan); live != 3 || err == nil || !strings.Contains(err.Error(), `update VM "web-1" in place`) {
		t.Fatalf("1024 MiB: %v, %v; want 3 live updates, web-1's failing", plan, err)
	}
	for range 10 {
		plan, _, err = s.Scale(ctx, 3, time.Now())
		if err != nil {
			t.Fatalf("Scale: %v", err)
		}
		if plan.IsZero() {
			break
		}
		if len(plan.Update) > 0 {
			t.Fatalf("after web-1's refusal: %v; want no update asked again", plan)
		}
	}
	if n := faults.Calls()["ReconfigVM_Task"] - calls; n != 3 {
		t.Errorf("%d reconfigures, want the 3 of the first pass", n)
	}
	got := fleet(t, p)
	if len(got) != 3 || got["web-1"].UUID == before["web-1"].UUID {
		t.Fatalf("VMs: %+v; want 3, web-1 replaced", got)
	}
	for name, st := range got {
		if st.Revision != rev || st.MemoryMiB != 1024 {
			t.Errorf("%s: %+v; want 1024 MiB on the new revision", name, st)
		}
		if b, ok := before[name]; ok && name != "web-1" && b.UUID != st.UUID {
			t.Errorf("%s was replaced; want it changed in place", name)
		}
	}
}

// TestSet_InPlacePowerCycleWaitsForHook: with a Lifecycle, a decrease
// prepares the VM first: PreDelete is called, told by its ctx that it
// drains for an update to 512 MiB; while it holds the VM, passes change
// nothing and vCenter stops nothing; once it returned nil, the next pass
// power-cycles the VM, and the preparation is over.
func TestSet_InPlacePowerCycleWaitsForHook(t *testing.T) {
	sim, p := start(t)
	ctx := context.Background()
	s := inPlaceSet(p, 1024, replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible,
		MaxUnavailable: replicaset.Count(1), MaxSurge: replicaset.Count(0)})
	type call struct {
		name string
		to   vmprovider.Resize
		ok   bool
	}
	calls, release := make(chan call, 4), make(chan error, 4)
	s.Lifecycle = &vmprovider.Lifecycle{Lifecycle: replicaset.Lifecycle{Timeout: time.Hour}, PreDelete: func(ctx context.Context, vm vmprovider.VM) error {
		to, ok := vmprovider.PreparingUpdate(ctx)
		calls <- call{vm.Name, to, ok}
		select {
		case err := <-release:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	grow(t, s, p, 2)
	before := fleet(t, p)
	next := s.Template
	next.MemoryMiB = 512
	s.SetTemplate(next)
	rev := vmprovider.TemplateRevision(next)
	plan, _, err := s.Scale(ctx, 2, time.Now())
	if err != nil || len(plan.PrepareUpdate) != 1 || len(plan.Update) != 0 {
		t.Fatalf("512 MiB: %v, %v; want one VM preparing for its power cycle", plan, err)
	}
	name := plan.PrepareUpdate[0].Name
	var c call
	select {
	case c = <-calls:
	case <-time.After(30 * time.Second):
		t.Fatal("PreDelete was not called")
	}
	want := call{name, vmprovider.Resize{CPUs: 1, MemoryMiB: 512, Revision: rev, BaseRevision: vmprovider.BaseRevision(next), PowerCycle: true}, true}
	if diff := cmp.Diff(want, c, cmp.AllowUnexported(call{})); diff != "" {
		t.Errorf("PreDelete's call (-want +got):\n%s", diff)
	}
	for range 2 {
		plan, _, err := s.Scale(ctx, 2, time.Now())
		if err != nil || len(plan.Update)+len(plan.PrepareUpdate) != 0 {
			t.Fatalf("while PreDelete holds %s: %v, %v; want nothing changed", name, plan, err)
		}
	}
	if diff := cmp.Diff(before, fleet(t, p)); diff != "" {
		t.Errorf("VMs while PreDelete holds (-before +after):\n%s", diff)
	}
	if n := powerOffs(t, sim, before)[name]; n != 0 {
		t.Errorf("%s stopped %d times while PreDelete held it", name, n)
	}
	if st, err := s.Status(ctx, time.Now()); err != nil || st.Preparing != 1 {
		t.Errorf("Status while PreDelete holds: %+v, %v; want 1 preparing", st, err)
	}

	release <- nil
	deadline := time.Now().Add(60 * time.Second)
	for len(plan.Update) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no power cycle of %s after PreDelete released it: %v", name, plan)
		}
		if plan, _, err = s.Scale(ctx, 2, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if len(plan.Update) != 1 || plan.Update[0].Replica.Name != name || !plan.Update[0].PowerCycle {
		t.Fatalf("once released: %v; want %s power-cycled", plan, name)
	}
	got := fleet(t, p)[name]
	if got.UUID != before[name].UUID || got.MemoryMiB != 512 || got.Revision != rev || got.Power != vmprovider.PoweredOn {
		t.Errorf("%s after its power cycle: %+v; want its UUID, 512 MiB, the new revision, powered on", name, got)
	}
	if n := powerOffs(t, sim, before)[name]; n != 1 {
		t.Errorf("%s stopped %d times, want once", name, n)
	}
	if st, err := s.Status(ctx, time.Now()); err != nil || st.Preparing != 0 {
		t.Errorf("Status after the power cycle: %+v, %v; want none preparing", st, err)
	}
	close(release) // the other VM's drain returns at once
	for !cmp.Equal(resized(before, 512, rev), fleet(t, p)) {
		if time.Now().After(deadline) {
			t.Fatalf("the other VM not changed in place: %+v", fleet(t, p))
		}
		if _, _, err = s.Scale(ctx, 2, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
}
