package vsphere_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/deletionpolicy"
	simfaults "github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset/execute"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vmprovidertest"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

var ownerA = vmprovider.Owner{UID: "uid-a", Name: "default/set-a"}

// start runs a simulator and a provider logged in to it.
func start(t *testing.T) (*vcsimtest.Sim, *vsphere.Provider) {
	t.Helper()
	sim := vcsimtest.Start(t)
	p, err := vsphere.New(context.Background(), sim.Config())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return sim, p
}

// startCounted is start with the simulator counting its calls (and able
// to fail them): faults.Calls says what vCenter was asked.
func startCounted(t *testing.T) (*simfaults.Faults, *vcsimtest.Sim, *vsphere.Provider) {
	t.Helper()
	faults := &simfaults.Faults{}
	sim := vcsimtest.StartFaulty(t, faults)
	p, err := vsphere.New(context.Background(), sim.Config())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return faults, sim, p
}

// count returns how many VMs of the inventory are called name.
func count(t *testing.T, sim *vcsimtest.Sim, name string) int {
	t.Helper()
	n := 0
	for _, ref := range sim.Model.Map().All("VirtualMachine") {
		if ref.(*simulator.VirtualMachine).Name == name {
			n++
		}
	}
	return n
}

func TestVerify(t *testing.T) {
	_, p := start(t)
	if err := vmprovidertest.Verify(context.Background(), p, vmprovider.Spec{Name: "conf", CPUs: 2, MemoryMiB: 1024}); err != nil {
		t.Errorf("Verify(vsphere on vcsim):\n%v", err)
	}
}

func TestCreate_PlacementAndMark(t *testing.T) {
	sim, p := start(t)
	ctx := context.Background()
	vm, err := p.Create(ctx, vmprovider.Spec{Name: "web-0", Owner: ownerA, CPUs: 2, MemoryMiB: 2048, PowerOn: true})
	if err != nil {
		t.Fatal(err)
	}
	obj := sim.Model.Map().Get(mustRef(t, sim, "web-0")).(*simulator.VirtualMachine)
	pool := sim.Model.Map().Get(*obj.ResourcePool).(*simulator.ResourcePool)
	if cluster, ok := sim.Model.Map().Get(pool.Owner).(*simulator.ClusterComputeResource); !ok || cluster.Name != "DC0_C1" {
		t.Errorf("VM placed in pool owned by %v, want cluster DC0_C1", pool.Owner)
	}
	if obj.Config.Hardware.NumCPU != 2 || obj.Config.Hardware.MemoryMB != 2048 {
		t.Errorf("hardware %d CPUs %d MiB, want 2 and 2048", obj.Config.Hardware.NumCPU, obj.Config.Hardware.MemoryMB)
	}
	if vm.Power != vmprovider.PoweredOn || vm.Owner != ownerA.UID || vm.InstanceUUID != obj.Config.InstanceUuid {
		t.Errorf("Create returned %+v; want PoweredOn, owner %s, UUID %s", vm, ownerA.UID, obj.Config.InstanceUuid)
	}
}

func mustRef(t *testing.T, sim *vcsimtest.Sim, name string) types.ManagedObjectReference {
	t.Helper()
	for _, ref := range sim.Model.Map().All("VirtualMachine") {
		if vm := ref.(*simulator.VirtualMachine); vm.Name == name {
			return vm.Self
		}
	}
	t.Fatalf("no VM %s in vcsim", name)
	return types.ManagedObjectReference{}
}

// TestCreate_Concurrent creates the same name from many goroutines: one VM,
// every caller gets it, none sees DuplicateName.
func TestCreate_Concurrent(t *testing.T) {
	sim, p := start(t)
	var wg sync.WaitGroup
	uuids := make([]string, 6)
	errs := make([]error, 6)
	for i := range uuids {
		wg.Go(func() {
			vm, err := p.Create(context.Background(), vmprovider.Spec{Name: "same", Owner: ownerA})
			uuids[i], errs[i] = vm.InstanceUUID, err
		})
	}
	wg.Wait()
	for i := range uuids {
		if errs[i] != nil || uuids[i] != uuids[0] {
			t.Errorf("create #%d = %s, %v; want %s, nil", i, uuids[i], errs[i], uuids[0])
		}
	}
	if n := count(t, sim, "same"); n != 1 {
		t.Errorf("%d VMs called same, want 1", n)
	}
}

