package vsphere_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	simfaults "github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// The simulator ignores a clone's disk move type and snapshot (its
// CloneVM_Task copies the disks whatever it is asked), so these tests
// check what the provider asks vCenter: the CloneVM_Task requests, kept by
// the simulator's gate (Faults.Record).

// linkedMove is the disk move type of a linked clone.
const linkedMove = string(types.VirtualMachineRelocateDiskMoveOptionsCreateNewChildDiskBacking)

// cloneCall is what a CloneVM_Task request asked for a clone's disks.
type cloneCall struct {
	Name         string
	Snapshot     string // the snapshot's MoRef value, "" for none
	DiskMoveType string
	Datastore    string // the destination datastore's MoRef value
}

// cloneCalls decodes the clone requests rec kept.
func cloneCalls(t *testing.T, rec *simfaults.Recording) []cloneCall {
	t.Helper()
	reqs, err := rec.Requests()
	if err != nil {
		t.Fatal(err)
	}
	var out []cloneCall
	for _, r := range reqs {
		c := r.(*types.CloneVM_Task)
		call := cloneCall{Name: c.Name, DiskMoveType: c.Spec.Location.DiskMoveType}
		if s := c.Spec.Snapshot; s != nil {
			call.Snapshot = s.Value
		}
		if ds := c.Spec.Location.Datastore; ds != nil {
			call.Datastore = ds.Value
		}
		out = append(out, call)
	}
	return out
}

// templateVM is the provider's template, DC0_H0_VM0, as a separate
// administrator acts on it, and the MoRef value of datastore LocalDS_0,
// where the provider places VMs.
func templateVM(t *testing.T, sim *vcsimtest.Sim) (*object.VirtualMachine, string) {
	t.Helper()
	ctx := context.Background()
	c, err := simulatorClient(ctx, sim)
	if err != nil {
		t.Fatal(err)
	}
	f := find.NewFinder(c)
	dc, err := f.Datacenter(ctx, "DC0")
	if err != nil {
		t.Fatal(err)
	}
	f.SetDatacenter(dc)
	vm, err := f.VirtualMachine(ctx, "DC0_H0_VM0")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := f.Datastore(ctx, "LocalDS_0")
	if err != nil {
		t.Fatal(err)
	}
	return vm, ds.Reference().Value
}

// snapshots returns the names of vm's snapshots, depth first, and the
// MoRef value of its current one ("" for none).
func snapshots(t *testing.T, vm *object.VirtualMachine) (names []string, current string) {
	t.Helper()
	var m mo.VirtualMachine
	if err := vm.Properties(context.Background(), vm.Reference(), []string{"snapshot"}, &m); err != nil {
		t.Fatal(err)
	}
	if m.Snapshot == nil {
		return nil, ""
	}
	var walk func([]types.VirtualMachineSnapshotTree)
	walk = func(trees []types.VirtualMachineSnapshotTree) {
		for _, s := range trees {
			names = append(names, s.Name)
			walk(s.ChildSnapshotList)
		}
	}
	walk(m.Snapshot.RootSnapshotList)
	if m.Snapshot.CurrentSnapshot != nil {
		current = m.Snapshot.CurrentSnapshot.Value
	}
	return names, current
}

