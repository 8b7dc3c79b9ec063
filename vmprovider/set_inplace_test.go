package vmprovider_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vmprovidertest"
)

// inPlaceSet is a Set of owner uid-ip on a resizing fake, named web-0,
// web-1, and so on, rolling in place under strategy; its VMs have 2 CPUs,
// 1024 MiB and memory hot-add.
func inPlaceSet(c *clock, strategy replicaset.Strategy) (*vmprovider.Set, *resizing) {
	p := &resizing{Fake: &vmprovidertest.Fake{Now: c.now}}
	return &vmprovider.Set{
		Provider: p,
		Template: vmprovider.Spec{Owner: vmprovider.Owner{UID: "uid-ip"}, PowerOn: true, CPUs: 2, MemoryMiB: 1024, MemoryHotAdd: true},
		Policy:   deletionpolicy.HighestOrdinal{},
		Names:    naming.Indexed{Base: "web"},
		Rollout:  &strategy,
	}, p
}

// withMemory returns s's Template with memoryMiB.
func withMemory(s *vmprovider.Set, memoryMiB int64) vmprovider.Spec {
	t := s.Template
	t.MemoryMiB = memoryMiB
	return t
}

// updates returns the names a plan updates in place, with "!" after
// those it power-cycles.
func updates(p replicaset.Plan) []string {
	var out []string
	for _, u := range p.Update {
		n := u.Replica.Name
		if u.PowerCycle {
			n += "!"
		}
		out = append(out, n)
	}
	return out
}

// holdReason returns the reason of p's hold of kind by, or "".
func holdReason(p replicaset.Plan, by replicaset.HoldKind) string {
	for _, h := range p.Holds {
		if h.By == by {
			return h.Reason
		}
	}
	return ""
}

// TestSetInPlace_Live: memory raised with hot-add on is made live on
// every VM in one pass, which creates and deletes nothing; the VMs keep
// their instance UUIDs, run throughout, and record the new revision and
// size; the next pass has nothing left to do.
func TestSetInPlace_Live(t *testing.T) {
	c := &clock{now}
	s, p := inPlaceSet(c, replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible})
	scale(t, s, c, 3)
	before := uuids(t, p)
	s.SetTemplate(withMemory(s, 2048))
	rev := vmprovider.TemplateRevision(s.Template)
	plan := scale(t, s, c, 3)
	if diff := cmp.Diff([]string{"web-0", "web-1", "web-2"}, updates(plan)); diff != "" || plan.Create+len(plan.Delete) > 0 {
		t.Fatalf("2048 MiB: %v; updated (-want +got):\n%s", plan, diff)
	}
	for _, r := range p.resizes() {
		if r.Cycled || r.To.MemoryMiB != 2048 || r.To.CPUs != 2 || r.To.Revision != rev || r.To.BaseRevision != vmprovider.BaseRevision(s.Template) {
			t.Errorf("resize of %s: %+v; want a live one to 2 CPUs, 2048 MiB and the Template's revisions", r.Name, r)
		}
	}
	if diff := cmp.Diff(before, uuids(t, p)); diff != "" {
		t.Errorf("instance UUIDs (-before +after):\n%s", diff)
	}
	for _, vm := range list(t, p) {
		if vm.Revision != rev || vm.MemoryMiB != 2048 || vm.Power != vmprovider.PoweredOn {
			t.Errorf("%s after the pass: %+v; want 2048 MiB, powered on, revision %s", vm.Name, vm, rev)
		}
	}
	if plan := scale(t, s, c, 3); !plan.IsZero() {
		t.Errorf("the pass after: %v, want nothing to do", plan)
	}
}

