package vsphere_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/deletionpolicy"
	simfaults "github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/naming"
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
		waits                                bool // the VM is gone only once the grace has passed
		// the guest took the request: Delete answers ErrDeleting, and the
		// provider finishes on its own
		async bool
	}{{
		// The simulator's guest is off by the time vCenter answers, so the
		// VM is destroyed in the same call.
		name: "a guest that shuts down", grace: longGrace, tools: true,
		wantShutdownCalls: 1, wantPowerOffCalls: 0, wantGuest: 1, wantHard: 0,
	}, {
		name: "a guest that ignores the request", grace: 300 * time.Millisecond, tools: true,
		moment: func(f *simfaults.Faults, vm types.ManagedObjectReference) func() {
			return f.Ignore("ShutdownGuest", vm)
		},
		wantShutdownCalls: 1, wantPowerOffCalls: 1, wantGuest: 0, wantHard: 1, waits: true, async: true,
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
			if tt.async {
				if !errors.Is(err, vmprovider.ErrDeleting) {
					t.Fatalf("Delete of a VM whose guest took the request: %v, want ErrDeleting", err)
				}
				waitFor(t, "web-0 gone", func() bool {
					err = p.Delete(ctx, "web-0", ownerA.UID)
					return !errors.Is(err, vmprovider.ErrDeleting)
				})
			}
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
				t.Errorf("the VM was gone after %v, less than the grace %v that nothing but its end could end", took, tt.grace)
			}
		})
	}
}

// TestDelete_HoldsNoOne: a Delete whose guest took the request to shut
// down returns at once (ErrDeleting) rather than wait out the grace; the
// VM is listed as Deleting and refused to other methods; a second Delete
// does not ask the guest again; the provider powers the VM off once the
// grace has passed and destroys it. The moment is made by holding the
// provider's wait for the power-off.
func TestDelete_HoldsNoOne(t *testing.T) {
	const grace = 2 * time.Second
	f, sim, p := startGrace(t, grace)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runningVM(t, sim, p, "web-0", true)
	defer f.Ignore("ShutdownGuest", mustRef(t, sim, "web-0"))()
	// The only long poll from here on is the provider's wait for the
	// power-off.
	wait := f.Hold("WaitForUpdatesEx")
	defer wait.Release()

	if err := p.Delete(ctx, "web-0", ownerA.UID); !errors.Is(err, vmprovider.ErrDeleting) {
		t.Fatalf("Delete of a VM whose guest took the request: %v, want ErrDeleting", err)
	}
	<-wait.Caught() // the provider waits for the guest, Delete has returned
	if vms, err := p.List(ctx, ownerA.UID); err != nil || len(vms) != 1 || !vms[0].Deleting {
		t.Errorf("List while the guest shuts down = %+v, %v; want web-0 Deleting", vms, err)
	}
	if err := p.SetPower(ctx, "web-0", ownerA.UID, vmprovider.PoweredOn); !errors.Is(err, vmprovider.ErrDeleting) {
		t.Errorf("SetPower while the guest shuts down: %v, want ErrDeleting", err)
	}
	if err := p.Delete(ctx, "web-0", "uid-b"); !errors.Is(err, vmprovider.ErrNotOwned) {
		t.Errorf("Delete by another owner: %v, want ErrNotOwned", err)
	}
	if err := p.Delete(ctx, "web-0", ownerA.UID); !errors.Is(err, vmprovider.ErrDeleting) {
		t.Errorf("Delete again while the guest shuts down: %v, want ErrDeleting", err)
	}
	if got := f.Calls()["PowerOffVM_Task"]; got != 0 {
		t.Errorf("PowerOffVM_Task calls within the grace: %d, want none", got)
	}
	wait.Release()
	waitFor(t, "web-0 gone", func() bool { return p.Delete(ctx, "web-0", ownerA.UID) == nil })
	if n := count(t, sim, "web-0"); n != 0 {
		t.Errorf("%d VMs called web-0 once Delete answered nil", n)
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

// TestSet_DeleteHoldsNoPass: a Set scaling down a VM whose guest takes
// an hour to shut down finishes its pass at once; the VM is planned as
// being deleted, so the next pass deletes nothing more and creates
// nothing.
func TestSet_DeleteHoldsNoPass(t *testing.T) {
	f, sim, p := startGrace(t, longGrace)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runningVM(t, sim, p, "web-0", true)
	runningVM(t, sim, p, "web-1", true)
	for _, name := range []string{"web-0", "web-1"} {
		defer f.Ignore("ShutdownGuest", mustRef(t, sim, name))()
	}
	s := &vmprovider.Set{Provider: p, Template: vmprovider.Spec{Owner: ownerA, PowerOn: true},
		Policy: deletionpolicy.Newest{}, Names: naming.Indexed{Base: "web"}}
	now := time.Now()
	plan, _, err := s.Scale(ctx, 1, now)
	if err != nil || len(plan.Delete) != 1 {
		t.Fatalf("scale 2 → 1: plan %v, %v; want one VM deleted, no error", plan, err)
	}
	plan, _, err = s.Scale(ctx, 1, now)
	if err != nil || len(plan.Delete) != 0 || plan.Create != 0 || len(plan.Deleting) != 1 {
		t.Errorf("the pass after: plan %v, %v; want the VM being deleted left to finish, nothing else", plan, err)
	}
	if n := f.Calls()["ShutdownGuest"]; n != 1 {
		t.Errorf("ShutdownGuest calls %d, want 1", n)
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
