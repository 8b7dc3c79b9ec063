package vcsim_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/internal/vcsim"
)

// start runs a simulator and logs a client in to it.
func start(t *testing.T, setup ...func(*simulator.Model)) (*vcsim.Sim, *govmomi.Client) {
	t.Helper()
	s, err := vcsim.New(setup...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(vcsim.Username, vcsim.Password)
	c, err := govmomi.NewClient(context.Background(), u, true)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// template is the VM the simulator's model clones from.
func template(t *testing.T, c *govmomi.Client) (*object.VirtualMachine, *object.Folder) {
	t.Helper()
	ctx := context.Background()
	f := find.NewFinder(c.Client, true)
	dc, err := f.DefaultDatacenter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.SetDatacenter(dc)
	vm, err := f.VirtualMachine(ctx, "DC0_H0_VM0")
	if err != nil {
		t.Fatal(err)
	}
	folders, err := dc.Folders(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return vm, folders.VmFolder
}

// TestSerialized_CallReturnsAfterItsTask: with every clone task held back
// for a second, the simulator answers CloneVM_Task while the task still
// runs; serialized, the answer comes after the task has ended, so the
// next call (this read of the task) finds it done.
func TestSerialized_CallReturnsAfterItsTask(t *testing.T) {
	// Keyed by the task's name, not the method's: "CloneVM_Task" would
	// delay nothing, and the concurrent case would pass only when its
	// read came before the clone's task ended.
	simulator.TaskDelay.MethodDelay = map[string]int{"CloneVm": 1000}
	t.Cleanup(func() { simulator.TaskDelay.MethodDelay = nil })
	for _, tc := range []struct {
		name  string
		setup []func(*simulator.Model)
		want  types.TaskInfoState
	}{
		{name: "concurrent", want: types.TaskInfoStateRunning},
		{name: "serialized", setup: []func(*simulator.Model){vcsim.Serialized}, want: types.TaskInfoStateSuccess},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c := start(t, tc.setup...)
			ctx := context.Background()
			vm, folder := template(t, c)
			task, err := vm.Clone(ctx, folder, "clone-0", types.VirtualMachineCloneSpec{})
			if err != nil {
				t.Fatal(err)
			}
			var got mo.Task
			if err := property.DefaultCollector(c.Client).RetrieveOne(ctx, task.Reference(), []string{"info.state"}, &got); err != nil {
				t.Fatal(err)
			}
			if got.Info.State != tc.want {
				t.Errorf("task state at the next call = %q, want %q", got.Info.State, tc.want)
			}
			if err := task.Wait(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSerialized_CallReturnsAfterTheTasksItsTaskStarted: a destroy's task
// deletes the VM's files in a task of its own; with that one held back for
// a second, serialized, the destroy is answered only after it too has
// ended, so the next call finds no task running (the file delete once ran
// on into the next destroy and raced with it on the datastore's VM list).
func TestSerialized_CallReturnsAfterTheTasksItsTaskStarted(t *testing.T) {
	simulator.TaskDelay.MethodDelay = map[string]int{"DeleteDatastoreFile": 1000}
	t.Cleanup(func() { simulator.TaskDelay.MethodDelay = nil })
	_, c := start(t, vcsim.Serialized)
	ctx := context.Background()
	vm, _ := template(t, c)
	off, err := vm.PowerOff(ctx)
	if err == nil {
		err = off.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	task, err := vm.Destroy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var tm mo.TaskManager
	pc := property.DefaultCollector(c.Client)
	if err := pc.RetrieveOne(ctx, *c.ServiceContent.TaskManager, []string{"recentTask"}, &tm); err != nil {
		t.Fatal(err)
	}
	var tasks []mo.Task
	if err := pc.Retrieve(ctx, tm.RecentTask, []string{"info"}, &tasks); err != nil {
		t.Fatal(err)
	}
	names := map[string]types.TaskInfoState{}
	for _, tk := range tasks {
		names[tk.Info.Name] = tk.Info.State
	}
	if names["DeleteDatastoreFile"] == "" {
		t.Fatalf("no file delete among the recent tasks %v: the test exercises nothing", names)
	}
	for name, state := range names {
		if state != types.TaskInfoStateSuccess && state != types.TaskInfoStateError {
			t.Errorf("task %s is %q at the call after the destroy; want it ended", name, state)
		}
	}
	if err := task.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSerialized_ClonesWhileReading clones VMs from several goroutines while
// others read every VM's properties: the pattern of an operator and its
// tests, which makes the unserialized simulator race with itself under the
// race detector. Serialized, every clone lands under its own name.
func TestSerialized_ClonesWhileReading(t *testing.T) {
	s, c := start(t, vcsim.Serialized)
	ctx := context.Background()
	vm, folder := template(t, c)
	const n = 24
	done := make(chan struct{})
	var readers sync.WaitGroup
	for range 3 {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				// As a provider lists its VMs: a container view and one
				// retrieval of their properties.
				v, err := view.NewManager(c.Client).CreateContainerView(ctx, folder.Reference(), []string{"VirtualMachine"}, true)
				if err != nil {
					t.Error(err)
					return
				}
				var vms []mo.VirtualMachine
				err = v.Retrieve(ctx, []string{"VirtualMachine"}, []string{"name", "config.extraConfig", "runtime.powerState"}, &vms)
				_ = v.Destroy(ctx)
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var cloners sync.WaitGroup
	for i := range n {
		cloners.Go(func() {
			task, err := vm.Clone(ctx, folder, fmt.Sprintf("clone-%02d", i), types.VirtualMachineCloneSpec{PowerOn: true})
			if err == nil {
				err = task.Wait(ctx)
			}
			if err != nil {
				t.Error(err)
			}
		})
	}
	cloners.Wait()
	close(done)
	readers.Wait()

	cfg := s.Config()
	cfg.Insecure, cfg.CABundle = true, nil
	names, err := vcsim.VMNames(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	names = slices.DeleteFunc(names, func(n string) bool { return n[:6] != "clone-" })
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("clone-%02d", i))
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("clones (-want +got):\n%s", diff)
	}
}

// TestSerialized_WaitForUpdates: a property collector's long poll does not
// hold the gate, so the call that changes what it waits on gets through,
// and the waiter sees the change. (Held at the gate, the wait would block
// the power-off for good.)
func TestSerialized_WaitForUpdates(t *testing.T) {
	_, c := start(t, vcsim.Serialized)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	vm, _ := template(t, c)
	seen := make(chan types.VirtualMachinePowerState, 1)
	go func() {
		pc, err := property.DefaultCollector(c.Client).Create(ctx)
		if err != nil {
			t.Error(err)
			return
		}
		defer func() { _ = pc.Destroy(context.Background()) }()
		err = property.Wait(ctx, pc, vm.Reference(), []string{"runtime.powerState"}, func(changes []types.PropertyChange) bool {
			for _, ch := range changes {
				if s, ok := ch.Val.(types.VirtualMachinePowerState); ok && s == types.VirtualMachinePowerStatePoweredOff {
					seen <- s
					return true
				}
			}
			return false
		})
		if err != nil && ctx.Err() == nil {
			t.Error(err)
		}
	}()
	time.Sleep(300 * time.Millisecond) // the waiter is in its long poll
	task, err := vm.PowerOff(ctx)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatalf("power off while a long poll waits: %v", err)
	}
	select {
	case <-seen:
	case <-ctx.Done():
		t.Fatal("the waiter never saw the VM powered off")
	}
}