// TestCreate_LostResponse: the clone happened but its response was lost;
// creating again returns that VM instead of cloning twice.
func TestCreate_LostResponse(t *testing.T) {
	sim, p := start(t)
	ctx := context.Background()
	// What the first, lost create did on vCenter: a clone carrying our mark.
	clone(t, sim, "lost-0", map[string]string{vsphere.KeyOwnerUID: ownerA.UID})
	vm, err := p.Create(ctx, vmprovider.Spec{Name: "lost-0", Owner: ownerA, PowerOn: true})
	if err != nil {
		t.Fatalf("create after a lost response: %v", err)
	}
	if n := count(t, sim, "lost-0"); n != 1 || vm.Name != "lost-0" {
		t.Errorf("%d VMs called lost-0 (Create returned %+v), want 1", n, vm)
	}
}

// clone makes a VM behind the provider's back, with the given ExtraConfig.
func clone(t *testing.T, sim *vcsimtest.Sim, name string, extra map[string]string) {
	t.Helper()
	ctx := context.Background()
	c, err := simulatorClient(ctx, sim)
	if err != nil {
		t.Fatal(err)
	}
	f := find.NewFinder(c)
	dc, _ := f.Datacenter(ctx, "DC0")
	f.SetDatacenter(dc)
	tmpl, err := f.VirtualMachine(ctx, "DC0_H0_VM0")
	if err != nil {
		t.Fatal(err)
	}
	folder, _ := f.Folder(ctx, "/DC0/vm")
	pool, _ := f.ResourcePool(ctx, "/DC0/host/DC0_C1/Resources")
	poolRef := pool.Reference()
	spec := types.VirtualMachineCloneSpec{Location: types.VirtualMachineRelocateSpec{Pool: &poolRef}, Config: &types.VirtualMachineConfigSpec{}}
	for k, v := range extra {
		spec.Config.ExtraConfig = append(spec.Config.ExtraConfig, &types.OptionValue{Key: k, Value: v})
	}
	task, err := tmpl.Clone(ctx, folder, name, spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestForeignVM: a VM with a colliding name but no mark (or another owner's)
// is never modified or destroyed, and the error says why.
func TestForeignVM(t *testing.T) {
	sim, p := start(t)
	ctx := context.Background()
	clone(t, sim, "web-1", nil)
	clone(t, sim, "web-2", map[string]string{vsphere.KeyOwnerUID: "someone-else"})

	_, err := p.Create(ctx, vmprovider.Spec{Name: "web-1", Owner: ownerA, PowerOn: true})
	var notOwned *vmprovider.NotOwnedError
	if !errors.As(err, &notOwned) || !strings.Contains(err.Error(), `VM "web-1" exists without an ownership mark`) {
		t.Errorf("Create over an unmarked VM: %v, want a NotOwnedError explaining it", err)
	}
	for _, name := range []string{"web-1", "web-2"} {
		if err := p.Delete(ctx, name, ownerA.UID); !errors.Is(err, vmprovider.ErrNotOwned) {
			t.Errorf("Delete(%s): %v, want ErrNotOwned", name, err)
		}
		if err := p.SetPower(ctx, name, ownerA.UID, vmprovider.PoweredOn); !errors.Is(err, vmprovider.ErrNotOwned) {
			t.Errorf("SetPower(%s): %v, want ErrNotOwned", name, err)
		}
		vm, err := p.Get(ctx, name)
		if err != nil || vm.Power != vmprovider.PoweredOff || count(t, sim, name) != 1 {
			t.Errorf("after refused operations %s = %+v, %v; want it untouched", name, vm, err)
		}
	}
	if vms, err := p.List(ctx, ownerA.UID); err != nil || len(vms) != 0 {
		t.Errorf("List(%s) = %v, %v; want none", ownerA.UID, vms, err)
	}
}

func TestDelete_FromEveryState(t *testing.T) {
	sim, p := start(t)
	ctx := context.Background()
	for _, on := range []bool{true, false} {
		name := map[bool]string{true: "on", false: "off"}[on]
		if _, err := p.Create(ctx, vmprovider.Spec{Name: name, Owner: ownerA, PowerOn: on}); err != nil {
			t.Fatal(err)
		}
		for i := range 2 { // the second time it is already gone
			if err := p.Delete(ctx, name, ownerA.UID); err != nil {
				t.Errorf("Delete(%s) #%d: %v", name, i+1, err)
			}
		}
		if n := count(t, sim, name); n != 0 {
			t.Errorf("%d VMs called %s after Delete", n, name)
		}
	}
}

// TestFaults injects vCenter faults: each surfaces as an error and leaves
// no half-made VM behind.
func TestFaults(t *testing.T) {
	tests := []struct {
		method string
		op     func(p *vsphere.Provider) error
		wantVM int // VMs called "faulty" afterwards
	}{{
		method: "CloneVM_Task",
		op: func(p *vsphere.Provider) error {
			_, err := p.Create(context.Background(), vmprovider.Spec{Name: "faulty", Owner: ownerA, PowerOn: true})
			return err
		},
		wantVM: 0,
	}, {
		method: "PowerOnVM_Task",
		op: func(p *vsphere.Provider) error {
			_, err := p.Create(context.Background(), vmprovider.Spec{Name: "faulty", Owner: ownerA, PowerOn: true})
			return err
		},
		wantVM: 0,
	}, {
		method: "Destroy_Task",
		op: func(p *vsphere.Provider) error {
			if _, err := p.Create(context.Background(), vmprovider.Spec{Name: "faulty", Owner: ownerA}); err != nil {
				return nil // setup failed: reported by the nil error below
			}
			return p.Delete(context.Background(), "faulty", ownerA.UID)
		},
		wantVM: 1,
	}}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			sim, p := start(t)
			sim.Model.Service.AddFaultRule(&simulator.FaultInjectionRule{
				MethodName: tt.method, ObjectType: "*", ObjectName: "*", Probability: 1,
				FaultType: simulator.FaultTypeInvalidState, Message: "injected by the test", Enabled: true,
			})
			if err := tt.op(p); err == nil || !strings.Contains(err.Error(), "injected by the test") {
				t.Errorf("with %s failing: error %v, want the injected fault", tt.method, err)
			}
			if n := count(t, sim, "faulty"); n != tt.wantVM {
				t.Errorf("with %s failing: %d VMs left, want %d", tt.method, n, tt.wantVM)
			}
			sim.Model.Service.ClearFaultRules()
			if err := p.Delete(context.Background(), "faulty", ownerA.UID); err != nil || count(t, sim, "faulty") != 0 {
				t.Errorf("after the fault cleared, Delete: %v, %d VMs left", err, count(t, sim, "faulty"))
			}
		})
	}
}