// TestSetInPlace_CannotResize: a Provider that is no Resizer records no
// base revisions, and every VM on an older revision is InPlaceNone: held,
// named, under InPlaceOnly, replaced under InPlaceIfPossible.
func TestSetInPlace_CannotResize(t *testing.T) {
	c := &clock{now}
	s, p := inPlaceSet(c, replicaset.Strategy{Method: replicaset.UpdateInPlaceOnly, MaxUnavailable: replicaset.Count(1)})
	s.Provider = p.Fake
	scale(t, s, c, 2)
	for _, vm := range list(t, p) {
		if vm.BaseRevision != "" {
			t.Errorf("%s records base revision %q; a Set whose Provider cannot resize records none", vm.Name, vm.BaseRevision)
		}
	}
	s.SetTemplate(withMemory(s, 2048))
	plan := scale(t, s, c, 2)
	if why := holdReason(plan, replicaset.HoldInPlaceOnly); len(plan.Update) > 0 || plan.Create > 0 || !strings.Contains(why, "the provider cannot resize VMs") {
		t.Errorf("InPlaceOnly: %v, hold %q; want nothing done, held because the provider cannot resize VMs", plan, why)
	}
	s.SetRollout(&replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible})
	if plan := scale(t, s, c, 2); plan.Create != 1 || len(plan.Update) > 0 {
		t.Errorf("InPlaceIfPossible: %v; want a surge VM to replace one", plan)
	}
}

// TestSetInPlace_Endpoints: over Endpoints, each VM is resized on its
// own endpoint (Endpoints.On), and a VM on an endpoint whose Provider cannot
// resize is InPlaceNone, the endpoint named.
func TestSetInPlace_Endpoints(t *testing.T) {
	c := &clock{now}
	s, east := inPlaceSet(c, replicaset.Strategy{Method: replicaset.UpdateInPlaceOnly, MaxUnavailable: replicaset.Count(1)})
	west := &vmprovidertest.Fake{Now: c.now}
	s.Provider = &vmprovider.Endpoints{Providers: map[string]vmprovider.Provider{"east": east, "west": west}, Default: "east"}
	s.Spec.Zones = []string{"a", "b"}
	s.Zones = map[string]vmprovider.Placement{"a": {Endpoint: "east"}, "b": {Endpoint: "west"}}
	scale(t, s, c, 2)
	s.SetTemplate(withMemory(s, 2048))
	plan := scale(t, s, c, 2)
	if diff := cmp.Diff([]string{"web-0"}, updates(plan)); diff != "" {
		t.Errorf("2048 MiB: %v; updated (-want +got):\n%s", plan, diff)
	}
	if got := east.resizes(); len(got) != 1 || got[0].Name != "web-0" || got[0].To.MemoryMiB != 2048 {
		t.Errorf("resizes on east: %+v; want web-0's", got)
	}
	if why := holdReason(plan, replicaset.HoldInPlaceOnly); !strings.Contains(why, `web-1 (the provider of endpoint "west" cannot resize VMs)`) {
		t.Errorf("hold %q; want web-1 held, naming its endpoint", why)
	}
}

