package chaos_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// vcenterDay plays a day of a real vCenter at the pace of the latency
// model (vcsim.RealWorld, scaled: a full clone takes 1.2 s in the small
// run, 6 s in the large one, every other call in proportion) against a
// set of n VMs (small 3, large 8) whose operator logs in with credentials
// it asks for at each login (vsphere.Config.Credentials):
//
//  1. clones whose callers give up: the operator restarts while its first
//     clones run (its calls' contexts end; vCenter goes on cloning);
//  2. a template rebuilt under its name mid scale-up, as an image pipeline
//     does: the new one built beside it, the old one destroyed, the new
//     one renamed into its place;
//  3. a datastore that goes away for a while (at least 3 s small, 10 s
//     large, and until the rollout below has begun and the password is
//     rotated): two of the set's VMs unreadable (vcsim.Sim.Inaccessible),
//     then back;
//  4. meanwhile, once their VirtualMachines say so (Ready Unknown
//     VMUnreadable: the set plans with what they say), a rollout to
//     template B, with vCenter's password rotated and every session ended
//     mid rollout.
//
// It asserts: the set converges on A, then on B, with n VMs; while the two
// VMs are unreadable neither is destroyed in vCenter nor its
// VirtualMachine deleted; once they are back the rollout replaces them;
// the operator needs no restart beyond the one the scenario makes (the
// rotated password and the rebuilt template are taken as they come); and
// in the end vCenter holds exactly the set's n VMs: 0 leaked, 0
// duplicate, 0 foreign changed.
func vcenterDay(t *seeded, e *testenv.Env) row {
	begin := time.Now()
	ctx := context.Background()
	n, scale, outage := 3, 0.01, 3*time.Second
	if large() {
		n, scale, outage = 8, 0.05, 10*time.Second
	}
	ns := namespace(t, e, "chaos-vcenter-day")
	lat := vcsim.RealWorld()
	lat.Scale = scale
	gate := &vcsim.Faults{Latency: &lat}
	sim := vcsimtest.StartFaulty(t, gate)
	planted := plantForeign(t, e, sim, ns)
	var password atomic.Pointer[string]
	first := sim.Config().Password
	password.Store(&first)
	op := &operator{t: t, e: e, ns: ns, sim: sim, config: func(c *vsphere.Config) {
		user := c.Username
		c.Password, c.Credentials = "", func(context.Context) (string, string, error) { return user, *password.Load(), nil }
	}}
	op.start()
	defer op.stop()

	set := healingSet(ns, int32(n), nil)
	if err := e.Client.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	// 1. The operator restarts while its first clones run: vCenter holds
	// the first clone's end until the operator is stopped.
	held := gate.HoldTasks("CloneVM_Task")
	select {
	case <-held.Caught():
	case <-time.After(time.Minute):
		t.Fatal("no clone within a minute")
	}
	op.stop()
	held.Release()
	op.start()
	// 2. The template is rebuilt under its name mid scale-up.
	rebuildTemplate(t, sim)
	t.Logf("%v: the template rebuilt", time.Since(begin))
	revA := observedRevision(t, e, set, "")
	onA := settleOn(t, e, sim, set, revA, n, nil)
	t.Logf("%v: settled on A", time.Since(begin))

	// 3. A datastore goes away: two VMs unreadable.
	away := onA[:2]
	restore, err := sim.Inaccessible(ctx, vsphereNames(ns, away)...)
	if err != nil {
		t.Fatal(err)
	}
	restored := false
	defer func() {
		if !restored {
			restore()
		}
	}()
	awayAt := time.Now()
	// The operator learns of it through its watch; the set plans with
	// what the VirtualMachines say.
	waitUntil(t, "the unreadable VMs reported", func() bool {
		var l vmv1.VirtualMachineList
		if err := e.Client.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return false
		}
		unread := 0
		for _, vm := range l.Items {
			if c := meta.FindStatusCondition(vm.Status.Conditions, "Ready"); slices.Contains(away, vm.Name) && c != nil && c.Reason == controllers.ReasonVMUnreadable {
				unread++
			}
		}
		return unread == len(away)
	})

	// 4. A rollout to B, and the password rotated mid rollout.
	setTemplate(t, e, set, templateB)
	revB := observedRevision(t, e, set, revA)
	waitUntil(t, "a VM on B made", func() bool { return len(madeOn(e, ns, set, revB)) > 0 })
	rotated := fmt.Sprintf("rotated-%d", t.seed)
	rotate(t, sim, &password, rotated)
	// The foreign VMs' owner logs in anew with the new password.
	_ = planted.other.Close(ctx)
	if planted.other, err = vsphere.New(ctx, sim.Config()); err != nil {
		t.Fatal(err)
	}
	unchanged := func() string {
		vms := vcenterVMs(t, sim, ns)
		for _, name := range away {
			if _, ok := vms[name]; !ok {
				return fmt.Sprintf("%s, unreadable, is gone from vCenter", name)
			}
		}
		var l vmv1.VirtualMachineList
		if err := read(func(ctx context.Context) error { return e.Client.List(ctx, &l, client.InNamespace(ns)) }); err != nil {
			return ""
		}
		for _, vm := range l.Items {
			if slices.Contains(away, vm.Name) && vm.DeletionTimestamp != nil {
				return fmt.Sprintf("VirtualMachine %s is being deleted while its VM is unreadable", vm.Name)
			}
		}
		return ""
	}
	t.Logf("%v: password rotated", time.Since(begin))
	why, polls := holdFor(max(outage-time.Since(awayAt), time.Second), unchanged)
	if why != "" {
		t.Errorf("during the outage: %s", why)
	}
	restore()
	restored = true
	unreadable := time.Since(awayAt)
	t.Logf("%v: restored", time.Since(begin))
	onB := settleOn(t, e, sim, set, revB, n, nil)
	t.Logf("%v: settled on B", time.Since(begin))
	for _, name := range away {
		if slices.Contains(onB, name) {
			t.Errorf("%s, on A and unreadable for a while, is still among the VMs on B %v", name, onB)
		}
	}
	var ofSet []string
	for name := range vcenterVMs(t, sim, ns) {
		if strings.HasPrefix(name, setName+"-") {
			ofSet = append(ofSet, name)
		}
	}
	if len(ofSet) != n {
		t.Errorf("vCenter holds %d VMs of the set in the end (%v), want %d", len(ofSet), ofSet, n)
	}
	op.stop()
	planted.reported(t, e)
	r := row{name: "vcenter-day", steps: fmt.Sprintf("%d: a restart mid-clone, the template rebuilt, A→B with 2 unreadable for %v and the password rotated",
		n, unreadable.Round(100*time.Millisecond)),
		final:    "converged on B",
		injected: fmt.Sprintf("latency ×%v (a full clone %v); %d polls of the outage; vCenter saw %s", scale, lat.TaskTime("CloneVM_Task", nil), polls, callsOf(gate))}
	finish(t, e, []vsphere.Config{sim.Config()}, ns, planted, &r, begin)
	return r
}