// run waits for the task start returns.
func run(t *testing.T, what string, start func(context.Context) (*object.Task, error)) {
	t.Helper()
	ctx := context.Background()
	task, err := start(ctx)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// snapshot takes a snapshot called name of vm behind the provider's back.
func snapshot(t *testing.T, vm *object.VirtualMachine, name string) {
	t.Helper()
	run(t, "snapshot "+name, func(ctx context.Context) (*object.Task, error) {
		return vm.CreateSnapshot(ctx, name, "", false, false)
	})
}

// TestCreate_LinkedClone_TakesSnapshot: a linked create of a template
// without a snapshot takes one, of the disks only, and asks for a clone
// whose disks are children of it, on the provider's datastore; a second
// Provider (another process) uses that snapshot and takes none.
func TestCreate_LinkedClone_TakesSnapshot(t *testing.T) {
	faults, sim, p := startCounted(t)
	ctx := context.Background()
	tmpl, ds := templateVM(t, sim)
	clones := faults.Record("CloneVM_Task")
	snaps := faults.Record("CreateSnapshot_Task")

	if _, err := p.Create(ctx, vmprovider.Spec{Name: "web-0", Owner: ownerA, LinkedClone: true}); err != nil {
		t.Fatalf("Create(web-0, linked): %v", err)
	}
	other, err := vsphere.New(ctx, sim.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close(ctx) })
	if _, err := other.Create(ctx, vmprovider.Spec{Name: "web-1", Owner: ownerA, LinkedClone: true}); err != nil {
		t.Fatalf("another Provider's Create(web-1, linked): %v", err)
	}

	names, current := snapshots(t, tmpl)
	if want := []string{vsphere.LinkedCloneSnapshot}; !cmp.Equal(names, want) {
		t.Fatalf("template's snapshots = %q, want %q", names, want)
	}
	want := []cloneCall{
		{Name: "web-0", Snapshot: current, DiskMoveType: linkedMove, Datastore: ds},
		{Name: "web-1", Snapshot: current, DiskMoveType: linkedMove, Datastore: ds},
	}
	if diff := cmp.Diff(want, cloneCalls(t, clones)); diff != "" {
		t.Errorf("clone requests (-want +got):\n%s", diff)
	}
	reqs, err := snaps.Requests()
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 1 {
		t.Fatalf("%d CreateSnapshot_Task calls, want 1", len(reqs))
	}
	r := reqs[0].(*types.CreateSnapshot_Task)
	if r.Name != vsphere.LinkedCloneSnapshot || r.Memory || r.Quiesce || r.This != tmpl.Reference() {
		t.Errorf("CreateSnapshot_Task(%v, name %q, memory %v, quiesce %v), want the template's, %q, no memory, no quiescing",
			r.This, r.Name, r.Memory, r.Quiesce, vsphere.LinkedCloneSnapshot)
	}
}

// TestCreate_LinkedClone_ConcurrentTakeOneSnapshot: ten concurrent linked
// creates of a template without a snapshot take one snapshot between them
// and all clone from it.
func TestCreate_LinkedClone_ConcurrentTakeOneSnapshot(t *testing.T) {
	faults, sim, p := startCounted(t)
	ctx := context.Background()
	tmpl, _ := templateVM(t, sim)
	clones := faults.Record("CloneVM_Task")

	const n = 10
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = p.Create(ctx, vmprovider.Spec{Name: fmt.Sprintf("web-%d", i), Owner: ownerA, LinkedClone: true})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("concurrent linked creates: %v", err)
	}

	if got := faults.Calls()["CreateSnapshot_Task"]; got != 1 {
		t.Errorf("%d CreateSnapshot_Task calls for %d concurrent linked creates, want 1", got, n)
	}
	names, current := snapshots(t, tmpl)
	if want := []string{vsphere.LinkedCloneSnapshot}; !cmp.Equal(names, want) {
		t.Errorf("template's snapshots = %q, want %q", names, want)
	}
	calls := cloneCalls(t, clones)
	if len(calls) != n {
		t.Fatalf("%d clone requests, want %d", len(calls), n)
	}
	for _, c := range calls {
		if c.Snapshot != current || c.DiskMoveType != linkedMove {
			t.Errorf("clone %s: snapshot %q, disk move type %q; want %q, %q", c.Name, c.Snapshot, c.DiskMoveType, current, linkedMove)
		}
	}
}

