package vsphere_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"

	simfaults "github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// longGrace is a grace no test waits out: a Delete that waited for it
// would fail on its test's deadline instead.
const longGrace = time.Hour

// TestDelete_GuestFirst deletes a powered-on VM under each way its guest
// can answer, and checks, from the calls vCenter served and the events it
// recorded, whether the VM was shut down through its guest or powered off.
func TestDelete_GuestFirst(t *testing.T) {
	tests := []struct {
		name  string
		grace time.Duration
		tools bool // the VM reports VMware Tools running
		red   bool // and a red heartbeat
		// moment makes the guest's answer, before Delete; it returns what
		// ends it.
		moment func(f *simfaults.Faults, vm types.ManagedObjectReference) func()
		// the calls of ShutdownGuest and PowerOffVM_Task vCenter got, and
		// the guest shutdowns and hard power-offs it recorded
		wantShutdownCalls, wantPowerOffCalls int64
		wantGuest, wantHard                  int
		waits                                bool // Delete waits out the grace
	}{{
		name: "a guest that shuts down", grace: longGrace, tools: true,
		wantShutdownCalls: 1, wantPowerOffCalls: 0, wantGuest: 1, wantHard: 0,
	}, {
		name: "a guest that ignores the request", grace: 300 * time.Millisecond, tools: true,
		moment: func(f *simfaults.Faults, vm types.ManagedObjectReference) func() {
			return f.Ignore("ShutdownGuest", vm)
		},
		wantShutdownCalls: 1, wantPowerOffCalls: 1, wantGuest: 0, wantHard: 1, waits: true,
	}, {
		name: "a request vCenter does not answer", grace: 300 * time.Millisecond, tools: true,
		moment: func(f *simfaults.Faults, _ types.ManagedObjectReference) func() {
			return f.Hold("ShutdownGuest").Drop
		},
		wantShutdownCalls: 1, wantPowerOffCalls: 1, wantGuest: 0, wantHard: 1, waits: true,
	}, {
		name: "a request vCenter refuses", grace: longGrace, tools: true,
		moment: func(f *simfaults.Faults, vm types.ManagedObjectReference) func() {
			return f.Refuse("ShutdownGuest", vm)
		},
		wantShutdownCalls: 1, wantPowerOffCalls: 1, wantGuest: 0, wantHard: 1,
	}, {
		name: "tools not running", grace: longGrace, tools: false,
		wantShutdownCalls: 0, wantPowerOffCalls: 1, wantGuest: 0, wantHard: 1,
	}, {
		// A hung guest: its tools run, but its heartbeat is red; asking it
		// would only wait out the grace before a replacement.
		name: "a guest whose heartbeat is red", grace: longGrace, tools: true,
		moment:            func(_ *simfaults.Faults, _ types.ManagedObjectReference) func() { return func() {} },
		red:               true,
		wantShutdownCalls: 0, wantPowerOffCalls: 1, wantGuest: 0, wantHard: 1,
	}, {
		name: "a negative grace", grace: -1, tools: true,
		wantShutdownCalls: 0, wantPowerOffCalls: 1, wantGuest: 0, wantHard: 1,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, sim, p := startGrace(t, tt.grace)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			runningVM(t, sim, p, "web-0", tt.tools)
			if tt.red {
				if err := simfaults.SetHeartbeat(ctx, sim.Config(), "web-0", vmprovider.HeartbeatRed); err != nil {
					t.Fatal(err)
				}
			}
			if tt.moment != nil {
				defer tt.moment(f, mustRef(t, sim, "web-0"))()
			}
			before := f.Calls()
			start := time.Now()
			err := p.Delete(ctx, "web-0", ownerA.UID)
			took := time.Since(start)
			if err != nil {
				t.Fatalf("Delete: %v", err)
			}
			if n := count(t, sim, "web-0"); n != 0 {
				t.Errorf("%d VMs called web-0 after Delete", n)
			}
			calls := f.Calls()
			if got, want := calls["ShutdownGuest"]-before["ShutdownGuest"], tt.wantShutdownCalls; got != want {
				t.Errorf("ShutdownGuest calls: %d, want %d", got, want)
			}
			if got, want := calls["PowerOffVM_Task"]-before["PowerOffVM_Task"], tt.wantPowerOffCalls; got != want {
				t.Errorf("PowerOffVM_Task calls: %d, want %d", got, want)
			}
			guest, hard, err := simfaults.PowerOffs(ctx, sim.Config(), "web-0")
			if err != nil || guest != tt.wantGuest || hard != tt.wantHard {
				t.Errorf("vCenter's events: %d guest shutdowns, %d hard power-offs (%v); want %d, %d",
					guest, hard, err, tt.wantGuest, tt.wantHard)
			}
			if tt.waits && took < tt.grace {
				t.Errorf("Delete took %v, less than the grace %v that nothing but its end could end", took, tt.grace)
			}
		})
	}
}

