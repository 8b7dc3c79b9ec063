package vsphere_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/replicakit/replicakit/deletionpolicy"
	simfaults "github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// startHeldClones runs a simulator whose clones are tasks that run until
// the returned hold is released (vcsim.Faults.HoldTasks), as a clone of
// minutes does, and a provider with cfg's budgets on it.
func startHeldClones(t *testing.T, edit func(*vsphere.Config)) (*simfaults.Faults, *simfaults.Held, *vcsimtest.Sim, *vsphere.Provider) {
	t.Helper()
	f := &simfaults.Faults{Latency: &simfaults.Latency{Tasks: map[string]time.Duration{"CloneVM_Task": time.Millisecond}}}
	sim := vcsimtest.StartFaulty(t, f)
	cfg := sim.Config()
	if edit != nil {
		edit(&cfg)
	}
	p, err := vsphere.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	held := f.HoldTasks("CloneVM_Task")
	t.Cleanup(held.Release)
	return f, held, sim, p
}

// createGivenUp starts a create of name whose caller gives up once vCenter
// runs its clone (held), and returns the create's error.
func createGivenUp(t *testing.T, p *vsphere.Provider, held *simfaults.Held, name string) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := held.Count()
	errc := make(chan error, 1)
	go func() {
		_, err := p.Create(ctx, vmprovider.Spec{Name: name, Owner: ownerA, PowerOn: true})
		errc <- err
	}()
	waitFor(t, fmt.Sprintf("the clone of %s to run", name), func() bool { return held.Count() > before })
	cancel()
	return <-errc
}

// waitFor waits for cond, which a moment the test made brings about, for
// at most a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after a minute", what)
		}
	}
}