// TestCreate_LinkedClone_NamedNotCurrent: a linked clone links to the
// snapshot its Spec names, wherever it is in the template's tree, never to
// the current one, here a backup product's temporary snapshot taken after
// it; without a name it links to LinkedCloneSnapshot, taken once. Of two
// snapshots of the name, it links to the first.
func TestCreate_LinkedClone_NamedNotCurrent(t *testing.T) {
	faults, sim, p := startCounted(t)
	ctx := context.Background()
	tmpl, ds := templateVM(t, sim)
	snapshot(t, tmpl, "golden")
	_, golden := snapshots(t, tmpl)
	snapshot(t, tmpl, "VEEAM BACKUP TEMPORARY SNAPSHOT")
	if names, current := snapshots(t, tmpl); !cmp.Equal(names, []string{"golden", "VEEAM BACKUP TEMPORARY SNAPSHOT"}) || current == golden {
		t.Fatalf("template's snapshots %q, current %q; the test wants the backup's current", names, current)
	}
	clones := faults.Record("CloneVM_Task")
	snaps := faults.Record("CreateSnapshot_Task")

	if _, err := p.Create(ctx, vmprovider.Spec{Name: "web-0", Owner: ownerA, LinkedClone: true, LinkedCloneSnapshot: "golden"}); err != nil {
		t.Fatalf("Create(web-0, linked to golden): %v", err)
	}
	if n := len(snaps.Bodies()); n != 0 {
		t.Errorf("%d CreateSnapshot_Task calls for a template with the snapshot named, want 0", n)
	}
	if _, err := p.Create(ctx, vmprovider.Spec{Name: "web-1", Owner: ownerA, LinkedClone: true}); err != nil {
		t.Fatalf("Create(web-1, linked): %v", err)
	}
	names, own := snapshots(t, tmpl)
	if want := []string{"golden", "VEEAM BACKUP TEMPORARY SNAPSHOT", vsphere.LinkedCloneSnapshot}; !cmp.Equal(names, want) {
		t.Errorf("template's snapshots %q, want %q", names, want)
	}
	want := []cloneCall{{Name: "web-0", Snapshot: golden, DiskMoveType: linkedMove, Datastore: ds},
		{Name: "web-1", Snapshot: own, DiskMoveType: linkedMove, Datastore: ds}}
	if diff := cmp.Diff(want, cloneCalls(t, clones)); diff != "" {
		t.Errorf("clone requests (-want +got):\n%s", diff)
	}

	snapshot(t, tmpl, "golden") // a second of the name: the first is used
	if _, err := p.Create(ctx, vmprovider.Spec{Name: "web-2", Owner: ownerA, LinkedClone: true, LinkedCloneSnapshot: "golden"}); err != nil {
		t.Fatalf("Create(web-2) linked to golden, which two snapshots are called: %v", err)
	}
	if got := cloneCalls(t, clones); len(got) != 3 || got[2].Snapshot != golden {
		t.Errorf("clone requests %+v: want web-2 linked to the first golden, %s", got, golden)
	}
}

// TestCreate_FullClone_Unchanged: a create without LinkedClone asks for a
// clone as before, neither from a snapshot nor with a disk move type, and
// takes no snapshot, also of a template that has one.
func TestCreate_FullClone_Unchanged(t *testing.T) {
	faults, sim, p := startCounted(t)
	ctx := context.Background()
	tmpl, ds := templateVM(t, sim)
	clones := faults.Record("CloneVM_Task")

	if _, err := p.Create(ctx, vmprovider.Spec{Name: "web-0", Owner: ownerA}); err != nil {
		t.Fatalf("Create(web-0): %v", err)
	}
	if names, _ := snapshots(t, tmpl); len(names) != 0 {
		t.Errorf("a full clone left the template with snapshots %q, want none", names)
	}
	snapshot(t, tmpl, "a")
	if _, err := p.Create(ctx, vmprovider.Spec{Name: "web-1", Owner: ownerA}); err != nil {
		t.Fatalf("Create(web-1): %v", err)
	}
	want := []cloneCall{{Name: "web-0", Datastore: ds}, {Name: "web-1", Datastore: ds}}
	if diff := cmp.Diff(want, cloneCalls(t, clones)); diff != "" {
		t.Errorf("clone requests (-want +got):\n%s", diff)
	}
	if got := faults.Calls()["CreateSnapshot_Task"]; got != 1 {
		t.Errorf("%d CreateSnapshot_Task calls, want the test's own 1", got)
	}
}