// TestSessionExpiry terminates the provider's session behind its back; the
// next call logs in again and succeeds.
func TestSessionExpiry(t *testing.T) {
	sim, p := start(t)
	ctx := context.Background()
	if _, err := p.Create(ctx, vmprovider.Spec{Name: "before", Owner: ownerA}); err != nil {
		t.Fatal(err)
	}
	terminateAll(t, sim)
	vms, err := p.List(ctx, ownerA.UID)
	if err != nil || len(vms) != 1 {
		t.Fatalf("List after the session was terminated = %v, %v; want 1 VM", vms, err)
	}
	if _, err := p.Create(ctx, vmprovider.Spec{Name: "after", Owner: ownerA}); err != nil {
		t.Fatalf("Create after the session was terminated: %v", err)
	}
}

func TestNew_Errors(t *testing.T) {
	sim := vcsimtest.Start(t)
	ctx := context.Background()
	tests := []struct {
		desc string
		edit func(*vsphere.Config)
		want string
	}{
		{"wrong password", func(c *vsphere.Config) { c.Password = "wrong-Secr3t" }, "log in to"},
		{"untrusted certificate", func(c *vsphere.Config) { c.CABundle = nil }, "certificate"},
		{"missing datacenter", func(c *vsphere.Config) { c.Datacenter = "DC9" }, "datacenter DC9"},
		{"missing folder", func(c *vsphere.Config) { c.Folder = "/DC0/vm/nope" }, "folder /DC0/vm/nope"},
		{"ambiguous resource pool", func(c *vsphere.Config) { c.ResourcePool = "" }, "resource pool (default): default resource pool resolves to multiple instances"},
		{"single datastore is the default", func(c *vsphere.Config) { c.Datastore = "" }, ""},
		{"missing template", func(c *vsphere.Config) { c.Template = "no-such-vm" }, "template no-such-vm"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			cfg := sim.Config()
			tt.edit(&cfg)
			p, err := vsphere.New(ctx, cfg)
			if tt.want == "" { // a single datastore is the default: no error
				if err != nil {
					t.Errorf("New: %v", err)
				} else {
					_ = p.Close(ctx)
				}
				return
			}
			if err == nil {
				_ = p.Close(ctx)
				t.Fatalf("New succeeded, want an error mentioning %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New error %q, want it to mention %q", err, tt.want)
			}
			if errors.Is(err, vmprovider.ErrUnreachable) {
				t.Errorf("New error %q says vCenter did not answer; it did", err)
			}
			if login := tt.desc == "wrong password"; errors.Is(err, vsphere.ErrLogin) != login {
				t.Errorf("New error %q: errors.Is(err, ErrLogin) = %v, want %v", err, !login, login)
			}
			if strings.Contains(err.Error(), vcsimtest.Password) || strings.Contains(err.Error(), "wrong-Secr3t") {
				t.Errorf("New error %q reveals the password", err)
			}
		})
	}
	// A thumbprint instead of a CA bundle: verification stays on.
	cfg := sim.Config()
	cfg.CABundle, cfg.Thumbprint = nil, sim.Server.CertificateInfo().ThumbprintSHA256
	if p, err := vsphere.New(ctx, cfg); err != nil {
		t.Errorf("New with the server's thumbprint: %v", err)
	} else {
		_ = p.Close(ctx)
	}
	cfg.Thumbprint = strings.Repeat("AB:", 31) + "AB"
	if _, err := vsphere.New(ctx, cfg); err == nil || errors.Is(err, vmprovider.ErrUnreachable) {
		t.Errorf("New with a wrong thumbprint: %v; want a refusal that is not ErrUnreachable", err)
	}
	if s := sim.Config().String(); strings.Contains(s, vcsimtest.Password) || !strings.Contains(s, "<redacted>") {
		t.Errorf("Config.String() = %s, want the password redacted", s)
	}
}