// TestCreate_OutlivesItsCall: a create whose caller gives up while vCenter
// clones goes on; until it ends, List and Get report the VM as Creating,
// a second Create of the name waits for the first instead of cloning
// again, and the other methods find no VM. One clone, one VM.
func TestCreate_OutlivesItsCall(t *testing.T) {
	f, held, sim, p := startHeldClones(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := createGivenUp(t, p, held, "slow-0"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Create whose caller gave up: %v, want context.Canceled", err)
	}
	vms, err := p.List(ctx, ownerA.UID)
	if err != nil || len(vms) != 1 || !vms[0].Creating || vms[0].Name != "slow-0" || vms[0].Owner != ownerA.UID {
		t.Fatalf("List while the clone runs = %+v, %v; want slow-0 Creating, owned by %s", vms, err, ownerA.UID)
	}
	if vm, err := p.Get(ctx, "slow-0"); err != nil || !vm.Creating {
		t.Fatalf("Get while the clone runs = %+v, %v; want Creating", vm, err)
	}
	if err := p.SetPower(ctx, "slow-0", ownerA.UID, vmprovider.PoweredOff); !errors.Is(err, vmprovider.ErrNotFound) {
		t.Errorf("SetPower while the clone runs: %v, want ErrNotFound", err)
	}
	var notOwned *vmprovider.NotOwnedError
	if _, err := p.Create(ctx, vmprovider.Spec{Name: "slow-0", Owner: vmprovider.Owner{UID: "uid-b"}}); !errors.As(err, &notOwned) {
		t.Errorf("Create of the name by another owner: %v, want a *NotOwnedError", err)
	}

	// A Cached over a watch reports it so too.
	w := vsphere.NewWatch(p)
	runWatch(t, w)
	<-w.Synced()
	cached := vsphere.Cached{Provider: p, Watch: w}
	if vms, err := cached.List(ctx, ownerA.UID); err != nil || len(vms) != 1 || !vms[0].Creating {
		t.Errorf("Cached.List while the clone runs = %+v, %v; want slow-0 Creating", vms, err)
	}

	// A second Create of the name joins the first: made while the clone
	// is held, it clones nothing, and gives up when its own context ends.
	jctx, jcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer jcancel()
	if _, err := p.Create(jctx, vmprovider.Spec{Name: "slow-0", Owner: ownerA, PowerOn: true}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a second Create while the clone runs: %v, want it to wait, and its context's end", err)
	}
	if n := f.Calls()["CloneVM_Task"]; n != 1 {
		t.Errorf("%d clones asked of vCenter after the second Create, want the first alone", n)
	}
	held.Release()
	waitFor(t, "slow-0 made", func() bool {
		vm, err := p.Get(ctx, "slow-0")
		return err == nil && !vm.Creating && vm.Power == vmprovider.PoweredOn
	})
	if n := f.Counts().Tasks["CloneVM_Task"]; n != 1 || count(t, sim, "slow-0") != 1 {
		t.Errorf("%d clones, %d VMs called slow-0; want one of each", n, count(t, sim, "slow-0"))
	}
}

// TestDelete_CancelsCreate: a Delete of a VM still being cloned cancels
// the clone (CancelTask), and no VM is left once vCenter has ended it.
func TestDelete_CancelsCreate(t *testing.T) {
	f, held, sim, p := startHeldClones(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := createGivenUp(t, p, held, "slow-0"); err == nil {
		t.Fatal("Create whose caller gave up succeeded")
	}
	if err := p.Delete(ctx, "slow-0", "uid-b"); !errors.Is(err, vmprovider.ErrNotOwned) {
		t.Errorf("Delete by another owner: %v, want ErrNotOwned", err)
	}
	if err := p.Delete(ctx, "slow-0", ownerA.UID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if n := f.Calls()["CancelTask"]; n != 1 {
		t.Errorf("%d CancelTask calls, want 1", n)
	}
	if vms, err := p.List(ctx, ownerA.UID); err != nil || len(vms) != 0 {
		t.Errorf("List after the Delete = %+v, %v; want none", vms, err)
	}
	held.Release()
	waitFor(t, "end of the cancelled clone", func() bool { return f.Counts().Ended["CloneVM_Task"] == 1 })
	if n := count(t, sim, "slow-0"); n != 0 {
		t.Errorf("%d VMs called slow-0 once the cancelled clone ended, want 0", n)
	}
}

// TestClones_DoNotStarveShortTasks: with every clone slot held by a clone
// that runs on, a power-off, a reset and a delete still run: clones have a
// budget of their own.
func TestClones_DoNotStarveShortTasks(t *testing.T) {
	f, held, _, p := startHeldClones(t, func(c *vsphere.Config) { c.MaxClones, c.MaxTasks = 2, 2 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	held.Release() // the VMs to act on are made at once
	for _, name := range []string{"web-0", "web-1"} {
		if _, err := p.Create(ctx, vmprovider.Spec{Name: name, Owner: ownerA, PowerOn: true}); err != nil {
			t.Fatal(err)
		}
	}
	slow := f.HoldTasks("CloneVM_Task")
	made := make(chan error, 2)
	for i := range 2 {
		go func() {
			_, err := p.Create(ctx, vmprovider.Spec{Name: fmt.Sprintf("slow-%d", i), Owner: ownerA})
			made <- err
		}()
	}
	waitFor(t, "two clones running", func() bool { return slow.Count() == 2 })
	if err := p.SetPower(ctx, "web-0", ownerA.UID, vmprovider.PoweredOff); err != nil {
		t.Errorf("SetPower with every clone slot taken: %v", err)
	}
	if err := p.Reset(ctx, "web-1", ownerA.UID); err != nil {
		t.Errorf("Reset with every clone slot taken: %v", err)
	}
	if err := p.Delete(ctx, "web-0", ownerA.UID); err != nil {
		t.Errorf("Delete with every clone slot taken: %v", err)
	}
	slow.Release()
	for range 2 {
		if err := <-made; err != nil {
			t.Error(err)
		}
	}
}

// TestSet_CloneOutlivesPass: a Set whose pass gives up while vCenter
// clones counts the clone in its next passes (a VM being provisioned), so
// it makes no second VM in its stead; and when it scales down while a
// clone runs, it cancels that clone rather than let it end as a VM too
// many. Judged on vCenter's own counts: one clone per VM wanted, no VM
// left over.
func TestSet_CloneOutlivesPass(t *testing.T) {
	f, held, sim, p := startHeldClones(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := &vmprovider.Set{Provider: p, Template: vmprovider.Spec{Owner: ownerA, PowerOn: true},
		Policy: deletionpolicy.Oldest{}, Names: naming.Indexed{Base: "web"}}
	now := time.Now()
	// givenUp runs a pass to desired that gives up once a clone runs.
	givenUp := func(desired int) {
		t.Helper()
		pctx, pcancel := context.WithCancel(ctx)
		defer pcancel()
		before := held.Count()
		errc := make(chan error, 1)
		go func() {
			_, _, err := s.Scale(pctx, desired, now)
			errc <- err
		}()
		waitFor(t, "a clone running", func() bool { return held.Count() > before })
		pcancel()
		if err := <-errc; err == nil {
			t.Fatalf("Scale to %d whose caller gave up: no error", desired)
		}
	}

	givenUp(1)
	plan, _, err := s.Scale(ctx, 1, now)
	if err != nil || plan.Create != 0 {
		t.Fatalf("the pass after, with the clone running: plan %v, %v; want nothing created", plan, err)
	}
	held.Release()
	waitFor(t, "the clone made", func() bool {
		vms, err := p.List(ctx, ownerA.UID)
		return err == nil && len(vms) == 1 && !vms[0].Creating
	})
	if plan, _, err := s.Scale(ctx, 1, now); err != nil || plan.Create != 0 || len(plan.Delete) != 0 {
		t.Fatalf("once the clone is made: plan %v, %v; want nothing to do", plan, err)
	}

	held = f.HoldTasks("CloneVM_Task")
	defer held.Release()
	givenUp(2)
	plan, _, err = s.Scale(ctx, 1, now)
	if err != nil || len(plan.Delete) != 1 || plan.Delete[0].Phase != replicaset.PhasePending {
		t.Fatalf("scaled down to 1 while the second clone runs: plan %v, %v; want the VM being made deleted", plan, err)
	}
	held.Release()
	waitFor(t, "the end of the cancelled clone", func() bool { return f.Counts().Ended["CloneVM_Task"] == 2 })
	vms, err := p.List(ctx, ownerA.UID)
	if err != nil || len(vms) != 1 || count(t, sim, "web-0") != 1 || count(t, sim, "web-1") != 0 {
		t.Errorf("in the end: List %+v, %v; VMs called web-0 and web-1 in vCenter %d and %d; want web-0 alone",
			vms, err, count(t, sim, "web-0"), count(t, sim, "web-1"))
	}
	if c := f.Counts(); c.Tasks["CloneVM_Task"] != 2 || c.Calls["CancelTask"] != 1 {
		t.Errorf("%d clones, %d cancelled; want 2 and 1", c.Tasks["CloneVM_Task"], c.Calls["CancelTask"])
	}
}

// TestRequestsPerSecond: the provider keeps to its rate toward vCenter.
// With a bucket of exactly the calls New makes, refilled once an hour,
// the List after New waits for a token: under a context that ends first,
// it fails at once without reaching vCenter, and says why.
func TestRequestsPerSecond(t *testing.T) {
	f := &simfaults.Faults{}
	sim := vcsimtest.StartFaulty(t, f)
	ctx := context.Background()
	newCalls := func(cfg vsphere.Config) (*vsphere.Provider, int64, error) {
		c, err := simulatorClient(ctx, sim)
		if err != nil {
			t.Fatal(err)
		}
		before := f.Counts()
		p, err := vsphere.NewWithClient(ctx, c, cfg)
		return p, simfaults.Sum(f.Counts().Minus(before).Calls), err
	}
	cfg := sim.Config()
	cfg.RequestsPerSecond = -1
	_, n, err := newCalls(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RequestsPerSecond, cfg.RequestBurst = 1.0/3600, int(n)
	p, m, err := newCalls(cfg)
	if err != nil || m != n {
		t.Fatalf("New within a burst of its %d calls: %d calls, %v", n, m, err)
	}
	before := f.Counts()
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = p.List(lctx, ownerA.UID)
	if err == nil || !strings.Contains(err.Error(), "RequestsPerSecond") {
		t.Errorf("List with the bucket empty: %v, want an error naming the rate limit", err)
	}
	if calls := f.Counts().Minus(before).Calls; len(calls) != 0 {
		t.Errorf("List with the bucket empty reached vCenter: %v", calls)
	}
}

// runWatch runs w until the test ends, and fails the test if Run does.
func runWatch(t *testing.T, w *vsphere.Watch) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}
