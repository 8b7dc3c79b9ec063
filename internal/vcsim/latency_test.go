package vcsim_test

import (
	"context"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
	"github.com/vmware/govmomi/vim25/xml"

	"github.com/replicakit/replicakit/internal/vcsim"
)

// cloneRequest is the SOAP request govmomi sends for a clone of vm-1 with
// spec.
func cloneRequest(t *testing.T, spec types.VirtualMachineCloneSpec) []byte {
	t.Helper()
	req := types.CloneVM_Task{
		This:   types.ManagedObjectReference{Type: "VirtualMachine", Value: "vm-1"},
		Folder: types.ManagedObjectReference{Type: "Folder", Value: "group-v3"},
		Name:   "clone-0",
		Spec:   spec,
	}
	b, err := xml.Marshal(soap.Envelope{Body: &methods.CloneVM_TaskBody{Req: &req}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLatency_TaskTime: RealWorld's figures, scaled; a clone whose spec
// asks for child disks of a snapshot takes the linked clone's figure, any
// other clone the full clone's; a method with no figure runs at once; a
// zero Scale means 1.
func TestLatency_TaskTime(t *testing.T) {
	linked := cloneRequest(t, types.VirtualMachineCloneSpec{
		Location: types.VirtualMachineRelocateSpec{DiskMoveType: string(types.VirtualMachineRelocateDiskMoveOptionsCreateNewChildDiskBacking)},
		Snapshot: &types.ManagedObjectReference{Type: "VirtualMachineSnapshot", Value: "snapshot-1"},
	})
	full := cloneRequest(t, types.VirtualMachineCloneSpec{
		Location: types.VirtualMachineRelocateSpec{DiskMoveType: string(types.VirtualMachineRelocateDiskMoveOptionsMoveAllDiskBackingsAndDisallowSharing)},
	})
	scaled := vcsim.RealWorld()
	scaled.Scale = 0.01
	unscaled := vcsim.RealWorld()
	unscaled.Scale = 0
	for _, tc := range []struct {
		name    string
		l       vcsim.Latency
		method  string
		body    []byte
		want    time.Duration
		wantRTT time.Duration
	}{
		{"full clone", scaled, "CloneVM_Task", full, 1200 * time.Millisecond, 300 * time.Microsecond},
		{"linked clone", scaled, "CloneVM_Task", linked, 80 * time.Millisecond, 300 * time.Microsecond},
		{"reconfigure", scaled, "ReconfigVM_Task", nil, 20 * time.Millisecond, 300 * time.Microsecond},
		{"power-on", scaled, "PowerOnVM_Task", nil, 30 * time.Millisecond, 300 * time.Microsecond},
		{"no figure", scaled, "CreateSnapshot_Task", nil, 0, 300 * time.Microsecond},
		{"zero scale", unscaled, "CloneVM_Task", linked, 8 * time.Second, 30 * time.Millisecond},
		{"no linked figure", vcsim.Latency{Tasks: map[string]time.Duration{"CloneVM_Task": time.Minute}}, "CloneVM_Task", linked, time.Minute, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.l.TaskTime(tc.method, tc.body); got != tc.want {
				t.Errorf("TaskTime(%s) = %v, want %v", tc.method, got, tc.want)
			}
			if got := tc.l.CallTime(); got != tc.wantRTT {
				t.Errorf("CallTime() = %v, want %v", got, tc.wantRTT)
			}
		})
	}
}

// taskState reads a task's state in one call.
func taskState(t *testing.T, pc *property.Collector, task *object.Task) types.TaskInfoState {
	t.Helper()
	var got mo.Task
	if err := pc.RetrieveOne(context.Background(), task.Reference(), []string{"info.state"}, &got); err != nil {
		t.Fatal(err)
	}
	return got.Info.State
}

// TestLatency_TaskRunsItsTime: under RealWorld scaled to 1/100, the
// clone's call returns with its task running and no VM made yet; the task
// ends no sooner than its scaled time (1.2 s), with the new VM as its
// result, and only then is the VM in the inventory.
func TestLatency_TaskRunsItsTime(t *testing.T) {
	l := vcsim.RealWorld()
	l.Scale = 0.01
	d := l.TaskTime("CloneVM_Task", nil)
	_, c := start(t, l.Serialized)
	ctx := context.Background()
	vm, folder := template(t, c)
	called := time.Now()
	task, err := vm.Clone(ctx, folder, "clone-0", types.VirtualMachineCloneSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if got := taskState(t, property.DefaultCollector(c.Client), task); got != types.TaskInfoStateRunning {
		t.Errorf("clone task state after its call = %q, want running", got)
	}
	f := find.NewFinder(c.Client, true)
	dc, err := f.DefaultDatacenter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.SetDatacenter(dc)
	if _, err := f.VirtualMachine(ctx, "clone-0"); err == nil {
		t.Errorf("clone-0 found while its clone task runs, want it made at the task's end")
	}
	info, err := task.WaitForResult(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(called); took < d {
		t.Errorf("clone task ended %v after its call, want at least %v", took, d)
	}
	made, err := f.VirtualMachine(ctx, "clone-0")
	if err != nil {
		t.Fatalf("clone-0 after its task: %v", err)
	}
	if ref, ok := info.Result.(types.ManagedObjectReference); !ok || ref != made.Reference() {
		t.Errorf("clone task result = %#v, want clone-0's reference %v", info.Result, made.Reference())
	}
	if info.Name != "CloneVM_Task" || info.Entity == nil || *info.Entity != vm.Reference() {
		t.Errorf("clone task name %q, entity %v; want CloneVM_Task of %v", info.Name, info.Entity, vm.Reference())
	}
}

// TestLatency_GateFreeWhileTaskRuns: while a clone's task runs its time,
// the gate serves nothing on its behalf, and another VM's power-off is
// served and its task ends; the clone's task is still running after it.
func TestLatency_GateFreeWhileTaskRuns(t *testing.T) {
	f := &vcsim.Faults{Latency: &vcsim.Latency{Tasks: map[string]time.Duration{"CloneVM_Task": 5 * time.Second}}}
	_, c := start(t, f.Serialized)
	ctx := context.Background()
	vm, folder := template(t, c)
	clone, err := vm.Clone(ctx, folder, "clone-0", types.VirtualMachineCloneSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if method, d := f.Serving(); method != "" {
		t.Errorf("gate serving %s for %v while the clone's task runs, want it free", method, d)
	}
	other, err := object.NewSearchIndex(c.Client).FindByInventoryPath(ctx, "/DC0/vm/DC0_H0_VM1")
	if err != nil || other == nil {
		t.Fatalf("find DC0_H0_VM1: %v, %v", other, err)
	}
	off, err := object.NewVirtualMachine(c.Client, other.Reference()).PowerOff(ctx)
	if err == nil {
		err = off.Wait(ctx)
	}
	if err != nil {
		t.Fatalf("power off DC0_H0_VM1 while the clone runs: %v", err)
	}
	if got := taskState(t, property.DefaultCollector(c.Client), clone); got != types.TaskInfoStateRunning {
		t.Errorf("clone task state after the power-off = %q, want still running", got)
	}
	if err := clone.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLatency_LinkedCloneTakesItsFigure: a clone whose request asks for a
// linked clone takes LinkedClone's time, not the full clone's hour.
func TestLatency_LinkedCloneTakesItsFigure(t *testing.T) {
	const d = 200 * time.Millisecond
	l := vcsim.Latency{Tasks: map[string]time.Duration{"CloneVM_Task": time.Hour}, LinkedClone: d}
	_, c := start(t, l.Serialized)
	vm, folder := template(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	called := time.Now()
	task, err := vm.Clone(ctx, folder, "linked-0", types.VirtualMachineCloneSpec{
		Location: types.VirtualMachineRelocateSpec{DiskMoveType: string(types.VirtualMachineRelocateDiskMoveOptionsCreateNewChildDiskBacking)},
		Snapshot: &types.ManagedObjectReference{Type: "VirtualMachineSnapshot", Value: "snapshot-1"},
	})
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatalf("linked clone: %v (a full clone's hour?)", err)
	}
	if took := time.Since(called); took < d {
		t.Errorf("linked clone took %v, want at least %v", took, d)
	}
}

// TestLatency_DeferredFaults: a deferred call's fault ends its task,
// whether the simulator answered the call with it (a destroy of a VM that
// does not exist, a clone into a folder that does not exist) or ended the
// call's task with it (a clone to a name taken).
func TestLatency_DeferredFaults(t *testing.T) {
	l := vcsim.Latency{Tasks: map[string]time.Duration{"CloneVM_Task": 50 * time.Millisecond, "Destroy_Task": 50 * time.Millisecond}}
	_, c := start(t, l.Serialized)
	ctx := context.Background()
	vm, folder := template(t, c)
	gone := object.NewVirtualMachine(c.Client, types.ManagedObjectReference{Type: "VirtualMachine", Value: "vm-gone"})
	nowhere := object.NewFolder(c.Client, types.ManagedObjectReference{Type: "Folder", Value: "group-nowhere"})
	for _, tc := range []struct {
		name  string
		start func() (*object.Task, error)
		want  types.BaseMethodFault
	}{
		{"destroy of no VM", func() (*object.Task, error) { return gone.Destroy(ctx) }, &types.ManagedObjectNotFound{}},
		{"clone into no folder", func() (*object.Task, error) {
			return vm.Clone(ctx, nowhere, "clone-1", types.VirtualMachineCloneSpec{})
		}, &types.RuntimeFault{}},
		{"clone to a name taken", func() (*object.Task, error) {
			return vm.Clone(ctx, folder, "DC0_H0_VM1", types.VirtualMachineCloneSpec{})
		}, &types.DuplicateName{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task, err := tc.start()
			if err != nil {
				t.Fatalf("the call: %v, want a task", err)
			}
			err = task.Wait(ctx)
			if !fault.Is(err, tc.want) {
				t.Errorf("task ended with %v, want a %T", err, tc.want)
			}
		})
	}
}

// TestLatency_ShutdownGuest: ShutdownGuest is answered at once with the VM
// still on, and the VM is off no sooner than the guest's time.
func TestLatency_ShutdownGuest(t *testing.T) {
	const d = 500 * time.Millisecond
	l := vcsim.Latency{Tasks: map[string]time.Duration{"ShutdownGuest": d}}
	_, c := start(t, l.Serialized)
	ctx := context.Background()
	vm, _ := template(t, c)
	called := time.Now()
	if err := vm.ShutdownGuest(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := vm.PowerState(ctx); err != nil || st != types.VirtualMachinePowerStatePoweredOn {
		t.Errorf("power state after ShutdownGuest returned: %q, %v; want poweredOn", st, err)
	}
	if err := vm.WaitForPowerState(ctx, types.VirtualMachinePowerStatePoweredOff); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(called); took < d {
		t.Errorf("VM off %v after ShutdownGuest, want at least %v", took, d)
	}
}

// TestLatency_CallRoundTrip: every call waits the round trip.
func TestLatency_CallRoundTrip(t *testing.T) {
	const d = 300 * time.Millisecond
	l := vcsim.Latency{Call: d}
	_, c := start(t, l.Serialized)
	vm, _ := template(t, c)
	called := time.Now()
	if _, err := vm.PowerState(context.Background()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(called); took < d {
		t.Errorf("a property read took %v, want at least the round trip %v", took, d)
	}
}

// TestLatency_CloseDropsWaitingTasks: Close does not wait for a task's
// time to run out.
func TestLatency_CloseDropsWaitingTasks(t *testing.T) {
	l := vcsim.Latency{Tasks: map[string]time.Duration{"CloneVM_Task": time.Hour}}
	s, err := vcsim.New(l.Serialized)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	closeSim := func() { once.Do(s.Close) }
	defer closeSim()
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(vcsim.Username, vcsim.Password)
	ctx := context.Background()
	c, err := govmomi.NewClient(ctx, u, true)
	if err != nil {
		t.Fatal(err)
	}
	vm, folder := template(t, c)
	if _, err := vm.Clone(ctx, folder, "clone-0", types.VirtualMachineCloneSpec{}); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() { closeSim(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("Close still waiting a minute later, want it to drop the clone's hour")
	}
}