// TestSet_Story keeps one owner's VMs in vcsim at 0→3→1→2→0 through
// vmprovider.Set: the survivor of the scale-down is kept on the way back up,
// every VM is powered on, and the template and other VMs are untouched.
func TestSet_Story(t *testing.T) {
	sim, p := start(t)
	ctx := context.Background()
	before := len(sim.Model.Map().All("VirtualMachine"))
	set := &vmprovider.Set{
		Provider: p,
		Template: vmprovider.Spec{Owner: ownerA, PowerOn: true},
		Policy:   deletionpolicy.Random{Seed: 3},
		Names:    naming.Random{Base: "test-rs", Source: rand.NewPCG(5, 6)},
		// vcsim (govmomi v0.56.0) has a data race between concurrent VM
		// destroys (one task updates the datastore summary while another
		// reads it unlocked), which -race reports; a real vCenter does not
		// need this.
		Options: execute.Options{MaxInFlight: 1},
	}
	var survivor string
	for _, desired := range []int{3, 1, 2, 0} {
		if _, _, err := set.Scale(ctx, desired, time.Now()); err != nil {
			t.Fatalf("Scale(%d): %v", desired, err)
		}
		vms, err := p.List(ctx, ownerA.UID)
		if err != nil || len(vms) != desired {
			t.Fatalf("after Scale(%d): List = %v, %v", desired, vms, err)
		}
		var names []string
		for _, vm := range vms {
			names = append(names, vm.Name)
			if vm.Power != vmprovider.PoweredOn || count(t, sim, vm.Name) != 1 {
				t.Errorf("after Scale(%d): %s is %s in %d copies; want one, powered on", desired, vm.Name, vm.Power, count(t, sim, vm.Name))
			}
		}
		switch desired {
		case 1:
			survivor = names[0]
		case 2:
			if !slices.Contains(names, survivor) {
				t.Errorf("after 1→2: %v lost the survivor %s", names, survivor)
			}
		}
	}
	if after := len(sim.Model.Map().All("VirtualMachine")); after != before {
		t.Errorf("vcsim holds %d VMs after 0→3→1→2→0, had %d", after, before)
	}
}

// countingClones counts CloneVM_Task requests in flight. The provider holds
// a task slot from before it sends the request until the task is done, so
// the peak is bounded by Config.MaxTasks.
type countingClones struct {
	soap.RoundTripper
	inFlight, peak atomic.Int64
}

func (c *countingClones) RoundTrip(ctx context.Context, req, res soap.HasFault) error {
	if _, ok := req.(*methods.CloneVM_TaskBody); ok {
		n := c.inFlight.Add(1)
		defer c.inFlight.Add(-1)
		for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
		}
	}
	return c.RoundTripper.RoundTrip(ctx, req, res)
}

// TestTaskBound: vcsim takes 100 ms to answer each clone request, so
// unbounded concurrent creates would all be in flight at once; with
// MaxClones 2, at most two are.
func TestTaskBound(t *testing.T) {
	sim := vcsimtest.Start(t, func(m *simulator.Model) {
		m.DelayConfig.MethodDelay = map[string]int{"CloneVM_Task": 100}
	})
	ctx := context.Background()
	c, err := simulatorClient(ctx, sim)
	if err != nil {
		t.Fatal(err)
	}
	counter := &countingClones{RoundTripper: c.RoundTripper}
	c.RoundTripper = counter
	cfg := sim.Config()
	cfg.MaxClones = 2
	p, err := vsphere.NewWithClient(ctx, c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			if _, err := p.Create(ctx, vmprovider.Spec{Name: fmt.Sprintf("bound-%d", i), Owner: ownerA}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if vms, err := p.List(ctx, ownerA.UID); err != nil || len(vms) != 6 {
		t.Fatalf("List = %d VMs, %v; want 6", len(vms), err)
	}
	if peak := counter.peak.Load(); peak != 2 {
		t.Errorf("peak clone requests in flight = %d, want exactly MaxClones (2)", peak)
	}
}