// TestDelete_CancelledWhileWaiting cancels a Delete while it waits for a
// guest that does not shut down: Delete returns at once with the
// cancellation and leaves the VM running (no hard power-off). A retry
// does not ask the guest again, nor give it a new grace: it waits for the
// rest of the first one, then powers the VM off and destroys it.
func TestDelete_CancelledWhileWaiting(t *testing.T) {
	const grace = 2 * time.Second
	f, sim, p := startGrace(t, grace)
	ctx := context.Background()
	runningVM(t, sim, p, "web-0", true)
	defer f.Ignore("ShutdownGuest", mustRef(t, sim, "web-0"))()
	// The only long poll from here on is Delete's wait for the power-off.
	wait := f.Hold("WaitForUpdatesEx")
	defer wait.Release()

	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Delete(dctx, "web-0", ownerA.UID) }()
	select {
	case <-wait.Caught():
	case err := <-done:
		t.Fatalf("Delete returned %v before it waited for the guest", err)
	case <-time.After(30 * time.Second):
		t.Fatal("Delete did not wait for the guest's power-off within 30 s")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Delete cancelled while waiting: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Delete did not return within 10 s of its cancellation")
	}
	wait.Release()
	if got := f.Calls()["PowerOffVM_Task"]; got != 0 {
		t.Errorf("PowerOffVM_Task calls after the cancellation: %d, want none", got)
	}
	if vm, err := p.Get(ctx, "web-0"); err != nil || vm.Power != vmprovider.PoweredOn {
		t.Errorf("after the cancelled Delete: %+v, %v; want the VM left powered on", vm, err)
	}

	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	defer rcancel()
	if err := p.Delete(rctx, "web-0", ownerA.UID); err != nil {
		t.Fatalf("Delete retried: %v", err)
	}
	if n := count(t, sim, "web-0"); n != 0 {
		t.Errorf("%d VMs called web-0 after the retried Delete", n)
	}
	calls := f.Calls()
	if calls["ShutdownGuest"] != 1 || calls["PowerOffVM_Task"] != 1 {
		t.Errorf("ShutdownGuest %d, PowerOffVM_Task %d calls in all; want 1 and 1: the guest asked once, then powered off",
			calls["ShutdownGuest"], calls["PowerOffVM_Task"])
	}
	guest, hard, err := simfaults.PowerOffs(ctx, sim.Config(), "web-0")
	if err != nil || guest != 0 || hard != 1 {
		t.Errorf("vCenter's events: %d guest shutdowns, %d hard power-offs (%v); want 0, 1", guest, hard, err)
	}
}

// TestNew_ShutdownGrace: a grace over MaxShutdownGrace is refused as a
// configuration error by New and NewWithClient; MaxShutdownGrace itself
// is accepted.
func TestNew_ShutdownGrace(t *testing.T) {
	sim := vcsimtest.Start(t)
	ctx := context.Background()
	cfg := sim.Config()
	cfg.ShutdownGrace = vsphere.MaxShutdownGrace + time.Nanosecond
	if _, err := vsphere.New(ctx, cfg); !errors.Is(err, vsphere.ErrConfig) {
		t.Errorf("New with ShutdownGrace %v: %v, want ErrConfig", cfg.ShutdownGrace, err)
	}
	c, err := simulatorClient(ctx, sim)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vsphere.NewWithClient(ctx, c, cfg); !errors.Is(err, vsphere.ErrConfig) {
		t.Errorf("NewWithClient with ShutdownGrace %v: %v, want ErrConfig", cfg.ShutdownGrace, err)
	}
	cfg.ShutdownGrace = vsphere.MaxShutdownGrace
	p, err := vsphere.New(ctx, cfg)
	if err != nil {
		t.Fatalf("New with ShutdownGrace %v: %v", cfg.ShutdownGrace, err)
	}
	_ = p.Close(ctx)
}

// startGrace is startCounted with the provider's ShutdownGrace set.
func startGrace(t *testing.T, grace time.Duration) (*simfaults.Faults, *vcsimtest.Sim, *vsphere.Provider) {
	t.Helper()
	faults := &simfaults.Faults{}
	sim := vcsimtest.StartFaulty(t, faults)
	cfg := sim.Config()
	cfg.ShutdownGrace = grace
	p, err := vsphere.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return faults, sim, p
}

// runningVM creates a powered-on VM called name, owned by ownerA, and, with
// tools, has the simulator report its VMware Tools running.
func runningVM(t *testing.T, sim *vcsimtest.Sim, p *vsphere.Provider, name string, tools bool) {
	t.Helper()
	ctx := context.Background()
	if _, err := p.Create(ctx, vmprovider.Spec{Name: name, Owner: ownerA, PowerOn: true}); err != nil {
		t.Fatal(err)
	}
	if !tools {
		return
	}
	if err := simfaults.ReportGuest(ctx, sim.Config(), name, "10.0.0.10"); err != nil {
		t.Fatal(err)
	}
	if vm, err := p.Get(ctx, name); err != nil || !vm.ToolsRunning {
		t.Fatalf("after ReportGuest: %+v, %v; want tools running", vm, err)
	}
}

// TestDelete_GuestWithoutStateChange: a guest whose tools say it does not
// support power state changes (guest.guestStateChangeSupported false) is
// not asked to shut down: the VM is powered off at once.
func TestDelete_GuestWithoutStateChange(t *testing.T) {
	f, sim, p := startGrace(t, longGrace)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runningVM(t, sim, p, "web-0", true)
	m := sim.Model.Map()
	vm := m.Get(mustRef(t, sim, "web-0")).(*simulator.VirtualMachine)
	sc := &simulator.Context{Context: ctx, Map: m}
	m.WithLock(sc, vm, func() {
		m.Update(sc, vm, []types.PropertyChange{{Name: "guest.guestStateChangeSupported", Val: false}})
	})
	if err := p.Delete(ctx, "web-0", ownerA.UID); err != nil {
		t.Fatal(err)
	}
	if calls := f.Calls(); calls["ShutdownGuest"] != 0 || calls["PowerOffVM_Task"] != 1 {
		t.Errorf("ShutdownGuest %d, PowerOffVM_Task %d calls; want 0 and 1", calls["ShutdownGuest"], calls["PowerOffVM_Task"])
	}
}
