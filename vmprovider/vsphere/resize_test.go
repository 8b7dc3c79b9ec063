package vsphere_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"

	simfaults "github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// sized is the spec of the VMs these tests resize: 2 CPUs, 2048 MiB,
// memory hot-add on, on revision r1 of base b1.
func sized(name string) vmprovider.Spec {
	return vmprovider.Spec{Name: name, Owner: ownerA, CPUs: 2, MemoryMiB: 2048, MemoryHotAdd: true, PowerOn: true,
		Revision: "r1", BaseRevision: "b1"}
}

// size is what a VM reports of its size, power and revisions.
type size struct {
	Power                  vmprovider.PowerState
	CPUs                   int32
	MemoryMiB              int64
	Revision, BaseRevision string
	InstanceUUID           string
}

func sizeOf(vm vmprovider.VM) size {
	return size{vm.Power, vm.CPUs, vm.MemoryMiB, vm.Revision, vm.BaseRevision, vm.InstanceUUID}
}

// TestResize_LiveHotAdd raises the memory of a running VM with memory
// hot-add on: one reconfigure, no power-off, the same VM with its new
// memory and revision, as Get, List, the watch and Cached report it; a
// repeat changes nothing.
func TestResize_LiveHotAdd(t *testing.T) {
	sim, calls, p, w, events := watching(t)
	ctx := context.Background()
	cached := vsphere.Cached{Provider: p, Watch: w}
	made, err := cached.Create(ctx, sized("hot-0"))
	if err != nil {
		t.Fatal(err)
	}
	if !made.MemoryHotAdd || made.CPUHotAdd || made.BaseRevision != "b1" || made.MemoryMiB != 2048 || made.CPUs != 2 {
		t.Fatalf("Create = %+v; want 2 CPUs, 2048 MiB, memory hot-add on, CPU hot-add off, base revision b1", made)
	}
	before := calls.Calls()
	to := vmprovider.Resize{MemoryMiB: 4096, Revision: "r2", BaseRevision: "b1"}
	if err := cached.Resize(ctx, "hot-0", ownerA.UID, to); err != nil {
		t.Fatalf("Resize: %v", err)
	}
	want := size{vmprovider.PoweredOn, 2, 4096, "r2", "b1", made.InstanceUUID}
	if got, err := cached.Get(ctx, "hot-0"); err != nil || sizeOf(got) != want {
		t.Errorf("Cached.Get right after Resize = %+v, %v; want %+v", sizeOf(got), err, want)
	}
	await(t, events, "hot-0 resized", func(e event) bool { return e.vm.Name == "hot-0" && sizeOf(e.vm) == want })
	if got, err := p.Get(ctx, "hot-0"); err != nil || sizeOf(got) != want {
		t.Errorf("Get = %+v, %v; want %+v", sizeOf(got), err, want)
	}
	if l, err := p.List(ctx, ownerA.UID); err != nil || len(l) != 1 || sizeOf(l[0]) != want {
		t.Errorf("List = %+v, %v; want hot-0 as %+v", l, err, want)
	}
	if l, err := cached.List(ctx, ownerA.UID); err != nil || len(l) != 1 || sizeOf(l[0]) != want {
		t.Errorf("Cached.List = %+v, %v; want hot-0 as %+v", l, err, want)
	}
	if err := cached.Resize(ctx, "hot-0", ownerA.UID, to); err != nil {
		t.Fatalf("Resize repeated: %v", err)
	}
	after := calls.Calls()
	for method, want := range map[string]int64{"ReconfigVM_Task": 1, "PowerOffVM_Task": 0, "ShutdownGuest": 0, "PowerOnVM_Task": 0} {
		if got := after[method] - before[method]; got != want {
			t.Errorf("%s calls: %d, want %d", method, got, want)
		}
	}
	if guest, hard, err := simfaults.PowerOffs(ctx, sim.Config(), "hot-0"); err != nil || guest+hard != 0 {
		t.Errorf("vCenter's events: %d guest shutdowns, %d hard power-offs (%v); want none", guest, hard, err)
	}
}