// waitUntil polls cond until it holds, for at most a minute.
func waitUntil(t *seeded, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("no %s within a minute: %v", what, err)
	}
}

// madeOn returns the set's VirtualMachines on revision rev whose VM is
// made (it has an instance UUID).
func madeOn(e *testenv.Env, ns string, set *vmv1.VirtualMachineReplicaSet, rev string) []string {
	var l vmv1.VirtualMachineList
	if err := e.Client.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
		return nil
	}
	var out []string
	for _, vm := range l.Items {
		if controllerOf(&vm) == set.UID && vm.Labels[kube.RevisionLabel] == rev && vm.Status.InstanceUUID != "" {
			out = append(out, vm.Name)
		}
	}
	return out
}

// rotate makes vCenter take password, and no longer the one it took, for
// its user, gives the operator the new one, and ends every session: the
// operator's calls fail until it logs in again with what its Credentials
// give.
func rotate(t *seeded, sim *vcsimtest.Sim, password *atomic.Pointer[string], to string) {
	t.Helper()
	if err := sim.SetPassword(to); err != nil {
		t.Fatal(err)
	}
	password.Store(&to)
	err := read(func(ctx context.Context) error {
		vc, logout, err := vsphere.Connect(ctx, sim.Config())
		if err != nil {
			return err
		}
		defer func() { _ = logout(context.WithoutCancel(ctx)) }()
		_, err = vcsim.EndSessions(ctx, vc)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rebuildTemplate rebuilds the simulator's template (vsphere.Config's
// Template) under its name, as an image pipeline does: a new VM built
// beside it, the old one powered off and destroyed, the new one renamed
// into its place.
func rebuildTemplate(t *seeded, sim *vcsimtest.Sim) {
	t.Helper()
	ctx := context.Background()
	cfg := sim.Config()
	vc, logout, err := vsphere.Connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logout(ctx) }()
	f := find.NewFinder(vc)
	dc, err := f.Datacenter(ctx, cfg.Datacenter)
	if err != nil {
		t.Fatal(err)
	}
	f.SetDatacenter(dc)
	old, err := f.VirtualMachine(ctx, cfg.Template)
	if err != nil {
		t.Fatal(err)
	}
	var m mo.VirtualMachine
	if err := old.Properties(ctx, old.Reference(), []string{"name", "parent"}, &m); err != nil {
		t.Fatal(err)
	}
	wait := func(what string, start func(context.Context) (*object.Task, error)) types.AnyType {
		t.Helper()
		task, err := start(ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		info, err := task.WaitForResult(ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return info.Result
	}
	res := wait("build the new template", func(ctx context.Context) (*object.Task, error) {
		return old.Clone(ctx, object.NewFolder(vc, *m.Parent), m.Name+"-build", types.VirtualMachineCloneSpec{})
	})
	built := object.NewVirtualMachine(vc, res.(types.ManagedObjectReference))
	wait("power the old template off", old.PowerOff)
	wait("destroy the old template", old.Destroy)
	wait("rename the new template", func(ctx context.Context) (*object.Task, error) { return built.Rename(ctx, m.Name) })
}
