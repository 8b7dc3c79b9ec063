package vsphere_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"

	simgate "github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// watching runs a simulator (counting calls), a provider and a watch of it
// for the test; events receives every change the watch reports.
func watching(t *testing.T) (*vcsimtest.Sim, *simgate.Faults, *vsphere.Provider, *vsphere.Watch, <-chan event) {
	t.Helper()
	return watchingFields(t, vsphere.AllFields)
}

// watchingFields is watching with a watch that keeps only fields.
func watchingFields(t *testing.T, fields vsphere.Fields) (*vcsimtest.Sim, *simgate.Faults, *vsphere.Provider, *vsphere.Watch, <-chan event) {
	t.Helper()
	calls := &simgate.Faults{}
	sim := vcsimtest.StartFaulty(t, calls)
	p, err := vsphere.New(context.Background(), sim.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) }) // after the watch stops
	w := vsphere.NewWatch(p)
	w.SetFields(fields)
	events := make(chan event, 256)
	w.OnChange(func(vm vmprovider.VM, gone bool) { events <- event{vm, gone} })
	runWatch(t, w)
	select {
	case <-w.Synced():
	case <-time.After(30 * time.Second):
		t.Fatal("the watch never synced")
	}
	return sim, calls, p, w, events
}

type event struct {
	vm   vmprovider.VM
	gone bool
}

// await reads events until one satisfies ok.
func await(t *testing.T, events <-chan event, what string, ok func(event) bool) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case e := <-events:
			if ok(e) {
				return
			}
		case <-timeout:
			t.Fatalf("the watch never reported %s", what)
		}
	}
}

// TestWatch_FollowsChanges: a VM created, powered off, given a guest
// address and destroyed behind the cache's back is reported at each step,
// and Cached answers from what the watch saw.
func TestWatch_FollowsChanges(t *testing.T) {
	sim, _, p, w, events := watching(t)
	ctx := context.Background()
	cached := vsphere.Cached{Provider: p, Watch: w}
	if _, err := p.Create(ctx, vmprovider.Spec{Name: "w-0", Owner: ownerA, PowerOn: true}); err != nil {
		t.Fatal(err)
	}
	await(t, events, "w-0 on", func(e event) bool {
		return e.vm.Name == "w-0" && !e.gone && e.vm.Power == vmprovider.PoweredOn && e.vm.Owner == ownerA.UID && e.vm.OwnerName == ownerA.Name
	})
	if err := p.SetPower(ctx, "w-0", ownerA.UID, vmprovider.PoweredOff); err != nil {
		t.Fatal(err)
	}
	await(t, events, "w-0 off", func(e event) bool { return e.vm.Name == "w-0" && e.vm.Power == vmprovider.PoweredOff })
	if err := p.SetPower(ctx, "w-0", ownerA.UID, vmprovider.PoweredOn); err != nil {
		t.Fatal(err)
	}
	if err := simgate.ReportGuest(ctx, sim.Config(), "w-0", "10.3.0.4"); err != nil {
		t.Fatal(err)
	}
	await(t, events, "w-0's address", func(e event) bool {
		return e.vm.Name == "w-0" && slices.Equal(e.vm.IPAddresses, []string{"10.3.0.4"}) && e.vm.Heartbeat == vmprovider.HeartbeatGreen
	})
	if vm, err := cached.Get(ctx, "w-0"); err != nil || !slices.Equal(vm.IPAddresses, []string{"10.3.0.4"}) {
		t.Errorf("Cached.Get = %+v, %v; want the address", vm, err)
	}
	if l, err := cached.List(ctx, ownerA.UID); err != nil || len(l) != 1 {
		t.Errorf("Cached.List = %v, %v; want w-0", l, err)
	}
	if err := p.Delete(ctx, "w-0", ownerA.UID); err != nil {
		t.Fatal(err)
	}
	await(t, events, "w-0 gone", func(e event) bool { return e.vm.Name == "w-0" && e.gone })
	if _, err := cached.Get(ctx, "w-0"); !errors.Is(err, vmprovider.ErrNotFound) {
		t.Errorf("Cached.Get after the destroy = %v, want ErrNotFound", err)
	}
}

