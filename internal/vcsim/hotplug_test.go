package vcsim_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// hotplugSim runs a serialized simulator with Hotplug, a provider on it
// and a finder of its VMs.
func hotplugSim(t *testing.T) (*vcsim.Sim, *vsphere.Provider, *find.Finder) {
	t.Helper()
	s, err := vcsim.New(vcsim.Serialized, vcsim.Hotplug)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ctx := context.Background()
	p, err := vsphere.New(ctx, s.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	vc, logout, err := vsphere.Connect(ctx, s.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logout(context.Background()) })
	return s, p, find.NewFinder(vc, true)
}

// TestHotplug_Reconfigure: the simulator refuses a reconfigure of a VM's
// CPUs, memory or hot-plug settings that vCenter refuses, with
// InvalidPowerState and the VM unchanged, and applies those vCenter
// applies; a clone takes its config's hot-add settings.
func TestHotplug_Reconfigure(t *testing.T) {
	_, p, finder := hotplugSim(t)
	ctx := context.Background()
	yes := types.NewBool(true)
	tests := []struct {
		name string
		// the VM: created with 2 CPUs, 2048 MiB and these hot-add
		// settings, and hot-remove set while off; then left in power
		power                     types.VirtualMachinePowerState
		cpuAdd, cpuRemove, memAdd bool
		spec                      types.VirtualMachineConfigSpec
		refused                   bool
		wantCPUs                  int32
		wantMemory                int32
		wantCPUAdd, wantCPURemove bool
		_                         struct{}
	}{
		{name: "memory raised, on, no hot-add", power: "poweredOn",
			spec: types.VirtualMachineConfigSpec{MemoryMB: 4096}, refused: true, wantCPUs: 2, wantMemory: 2048},
		{name: "memory raised, on, memory hot-add", power: "poweredOn", memAdd: true,
			spec: types.VirtualMachineConfigSpec{MemoryMB: 4096}, wantCPUs: 2, wantMemory: 4096},
		{name: "memory lowered, on, memory hot-add", power: "poweredOn", memAdd: true,
			spec: types.VirtualMachineConfigSpec{MemoryMB: 1024}, refused: true, wantCPUs: 2, wantMemory: 2048},
		{name: "CPUs raised, on, no hot-add", power: "poweredOn", memAdd: true,
			spec: types.VirtualMachineConfigSpec{NumCPUs: 4}, refused: true, wantCPUs: 2, wantMemory: 2048},
		{name: "CPUs raised, on, CPU hot-add", power: "poweredOn", cpuAdd: true,
			spec: types.VirtualMachineConfigSpec{NumCPUs: 4}, wantCPUs: 4, wantMemory: 2048, wantCPUAdd: true},
		{name: "CPUs lowered, on, CPU hot-add only", power: "poweredOn", cpuAdd: true,
			spec: types.VirtualMachineConfigSpec{NumCPUs: 1}, refused: true, wantCPUs: 2, wantMemory: 2048, wantCPUAdd: true},
		{name: "CPUs lowered, on, CPU hot-remove", power: "poweredOn", cpuRemove: true,
			spec: types.VirtualMachineConfigSpec{NumCPUs: 1}, wantCPUs: 1, wantMemory: 2048, wantCPURemove: true},
		{name: "all at once, one not allowed", power: "poweredOn", cpuAdd: true,
			spec: types.VirtualMachineConfigSpec{NumCPUs: 4, MemoryMB: 4096}, refused: true, wantCPUs: 2, wantMemory: 2048, wantCPUAdd: true},
		{name: "anything, off", power: "poweredOff",
			spec: types.VirtualMachineConfigSpec{NumCPUs: 4, MemoryMB: 1024}, wantCPUs: 4, wantMemory: 1024},
		{name: "hot-add turned on, on", power: "poweredOn",
			spec: types.VirtualMachineConfigSpec{CpuHotAddEnabled: yes}, refused: true, wantCPUs: 2, wantMemory: 2048},
		{name: "hot-add turned on, off", power: "poweredOff",
			spec: types.VirtualMachineConfigSpec{CpuHotAddEnabled: yes}, wantCPUs: 2, wantMemory: 2048, wantCPUAdd: true},
		{name: "hot-add left on, on", power: "poweredOn", cpuAdd: true,
			spec: types.VirtualMachineConfigSpec{CpuHotAddEnabled: yes}, wantCPUs: 2, wantMemory: 2048, wantCPUAdd: true},
		{name: "memory raised, suspended, memory hot-add", power: "suspended", memAdd: true,
			spec: types.VirtualMachineConfigSpec{MemoryMB: 4096}, refused: true, wantCPUs: 2, wantMemory: 2048},
		{name: "the same size, on", power: "poweredOn",
			spec: types.VirtualMachineConfigSpec{NumCPUs: 2, MemoryMB: 2048}, wantCPUs: 2, wantMemory: 2048},
		{name: "extra config only, on", power: "poweredOn",
			spec:     types.VirtualMachineConfigSpec{ExtraConfig: []types.BaseOptionValue{&types.OptionValue{Key: "k", Value: "v"}}},
			wantCPUs: 2, wantMemory: 2048},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("hp-%d", i)
			if _, err := p.Create(ctx, vmprovider.Spec{Name: name, Owner: vmprovider.Owner{UID: "u"}, CPUs: 2, MemoryMiB: 2048,
				CPUHotAdd: tt.cpuAdd, MemoryHotAdd: tt.memAdd}); err != nil {
				t.Fatal(err)
			}
			vm, err := finder.VirtualMachine(ctx, "/DC0/vm/"+name)
			if err != nil {
				t.Fatal(err)
			}
			if tt.cpuRemove {
				mustTask(t, func() (*object.Task, error) {
					return vm.Reconfigure(ctx, types.VirtualMachineConfigSpec{CpuHotRemoveEnabled: yes})
				})
			}
			if tt.power != types.VirtualMachinePowerStatePoweredOff {
				mustTask(t, func() (*object.Task, error) { return vm.PowerOn(ctx) })
			}
			if tt.power == types.VirtualMachinePowerStateSuspended {
				mustTask(t, func() (*object.Task, error) { return vm.Suspend(ctx) })
			}
			task, err := vm.Reconfigure(ctx, tt.spec)
			if err != nil {
				t.Fatalf("ReconfigVM_Task: %v, want a task", err)
			}
			err = task.Wait(ctx)
			switch {
			case tt.refused && !fault.Is(err, &types.InvalidPowerState{}):
				t.Errorf("the reconfigure's task: %v, want InvalidPowerState", err)
			case !tt.refused && err != nil:
				t.Errorf("the reconfigure's task: %v, want success", err)
			}
			var m mo.VirtualMachine
			if err := vm.Properties(ctx, vm.Reference(), []string{"config", "runtime.powerState"}, &m); err != nil {
				t.Fatal(err)
			}
			hw := m.Config.Hardware
			got := fmt.Sprintf("%d CPUs, %d MiB, CPU hot-add %t, hot-remove %t, memory hot-add %t, %s", hw.NumCPU, hw.MemoryMB,
				isSet(m.Config.CpuHotAddEnabled), isSet(m.Config.CpuHotRemoveEnabled), isSet(m.Config.MemoryHotAddEnabled), m.Runtime.PowerState)
			want := fmt.Sprintf("%d CPUs, %d MiB, CPU hot-add %t, hot-remove %t, memory hot-add %t, %s", tt.wantCPUs, tt.wantMemory,
				tt.wantCPUAdd, tt.wantCPURemove, tt.memAdd, tt.power)
			if got != want {
				t.Errorf("after the reconfigure: %s; want %s", got, want)
			}
		})
	}
}