// TestResize_NeedsPowerCycle: lowering a running VM's memory without
// PowerCycle is refused with ErrNeedsPowerCycle, naming the change, and
// touches nothing.
func TestResize_NeedsPowerCycle(t *testing.T) {
	calls, _, p := startCounted(t)
	ctx := context.Background()
	made, err := p.Create(ctx, sized("cold-0"))
	if err != nil {
		t.Fatal(err)
	}
	before := calls.Calls()
	err = p.Resize(ctx, "cold-0", ownerA.UID, vmprovider.Resize{MemoryMiB: 1024, Revision: "r2", BaseRevision: "b1"})
	if !errors.Is(err, vmprovider.ErrNeedsPowerCycle) || !strings.Contains(err.Error(), "memory lowered from 2048 to 1024 MiB") {
		t.Errorf("Resize lowering memory = %v; want ErrNeedsPowerCycle naming the change", err)
	}
	after := calls.Calls()
	for _, method := range []string{"ReconfigVM_Task", "PowerOffVM_Task", "ShutdownGuest"} {
		if got := after[method] - before[method]; got != 0 {
			t.Errorf("%s calls: %d, want none", method, got)
		}
	}
	if got, err := p.Get(ctx, "cold-0"); err != nil || sizeOf(got) != sizeOf(made) {
		t.Errorf("after the refusal: %+v, %v; want it unchanged, %+v", sizeOf(got), err, sizeOf(made))
	}
}

// TestResize_PowerCycle lowers memory with PowerCycle: the VM is shut
// down through its guest when its tools run (else powered off), changed,
// and powered on again, or left off if it was suspended; the revision
// changes with the size.
func TestResize_PowerCycle(t *testing.T) {
	tests := []struct {
		name                string
		tools, suspend      bool
		wantGuest, wantHard int
		wantPower           vmprovider.PowerState
	}{
		{"guest shuts down", true, false, 1, 0, vmprovider.PoweredOn},
		{"no tools", false, false, 0, 1, vmprovider.PoweredOn},
		{"suspended", false, true, 0, 1, vmprovider.PoweredOff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, sim, p := startGrace(t, longGrace)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			made, err := p.Create(ctx, sized("cyc-0"))
			if err != nil {
				t.Fatal(err)
			}
			if tt.tools {
				if err := simfaults.ReportGuest(ctx, sim.Config(), "cyc-0", "10.0.0.10"); err != nil {
					t.Fatal(err)
				}
			}
			if tt.suspend {
				suspend(t, sim, "cyc-0")
			}
			err = p.Resize(ctx, "cyc-0", ownerA.UID, vmprovider.Resize{CPUs: 1, MemoryMiB: 1024, Revision: "r2", BaseRevision: "b1", PowerCycle: true})
			if err != nil {
				t.Fatalf("Resize with PowerCycle: %v", err)
			}
			want := size{tt.wantPower, 1, 1024, "r2", "b1", made.InstanceUUID}
			if got, err := p.Get(ctx, "cyc-0"); err != nil || sizeOf(got) != want {
				t.Errorf("after the power cycle: %+v, %v; want %+v", sizeOf(got), err, want)
			}
			guest, hard, err := simfaults.PowerOffs(ctx, sim.Config(), "cyc-0")
			if err != nil || guest != tt.wantGuest || hard != tt.wantHard {
				t.Errorf("vCenter's events: %d guest shutdowns, %d hard power-offs (%v); want %d, %d", guest, hard, err, tt.wantGuest, tt.wantHard)
			}
		})
	}
}