// TestCreate_LinkedClone_MarkedTemplate: vCenter takes no snapshot of a
// VM marked as a template, so a linked create of one without the snapshot
// it names is an invalid spec that changes nothing; once it has a
// snapshot (taken while it was a VM), linked creates that name it use it.
func TestCreate_LinkedClone_MarkedTemplate(t *testing.T) {
	faults, sim, p := startCounted(t)
	ctx := context.Background()
	tmpl, ds := templateVM(t, sim)
	run(t, "power off the template", tmpl.PowerOff)
	if err := tmpl.MarkAsTemplate(ctx); err != nil {
		t.Fatal(err)
	}
	clones := faults.Record("CloneVM_Task")

	_, err := p.Create(ctx, vmprovider.Spec{Name: "web-0", Owner: ownerA, LinkedClone: true})
	if !errors.Is(err, vmprovider.ErrInvalidSpec) {
		t.Fatalf("Create(web-0, linked) of a marked template without a snapshot: %v, want ErrInvalidSpec", err)
	}
	if got := faults.Calls()["CreateSnapshot_Task"]; got != 0 || count(t, sim, "web-0") != 0 {
		t.Errorf("the refused create made %d CreateSnapshot_Task calls and %d VMs, want none", got, count(t, sim, "web-0"))
	}

	// The simulator, unlike vCenter, snapshots a template: as if it had
	// been marked as a VM, snapshotted and marked again.
	snapshot(t, tmpl, "golden")
	_, current := snapshots(t, tmpl)
	if _, err := p.Create(ctx, vmprovider.Spec{Name: "web-0", Owner: ownerA, LinkedClone: true}); !errors.Is(err, vmprovider.ErrInvalidSpec) {
		t.Fatalf("Create(web-0, linked) of a marked template whose snapshot is not the one named: %v, want ErrInvalidSpec", err)
	}
	if _, err := p.Create(ctx, vmprovider.Spec{Name: "web-0", Owner: ownerA, LinkedClone: true, LinkedCloneSnapshot: "golden"}); err != nil {
		t.Fatalf("Create(web-0, linked to golden) of a marked template: %v", err)
	}
	want := []cloneCall{{Name: "web-0", Snapshot: current, DiskMoveType: linkedMove, Datastore: ds}}
	if diff := cmp.Diff(want, cloneCalls(t, clones)); diff != "" {
		t.Errorf("clone requests (-want +got):\n%s", diff)
	}
}

// TestCreate_LinkedClone_InvalidSpecTakesNoSnapshot: a spec found invalid
// (a datastore that does not resolve) leaves the template as it was.
func TestCreate_LinkedClone_InvalidSpecTakesNoSnapshot(t *testing.T) {
	faults, sim, p := startCounted(t)
	tmpl, _ := templateVM(t, sim)
	spec := vmprovider.Spec{Name: "web-0", Owner: ownerA, LinkedClone: true, Placement: vmprovider.Placement{Datastore: "NoSuchDS"}}
	if _, err := p.Create(context.Background(), spec); !errors.Is(err, vmprovider.ErrInvalidSpec) {
		t.Fatalf("Create(%+v): %v, want ErrInvalidSpec", spec, err)
	}
	if names, _ := snapshots(t, tmpl); len(names) != 0 || faults.Calls()["CreateSnapshot_Task"] != 0 {
		t.Errorf("an invalid spec took snapshots %q of the template, want none", names)
	}
}

// TestCreate_LinkedClone_WaitEndsWithContext: a linked create waiting for
// another to take the template's snapshot stops waiting when its context
// ends, and the other goes on to use the snapshot it took.
func TestCreate_LinkedClone_WaitEndsWithContext(t *testing.T) {
	faults, _, p := startCounted(t)
	ctx := context.Background()
	held := faults.Hold("CreateSnapshot_Task")
	first := make(chan error, 1)
	go func() {
		_, err := p.Create(ctx, vmprovider.Spec{Name: "web-0", Owner: ownerA, LinkedClone: true})
		first <- err
	}()
	<-held.Caught()

	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := p.Create(short, vmprovider.Spec{Name: "web-1", Owner: ownerA, LinkedClone: true}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Create(web-1, linked) while web-0 takes the snapshot, with a 200 ms context: %v, want DeadlineExceeded", err)
	}
	held.Release()
	if err := <-first; err != nil {
		t.Fatalf("Create(web-0, linked): %v", err)
	}
	if got := faults.Calls()["CreateSnapshot_Task"]; got != 1 {
		t.Errorf("%d CreateSnapshot_Task calls, want 1", got)
	}
}