// TestSetInPlace_Failures: a resize that got no answer is asked for again
// by the next pass; one the platform refused is not: the VM is reported
// InPlaceNone with the failure, held and named under InPlaceOnly, and
// replaced under InPlaceIfPossible; a live resize refused as needing the
// VM off is made by a power cycle next.
func TestSetInPlace_Failures(t *testing.T) {
	c := &clock{now}
	s, p := inPlaceSet(c, replicaset.Strategy{Method: replicaset.UpdateInPlaceOnly, MaxUnavailable: replicaset.Count(1)})
	scale(t, s, c, 3)
	failures := map[string]error{
		"web-0": fmt.Errorf("no answer: %w", vmprovider.ErrUnreachable),
		"web-1": errors.New("vCenter refused the reconfigure: InvalidState"),
		"web-2": fmt.Errorf("vCenter refused it while it runs: %w", vmprovider.ErrNeedsPowerCycle),
	}
	p.fail = func(name string, _ vmprovider.Resize) (error, bool) {
		p.mu.Lock()
		defer p.mu.Unlock()
		err := failures[name]
		delete(failures, name)
		return err, false
	}
	s.SetTemplate(withMemory(s, 2048))
	plan, _, err := s.Scale(context.Background(), 3, c.t)
	if diff := cmp.Diff([]string{"web-0", "web-1", "web-2"}, updates(plan)); diff != "" {
		t.Fatalf("2048 MiB: %v; updated (-want +got):\n%s", plan, diff)
	}
	for _, name := range []string{"web-0", "web-1", "web-2"} {
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("update VM %q in place", name)) {
			t.Errorf("the pass's error %v does not name %s's failed update", err, name)
		}
	}
	plan = scale(t, s, c, 3)
	if diff := cmp.Diff([]string{"web-0", "web-2!"}, updates(plan)); diff != "" {
		t.Errorf("the pass after: %v; updated (-want +got):\n%s", plan, diff)
	}
	if why := holdReason(plan, replicaset.HoldInPlaceOnly); !strings.Contains(why, "web-1 (the in-place update failed: ") ||
		!strings.Contains(why, "InvalidState") {
		t.Errorf("the pass after: hold %q; want web-1 held, named with its failure", why)
	}
	var made []string
	for _, r := range p.resizes() {
		made = append(made, fmt.Sprintf("%s %v", r.Name, r.To.PowerCycle))
	}
	slices.Sort(made)
	if diff := cmp.Diff([]string{"web-0 false", "web-2 true"}, made); diff != "" {
		t.Errorf("resizes made, and whether they allowed a power cycle (-want +got):\n%s", diff)
	}
	s.SetRollout(&replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible})
	if plan := scale(t, s, c, 3); plan.Create != 1 || len(plan.Update) > 0 {
		t.Errorf("InPlaceIfPossible: %v; want a surge VM to replace web-1", plan)
	}
}

// TestSetInPlace_RecordsBaseRevisions: a VM that records no revision is
// given the Template's revision and base revision in one change; one on
// the Template's revision without a base revision is given it; one on an
// older revision without one is left as it is, and replaced by the next
// rollout, while the others are changed in place.
func TestSetInPlace_RecordsBaseRevisions(t *testing.T) {
	c := &clock{now}
	s, p := inPlaceSet(c, replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible})
	rev, base := vmprovider.TemplateRevision(s.Template), vmprovider.BaseRevision(s.Template)
	older := withMemory(s, 512)
	for i, r := range []string{"", rev, vmprovider.TemplateRevision(older)} {
		p.Add(vmprovider.VM{Name: fmt.Sprintf("web-%d", i), InstanceUUID: fmt.Sprintf("old-%d", i), Owner: "uid-ip",
			Power: vmprovider.PoweredOn, CPUs: 2, MemoryMiB: 1024, MemoryHotAdd: true, Revision: r, BootedAt: now})
	}
	plan := scale(t, s, c, 3)
	want := []resized{
		{Name: "web-0", UUID: "old-0", To: vmprovider.Resize{Revision: rev, BaseRevision: base}},
		{Name: "web-1", UUID: "old-1", To: vmprovider.Resize{BaseRevision: base}},
	}
	if diff := cmp.Diff(want, p.resizes()); diff != "" {
		t.Errorf("revisions recorded (-want +got):\n%s", diff)
	}
	if plan.Create != 1 || len(plan.Update) > 0 {
		t.Errorf("first pass: %v; want web-2, of an older revision with no base revision, replaced", plan)
	}
	settle(t, s, 3, 10, c.t)
	if got := uuids(t, p); got["web-0"] != "old-0" || got["web-1"] != "old-1" || got["web-2"] == "old-2" {
		t.Fatalf("VMs after the first rollout: %v; want web-0 and web-1 kept, web-2 replaced", got)
	}
	for _, vm := range list(t, p) {
		if vm.BaseRevision != base {
			t.Errorf("%s records base revision %q, want %q", vm.Name, vm.BaseRevision, base)
		}
	}
	s.SetTemplate(withMemory(s, 4096))
	if plan := scale(t, s, c, 3); len(plan.Update) != 3 || plan.Create > 0 {
		t.Errorf("4096 MiB: %v; want all three changed live", plan)
	}
}