// TestHotplug_ReportsChanges: a property collector waiting on a VM's size
// and hot-plug settings is told of a reconfigure's changes to them, as
// vCenter tells it.
func TestHotplug_ReportsChanges(t *testing.T) {
	s, p, finder := hotplugSim(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.Create(ctx, vmprovider.Spec{Name: "seen", Owner: vmprovider.Owner{UID: "u"}, MemoryMiB: 2048, MemoryHotAdd: true, PowerOn: true}); err != nil {
		t.Fatal(err)
	}
	vm, err := finder.VirtualMachine(ctx, "/DC0/vm/seen")
	if err != nil {
		t.Fatal(err)
	}
	vc, logout, err := vsphere.Connect(ctx, s.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logout(context.Background()) }()
	seen := make(chan int32, 16)
	done := make(chan error, 1)
	go func() {
		done <- property.Wait(ctx, property.DefaultCollector(vc), vm.Reference(), []string{"config.hardware.memoryMB"},
			func(changes []types.PropertyChange) bool {
				for _, c := range changes {
					if v, ok := c.Val.(int32); ok {
						seen <- v
						return v == 4096
					}
				}
				return false
			})
	}()
	if got := <-seen; got != 2048 {
		t.Fatalf("the collector first reported %d MiB, want 2048", got)
	}
	mustTask(t, func() (*object.Task, error) {
		return vm.Reconfigure(ctx, types.VirtualMachineConfigSpec{MemoryMB: 4096})
	})
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("property.Wait: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the collector never reported the memory raised to 4096 MiB")
	}
}

// mustTask starts a task and waits for it, failing the test on an error.
func mustTask(t *testing.T, start func() (*object.Task, error)) {
	t.Helper()
	task, err := start()
	if err == nil {
		err = task.Wait(context.Background())
	}
	if err != nil {
		t.Fatal(err)
	}
}

// isSet reports whether a vSphere flag is set and true.
func isSet(b *bool) bool { return b != nil && *b }