// TestCached_WritesThrough: what Cached creates or destroys is in its
// answers at once, before the watch reports it.
func TestCached_WritesThrough(t *testing.T) {
	_, _, p, w, _ := watching(t)
	ctx := context.Background()
	cached := vsphere.Cached{Provider: p, Watch: w}
	if _, err := cached.Create(ctx, vmprovider.Spec{Name: "wt", Owner: ownerA, PowerOn: true}); err != nil {
		t.Fatal(err)
	}
	if vm, err := cached.Get(ctx, "wt"); err != nil || vm.Power != vmprovider.PoweredOn {
		t.Errorf("Get right after Create = %+v, %v", vm, err)
	}
	if err := cached.Delete(ctx, "wt", ownerA.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := cached.Get(ctx, "wt"); !errors.Is(err, vmprovider.ErrNotFound) {
		t.Errorf("Get right after Delete = %v, want ErrNotFound", err)
	}
}

// TestWatch_SettledCostsNoCalls: once synced, reads through Cached cost
// vCenter nothing; only the watch's long poll reaches it.
func TestWatch_SettledCostsNoCalls(t *testing.T) {
	_, calls, p, w, events := watching(t)
	ctx := context.Background()
	for i := range 5 {
		if _, err := p.Create(ctx, vmprovider.Spec{Name: "s-" + string(rune('a'+i)), Owner: ownerA, PowerOn: true}); err != nil {
			t.Fatal(err)
		}
	}
	// The watch catches up: wait until it has reported every VM powered on,
	// however slow the machine, rather than for a fixed time.
	on := map[string]bool{}
	await(t, events, "all five VMs powered on", func(e event) bool {
		if !e.gone && e.vm.Power == vmprovider.PoweredOn && e.vm.Owner == ownerA.UID {
			on[e.vm.Name] = true
		}
		return len(on) == 5
	})
	cached := vsphere.Cached{Provider: p, Watch: w}
	before := calls.Calls()
	for range 100 {
		if l, err := cached.List(ctx, ownerA.UID); err != nil || len(l) != 5 {
			t.Fatalf("List = %d VMs, %v; want 5", len(l), err)
		}
		if _, err := cached.Get(ctx, "s-a"); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second)
	after := calls.Calls()
	for m, n := range after {
		if m != "WaitForUpdatesEx" && n != before[m] {
			t.Errorf("%s: %d calls while settled, want 0", m, n-before[m])
		}
	}
}

// TestWatch_SurvivesLostSession: when every session is terminated, the
// watch builds its collector again and reports what changed meanwhile.
func TestWatch_SurvivesLostSession(t *testing.T) {
	sim, _, _, w, events := watching(t)
	ctx := context.Background()
	terminateAll(t, sim)
	other, err := vsphere.New(ctx, sim.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Close(ctx) }()
	if _, err := other.Create(ctx, vmprovider.Spec{Name: "after-loss", Owner: ownerA}); err != nil {
		t.Fatal(err)
	}
	await(t, events, "the VM made after the session was lost", func(e event) bool { return e.vm.Name == "after-loss" && !e.gone })
	t.Logf("watch restarts: %d", w.Restarts())
}

// TestCached_NeverGoesBack: right after Cached.Create returned a powered-on
// VM, reads never show an older state that the watch had still on its way
// (the clone's powered-off VM), and right after Delete never show it again.
func TestCached_NeverGoesBack(t *testing.T) {
	_, _, p, w, _ := watching(t)
	ctx := context.Background()
	cached := vsphere.Cached{Provider: p, Watch: w}
	for i := range 10 {
		name := fmt.Sprintf("nb-%d", i)
		if _, err := cached.Create(ctx, vmprovider.Spec{Name: name, Owner: ownerA, PowerOn: true}); err != nil {
			t.Fatal(err)
		}
		for range 20 {
			vm, err := cached.Get(ctx, name)
			if err != nil || vm.Power != vmprovider.PoweredOn {
				t.Fatalf("Get(%s) after Create = %s, %v; want PoweredOn", name, vm.Power, err)
			}
			if l, err := cached.List(ctx, ownerA.UID); err != nil || len(l) != i+1 {
				t.Fatalf("List after creating %s = %d VMs, %v; want %d", name, len(l), err, i+1)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for i := range 10 {
		name := fmt.Sprintf("nb-%d", i)
		if err := cached.Delete(ctx, name, ownerA.UID); err != nil {
			t.Fatal(err)
		}
		for range 20 {
			if _, err := cached.Get(ctx, name); !errors.Is(err, vmprovider.ErrNotFound) {
				t.Fatalf("Get(%s) after Delete = %v, want ErrNotFound", name, err)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// TestGuest_LinkLocalIsNoAddress: a guest that reports only a link-local
// address (IPv6's fe80::, before DHCP answers) has no address, so it is not
// ready by address.
func TestGuest_LinkLocalIsNoAddress(t *testing.T) {
	sim, p := start(t)
	ctx := context.Background()
	if _, err := p.Create(ctx, vmprovider.Spec{Name: "ll", Owner: ownerA, PowerOn: true}); err != nil {
		t.Fatal(err)
	}
	if err := simgate.ReportGuest(ctx, sim.Config(), "ll", "fe80::250:56ff:fe8a:1"); err != nil {
		t.Fatal(err)
	}
	vm, err := p.Get(ctx, "ll")
	if err != nil {
		t.Fatal(err)
	}
	if len(vm.IPAddresses) != 0 || vmprovider.ReadyWhenIPAddress.Ready(vm) {
		t.Errorf("addresses %v, ready by address %v; want none, false", vm.IPAddresses, vmprovider.ReadyWhenIPAddress.Ready(vm))
	}
}

// TestWatch_ReportsDestroysAmidClones destroys VMs behind the cache's back
// while others are cloned: the watch must report every one gone and every
// new one there. On a filter rooted at a bare container view, govmomi's
// simulator re-sent every VM as new whenever the view changed and dropped
// the leaves of that batch, so destroyed VMs stayed in the copy for ever.
func TestWatch_ReportsDestroysAmidClones(t *testing.T) {
	_, _, p, w, events := watching(t)
	ctx := context.Background()
	var mu sync.Mutex
	gone := map[string]bool{}
	go func() { // until the test's process ends: the watch must never block
		for e := range events {
			mu.Lock()
			gone[e.vm.Name] = e.gone
			mu.Unlock()
		}
	}()
	const n = 10
	name := func(kind string, i int) string { return fmt.Sprintf("%s-%d", kind, i) }
	for i := range n {
		if _, err := p.Create(ctx, vmprovider.Spec{Name: name("old", i), Owner: ownerA}); err != nil {
			t.Fatal(err)
		}
	}
	seen := func(want func(name string, there bool) bool) error {
		deadline := time.Now().Add(30 * time.Second)
		for {
			var wrong []string
			for _, kind := range []string{"old", "new"} {
				for i := range n {
					_, there := w.Get(name(kind, i))
					if !want(name(kind, i), there) {
						wrong = append(wrong, name(kind, i))
					}
				}
			}
			if len(wrong) == 0 {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the watch's copy is wrong for %v", wrong)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if err := seen(func(name string, there bool) bool { return there == strings.HasPrefix(name, "old") }); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		wg.Go(func() { errs <- p.Delete(ctx, name("old", i), ownerA.UID) })
		wg.Go(func() {
			_, err := p.Create(ctx, vmprovider.Spec{Name: name("new", i), Owner: ownerA})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := seen(func(name string, there bool) bool { return there == strings.HasPrefix(name, "new") }); err != nil {
		t.Error(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range n {
		if !gone[name("old", i)] {
			t.Errorf("%s's removal was never reported", name("old", i))
		}
	}
}

// TestWatch_PagesOfAHundred: the watch asks vCenter for answers of at most
// 100 objects' updates (vm-operator's page size), and takes a folder of
// more than that in several pages.
func TestWatch_PagesOfAHundred(t *testing.T) {
	calls := &simgate.Faults{}
	sim := vcsimtest.StartFaulty(t, calls)
	p, err := vsphere.New(context.Background(), sim.Config())
	if err != nil {
		t.Fatal(err)
	}
	c, err := simulatorClient(context.Background(), sim)
	if err != nil {
		t.Fatal(err)
	}
	folder := object.NewFolder(c, mustFolder(t, sim.Model, "vm"))
	pool := object.NewResourcePool(c, sim.Model.Map().Any("ResourcePool").Reference())
	for i := range 110 {
		run(t, "create a VM", func(ctx context.Context) (*object.Task, error) {
			return folder.CreateVM(ctx, types.VirtualMachineConfigSpec{Name: fmt.Sprintf("other-%d", i), GuestId: "otherGuest",
				Files: &types.VirtualMachineFileInfo{VmPathName: "[LocalDS_0]"}}, pool, nil)
		})
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	n := len(sim.Model.Map().All("VirtualMachine"))
	if n <= 100 {
		t.Fatalf("%d VMs in the simulator, want more than a page", n)
	}
	waits := calls.Record("WaitForUpdatesEx")
	w := vsphere.NewWatch(p)
	runWatch(t, w)
	<-w.Synced()
	waits.Stop()
	for _, o := range sim.Model.Map().All("VirtualMachine") {
		if name := o.(*simulator.VirtualMachine).Name; !func() bool { _, ok := w.Get(name); return ok }() {
			t.Errorf("the watch does not know %s once synced", name)
		}
	}
	reqs, err := waits.Requests()
	if err != nil || len(reqs) < 2 {
		t.Fatalf("%d waits for the first copy of %d VMs (%v), want several pages", len(reqs), n, err)
	}
	for _, r := range reqs {
		if o := r.(*types.WaitForUpdatesEx).Options; o == nil || o.MaxObjectUpdates != 100 {
			t.Errorf("a wait asked for pages of %+v, want MaxObjectUpdates 100", o)
		}
	}
}