// TestSetInPlace_ReplaceRecordsNoBase: under UpdateReplace a VM made by
// an earlier replicakit is not reconfigured to record a base revision
// (only the revision it lacks is marked); turning an in-place method on
// records it then.
func TestSetInPlace_ReplaceRecordsNoBase(t *testing.T) {
	c := &clock{now}
	s, p := inPlaceSet(c, replicaset.Strategy{})
	rev, base := vmprovider.TemplateRevision(s.Template), vmprovider.BaseRevision(s.Template)
	p.Add(vmprovider.VM{Name: "web-0", InstanceUUID: "old-0", Owner: "uid-ip", Power: vmprovider.PoweredOn,
		CPUs: 2, MemoryMiB: 1024, Revision: rev, BootedAt: now})
	scale(t, s, c, 1)
	if got := p.resizes(); len(got) != 0 {
		t.Errorf("under Replace, resizes %v; want none", got)
	}
	s.Rollout = &replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible}
	scale(t, s, c, 1)
	want := []resized{{Name: "web-0", UUID: "old-0", To: vmprovider.Resize{BaseRevision: base}}}
	if diff := cmp.Diff(want, p.resizes()); diff != "" {
		t.Errorf("in place, revisions recorded (-want +got):\n%s", diff)
	}
}

// TestSetInPlace_PreparesPowerCycle: with a Lifecycle, a power cycle
// drains first: PreDelete is called for the VM, told by its ctx that it is
// for an update to the Template's size, and the VM is changed only once
// it returned nil; the preparation ends with the update, and LaunchGate is
// called again for the VM. A rollback while another VM prepares takes it
// back, cancelling its PreDelete.
func TestSetInPlace_PreparesPowerCycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &clock{now}
		drain, gate := newLatch(), newLatch()
		defer drain.end()
		defer gate.end()
		s, p := inPlaceSet(c, replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible, MaxUnavailable: replicaset.Count(1), MaxSurge: replicaset.Count(0)})
		var mu sync.Mutex
		told := map[string]vmprovider.Resize{}
		s.Lifecycle = &vmprovider.Lifecycle{
			PreDelete: func(ctx context.Context, vm vmprovider.VM) error {
				if to, ok := vmprovider.PreparingUpdate(ctx); ok {
					mu.Lock()
					told[vm.Name] = to
					mu.Unlock()
				}
				return drain.call(ctx, vm)
			},
			LaunchGate: gate.call,
			Lifecycle:  replicaset.Lifecycle{Timeout: time.Hour},
		}
		scale(t, s, c, 2)
		scale(t, s, c, 2) // calls LaunchGate for both
		synctest.Wait()
		gate.give("web-0", nil)
		gate.give("web-1", nil)
		synctest.Wait()
		s.SetTemplate(withMemory(s, 512))
		rev := vmprovider.TemplateRevision(s.Template)
		plan := scale(t, s, c, 2)
		if diff := cmp.Diff([]string{"web-0"}, replicaNames(plan.PrepareUpdate)); diff != "" || len(plan.Update) > 0 {
			t.Fatalf("512 MiB: %v; prepared for an update (-want +got):\n%s", plan, diff)
		}
		synctest.Wait()
		want := vmprovider.Resize{CPUs: 2, MemoryMiB: 512, Revision: rev, BaseRevision: vmprovider.BaseRevision(s.Template), PowerCycle: true}
		mu.Lock()
		if diff := cmp.Diff(map[string]vmprovider.Resize{"web-0": want}, told); diff != "" {
			t.Errorf("PreparingUpdate in PreDelete's ctx (-want +got):\n%s", diff)
		}
		mu.Unlock()
		if plan := scale(t, s, c, 2); len(plan.Update) > 0 || holds(plan, replicaset.HoldPreDelete) != 1 {
			t.Fatalf("while PreDelete holds web-0: %v; want nothing changed, web-0 held", plan)
		}
		drain.give("web-0", nil)
		synctest.Wait()
		if plan := scale(t, s, c, 2); !cmp.Equal([]string{"web-0!"}, updates(plan)) {
			t.Fatalf("once web-0 was released: %v; want it power-cycled", plan)
		}
		if got := p.resizes(); len(got) != 1 || !got[0].Cycled || got[0].Name != "web-0" {
			t.Fatalf("resizes: %+v; want web-0's power cycle", got)
		}
		if plan := scale(t, s, c, 2); len(plan.PrepareUpdate)+len(plan.Update) > 0 {
			t.Fatalf("web-0 back, its launch gate closed: %v; want web-1 to wait, as web-0 is not available", plan)
		}
		synctest.Wait()
		if diff := cmp.Diff(map[string]int{"web-0": 2, "web-1": 1}, gate.counts()); diff != "" {
			t.Errorf("LaunchGate calls (-want +got):\n%s", diff)
		}
		gate.give("web-0", nil)
		synctest.Wait()
		st, err := s.Status(context.Background(), c.t)
		if err != nil || st.Preparing != 0 || st.Ready != 2 {
			t.Errorf("Status after web-0's update: %+v, %v; want none preparing, both ready", st, err)
		}

		plan = scale(t, s, c, 2)
		if diff := cmp.Diff([]string{"web-1"}, replicaNames(plan.PrepareUpdate)); diff != "" {
			t.Fatalf("next: %v; prepared for an update (-want +got):\n%s", plan, diff)
		}
		synctest.Wait()
		s.SetTemplate(withMemory(s, 1024))
		plan = scale(t, s, c, 2)
		synctest.Wait()
		if diff := cmp.Diff([]string{"web-1"}, replicaNames(plan.Cancel)); diff != "" {
			t.Errorf("back to 1024 MiB: %v; taken back (-want +got):\n%s", plan, diff)
		}
		if err := drain.ctxEnded("web-1"); !errors.Is(err, context.Canceled) {
			t.Errorf("web-1's PreDelete ctx after the rollback: %v, want it cancelled", err)
		}
	})
}

