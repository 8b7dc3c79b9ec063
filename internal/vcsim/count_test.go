package vcsim_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/internal/vcsim"
)

// TestCounts_TasksAndWatch: between two snapshots, a clone counts one call
// and one task, and its wait (a collector filtering the task) no watch
// call; a collector filtering a
// container view counts its filter, long poll and destruction as a
// watch's.
func TestCounts_TasksAndWatch(t *testing.T) {
	f := &vcsim.Faults{}
	_, c := start(t, f.Serialized)
	ctx := context.Background()
	vm, folder := template(t, c)

	before := f.Counts()
	task, err := vm.Clone(ctx, folder, "clone-0", types.VirtualMachineCloneSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	got := f.Counts().Minus(before)
	wantTasks := map[string]int64{"CloneVM_Task": 1}
	if diff := cmp.Diff(wantTasks, got.Tasks); diff != "" {
		t.Errorf("tasks between the snapshots (-want +got):\n%s", diff)
	}
	if got.Calls["CloneVM_Task"] != 1 || got.Calls["WaitForUpdatesEx"] < 1 || got.Calls["CreateFilter"] != 1 {
		t.Errorf("calls between the snapshots = %v, want a CloneVM_Task, a CreateFilter and its wait", got.Calls)
	}
	if len(got.Watch) != 0 {
		t.Errorf("watch calls for a task's wait = %v, want none", got.Watch)
	}

	before = f.Counts()
	v, err := view.NewManager(c.Client).CreateContainerView(ctx, c.ServiceContent.RootFolder, []string{"VirtualMachine"}, true)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := property.DefaultCollector(c.Client).Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	filter := new(property.WaitFilter).Add(v.Reference(), "VirtualMachine", []string{"name"}, v.TraversalSpec())
	if _, err := pc.CreateFilter(ctx, filter.CreateFilter); err != nil {
		t.Fatal(err)
	}
	// One long poll: the first answer holds the view's VMs.
	if err := pc.WaitForUpdatesEx(ctx, &property.WaitOptions{Options: &types.WaitOptions{MaxWaitSeconds: types.NewInt32(1)}},
		func([]types.ObjectUpdate) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if err := pc.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	got = f.Counts().Minus(before)
	wantWatch := map[string]int64{"CreateFilter": 1, "WaitForUpdatesEx": 1, "DestroyPropertyCollector": 1}
	if diff := cmp.Diff(wantWatch, got.Watch); diff != "" {
		t.Errorf("watch calls (-want +got):\n%s", diff)
	}
	if n := vcsim.Sum(got.Calls) - vcsim.Sum(got.Watch); n != 2 {
		t.Errorf("calls beside the watch's = %d (%v), want 2: CreateContainerView, CreatePropertyCollector", n, got.Calls)
	}
}

// TestCounts_FailedAndDeferredCalls: an injected fault counts its call but
// no task; a call a Latency defers counts once, with its placeholder task,
// though it is served later.
func TestCounts_FailedAndDeferredCalls(t *testing.T) {
	f := &vcsim.Faults{Methods: []string{"PowerOffVM_Task"}, Latency: &vcsim.Latency{Tasks: map[string]time.Duration{"CloneVM_Task": 100 * time.Millisecond}}}
	f.SetProbability(1)
	_, c := start(t, f.Serialized)
	ctx := context.Background()
	vm, folder := template(t, c)
	before := f.Counts()
	if _, err := vm.PowerOff(ctx); err == nil {
		t.Error("power-off with every power-off failing: no error")
	}
	task, err := vm.Clone(ctx, folder, "clone-0", types.VirtualMachineCloneSpec{})
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	got := f.Counts().Minus(before)
	if got.Calls["PowerOffVM_Task"] != 1 || got.Calls["CloneVM_Task"] != 1 {
		t.Errorf("calls = %v, want one PowerOffVM_Task and one CloneVM_Task", got.Calls)
	}
	if diff := cmp.Diff(map[string]int64{"CloneVM_Task": 1}, got.Tasks); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
}

// TestCounts_Minus: a difference keeps the methods that changed.
func TestCounts_Minus(t *testing.T) {
	before := vcsim.Counts{Calls: map[string]int64{"A": 1, "B": 2}, Tasks: map[string]int64{"A_Task": 1}, Watch: map[string]int64{}}
	after := vcsim.Counts{Calls: map[string]int64{"A": 1, "B": 5, "C": 1}, Tasks: map[string]int64{"A_Task": 3}, Watch: map[string]int64{"W": 2}}
	want := vcsim.Counts{Calls: map[string]int64{"B": 3, "C": 1}, Tasks: map[string]int64{"A_Task": 2}, Watch: map[string]int64{"W": 2}, Ended: map[string]int64{}}
	if diff := cmp.Diff(want, after.Minus(before)); diff != "" {
		t.Errorf("Minus (-want +got):\n%s", diff)
	}
	if got := vcsim.Sum(after.Calls); got != 7 {
		t.Errorf("Sum(%v) = %d, want 7", after.Calls, got)
	}
}