// TestResize_ReconfigureFails: when vCenter refuses the reconfigure of a
// power cycle, the VM is powered on again unchanged, and the error says
// so.
func TestResize_ReconfigureFails(t *testing.T) {
	f, sim, p := startGrace(t, longGrace)
	ctx := context.Background()
	made, err := p.Create(ctx, sized("fail-0"))
	if err != nil {
		t.Fatal(err)
	}
	lift := f.Refuse("ReconfigVM_Task", mustRef(t, sim, "fail-0"))
	defer lift()
	err = p.Resize(ctx, "fail-0", ownerA.UID, vmprovider.Resize{MemoryMiB: 1024, Revision: "r2", BaseRevision: "b1", PowerCycle: true})
	if err == nil || !strings.Contains(err.Error(), "the VM is unchanged and powered on again") {
		t.Errorf("Resize with its reconfigure refused = %v; want an error saying the VM is unchanged and on again", err)
	}
	if got, err := p.Get(ctx, "fail-0"); err != nil || sizeOf(got) != sizeOf(made) {
		t.Errorf("after the failed power cycle: %+v, %v; want it as it was, %+v", sizeOf(got), err, sizeOf(made))
	}
	if _, hard, err := simfaults.PowerOffs(ctx, sim.Config(), "fail-0"); err != nil || hard != 1 {
		t.Errorf("vCenter's events: %d hard power-offs (%v); want the one of the cycle", hard, err)
	}
}