// list returns p's VMs of owner uid-ip.
func list(t *testing.T, p vmprovider.Provider) []vmprovider.VM {
	t.Helper()
	vms, err := p.List(context.Background(), "uid-ip")
	if err != nil {
		t.Fatal(err)
	}
	return vms
}

// uuids returns the instance UUIDs of p's VMs of owner uid-ip, by name.
func uuids(t *testing.T, p vmprovider.Provider) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, vm := range list(t, p) {
		out[vm.Name] = vm.InstanceUUID
	}
	return out
}

// TestSetInPlace_PowersOnAfterCutCycle: a power cycle cut short (the
// program died with the VM off, before its reconfigure): the next pass
// resizes it, and powers it on again, as Template.PowerOn asks (found in
// review: it was resized and left off for good).
func TestSetInPlace_PowersOnAfterCutCycle(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s, p := inPlaceSet(c, replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible, MaxUnavailable: replicaset.Count(1)})
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, _, err := s.Scale(ctx, 2, c.now()); err != nil {
			t.Fatal(err)
		}
		c.t = c.t.Add(time.Minute)
	}
	s.SetTemplate(withMemory(s, 512)) // a decrease: a power cycle
	// The program died after powering web-0 off, before its reconfigure.
	if err := p.SetPower(ctx, "web-0", "uid-ip", vmprovider.PoweredOff); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ {
		plan, _, err := s.Scale(ctx, 2, c.now())
		t.Logf("pass %d: %v %v", i, plan, err)
		c.t = c.t.Add(time.Minute)
	}
	vm, _ := p.Get(ctx, "web-0")
	if vm.Power != vmprovider.PoweredOn {
		t.Errorf("web-0 resized to %d MiB and left %s; Template.PowerOn is true", vm.MemoryMiB, vm.Power)
	}
}