// TestResize_RefusedWhileHeld: a live resize that vCenter refuses after
// all, because the VM's memory hot-add was turned off between the read
// and the reconfigure, wraps ErrNeedsPowerCycle and leaves the VM as it
// was. The reconfigure is held at the gate while that happens.
func TestResize_RefusedWhileHeld(t *testing.T) {
	f, sim, p := startCounted(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.Create(ctx, sized("race-0")); err != nil {
		t.Fatal(err)
	}
	held := f.Hold("ReconfigVM_Task")
	done := make(chan error, 1)
	go func() {
		done <- p.Resize(ctx, "race-0", ownerA.UID, vmprovider.Resize{MemoryMiB: 4096, Revision: "r2"})
	}()
	select {
	case <-held.Caught():
	case err := <-done:
		t.Fatalf("Resize returned %v before its reconfigure reached vCenter", err)
	case <-ctx.Done():
		t.Fatal("Resize's reconfigure never reached vCenter")
	}
	f.Hold("ReconfigVM_Task").Release() // later reconfigures pass
	c, err := simulatorClient(ctx, sim)
	if err != nil {
		t.Fatal(err)
	}
	vm := object.NewVirtualMachine(c, mustRef(t, sim, "race-0"))
	for _, step := range []func(context.Context) (*object.Task, error){
		vm.PowerOff,
		func(ctx context.Context) (*object.Task, error) {
			return vm.Reconfigure(ctx, types.VirtualMachineConfigSpec{MemoryHotAddEnabled: types.NewBool(false)})
		},
		vm.PowerOn,
	} {
		if task, err := step(ctx); err != nil || task.Wait(ctx) != nil {
			t.Fatalf("behind the provider's back: %v", err)
		}
	}
	held.Release()
	if err := <-done; !errors.Is(err, vmprovider.ErrNeedsPowerCycle) {
		t.Errorf("Resize refused by vCenter = %v; want ErrNeedsPowerCycle", err)
	}
	got, err := p.Get(ctx, "race-0")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(size{vmprovider.PoweredOn, 2, 2048, "r1", "b1", got.InstanceUUID}, sizeOf(got)); diff != "" {
		t.Errorf("after the refusal (-want +got):\n%s", diff)
	}
}

// TestResize_Refusals: another owner's VM is refused with a
// *NotOwnedError, a VM that is gone is ErrNotFound, and a negative size
// is an invalid spec; none changes anything.
func TestResize_Refusals(t *testing.T) {
	calls, _, p := startCounted(t)
	ctx := context.Background()
	if _, err := p.Create(ctx, sized("own-0")); err != nil {
		t.Fatal(err)
	}
	before := calls.Calls()["ReconfigVM_Task"]
	var notOwned *vmprovider.NotOwnedError
	if err := p.Resize(ctx, "own-0", "uid-b", vmprovider.Resize{MemoryMiB: 4096}); !errors.As(err, &notOwned) || notOwned.Got != ownerA.UID {
		t.Errorf("Resize by another owner = %v; want a *NotOwnedError naming %s", err, ownerA.UID)
	}
	if err := p.Resize(ctx, "gone-0", ownerA.UID, vmprovider.Resize{MemoryMiB: 4096}); !errors.Is(err, vmprovider.ErrNotFound) {
		t.Errorf("Resize of a VM that is gone = %v; want ErrNotFound", err)
	}
	if err := p.Resize(ctx, "own-0", ownerA.UID, vmprovider.Resize{MemoryMiB: -1}); !errors.Is(err, vmprovider.ErrInvalidSpec) {
		t.Errorf("Resize to -1 MiB = %v; want ErrInvalidSpec", err)
	}
	if got := calls.Calls()["ReconfigVM_Task"] - before; got != 0 {
		t.Errorf("ReconfigVM_Task calls: %d, want none", got)
	}
}

// suspend suspends the VM called name behind the provider's back.
func suspend(t *testing.T, sim *vcsimtest.Sim, name string) {
	t.Helper()
	ctx := context.Background()
	c, err := simulatorClient(ctx, sim)
	if err != nil {
		t.Fatal(err)
	}
	task, err := object.NewVirtualMachine(c, mustRef(t, sim, name)).Suspend(ctx)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestInPlaceFor_HotAddBounds: the bounds a host sets on a running VM's
// memory hot-add (config.hotPlugMemoryLimit, hotPlugMemoryIncrementSize)
// and its cores per socket reach VM, so that InPlaceFor asks for a power
// cycle, or a new VM, instead of a live reconfigure vCenter refuses.
func TestInPlaceFor_HotAddBounds(t *testing.T) {
	sim, p := start(t)
	ctx := context.Background()
	want := vmprovider.Spec{Name: "web-0", Owner: ownerA, CPUs: 2, MemoryMiB: 2048, CPUHotAdd: true, MemoryHotAdd: true, PowerOn: true}
	want.BaseRevision = vmprovider.BaseRevision(want)
	if _, err := p.Create(ctx, want); err != nil {
		t.Fatal(err)
	}
	// What ESX sets when it powers the VM on; the simulator sets none.
	m := sim.Model.Map()
	vm := m.Get(mustRef(t, sim, "web-0")).(*simulator.VirtualMachine)
	sc := &simulator.Context{Context: ctx, Map: m}
	m.WithLock(sc, vm, func() {
		m.Update(sc, vm, []types.PropertyChange{{Name: "config.hotPlugMemoryLimit", Val: int64(4096)},
			{Name: "config.hotPlugMemoryIncrementSize", Val: int64(1024)},
			{Name: "config.hardware.numCoresPerSocket", Val: int32(2)}})
	})
	got, err := p.Get(ctx, "web-0")
	if err != nil {
		t.Fatal(err)
	}
	if got.MemoryHotAddLimitMiB != 4096 || got.MemoryHotAddIncrementMiB != 1024 || got.CoresPerSocket != 2 {
		t.Fatalf("Get = %+v, want the hot-add bounds 4096 and 1024 MiB and 2 cores per socket", got)
	}
	for _, tc := range []struct {
		cpus   int32
		memory int64
		kind   replicaset.InPlace
	}{
		{4, 4096, replicaset.InPlaceLive},
		{2, 8192, replicaset.InPlacePowerCycle}, // past the limit
		{2, 3584, replicaset.InPlacePowerCycle}, // off the increment
		{3, 2048, replicaset.InPlaceNone},       // not whole sockets
	} {
		to := want
		to.CPUs, to.MemoryMiB = tc.cpus, tc.memory
		if kind, why := vmprovider.InPlaceFor(got, to); kind != tc.kind {
			t.Errorf("InPlaceFor(%d CPUs, %d MiB) = %v (%s), want %v", tc.cpus, tc.memory, kind, why, tc.kind)
		}
	}
}
