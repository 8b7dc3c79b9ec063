package chaos_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// The lifecycle-hook scenarios (issue 35) run a set whose spec.lifecycle
// names a pre-delete hook, drain, beside a drainer of the test's own (the
// hook's controller: it releases a VM by removing the hook's annotation)
// and a gate checker, a watch of the VirtualMachines of its own that
// keeps each of the set's VMs as it was when it was deleted, so that the
// scenario can check that every deletion passed the gate.

// drainHook is the pre-delete hook's annotation on a VirtualMachine.
var drainHook = kube.PreDeleteHookAnnotation(controllers.HookDomain, "drain")

// hookedSet is healingSet (rm may be nil) with drainLifecycle.
func hookedSet(ns string, n int32, rm *vmv1.Remediation, timeout time.Duration, result string) *vmv1.VirtualMachineReplicaSet {
	set := healingSet(ns, n, rm)
	set.Spec.Lifecycle = drainLifecycle(timeout, result)
	return set
}

// drainLifecycle is a spec.lifecycle with the pre-delete hook drain,
// which holds a VM for at most timeout; then the set does what result
// says ("Continue" or "", "Abandon").
func drainLifecycle(timeout time.Duration, result string) *vmv1.Lifecycle {
	return &vmv1.Lifecycle{PreDelete: []string{"drain"}, Timeout: dur(timeout), DefaultResult: result}
}

// preparing returns the preparing times (the annotation's text) of the
// VirtualMachines of l that uid controls and that prepare to leave,
// not being deleted, by name.
func preparing(l []vmv1.VirtualMachine, uid types.UID) map[string]string {
	out := map[string]string{}
	for _, vm := range l {
		if since, ok := vm.Annotations[kube.AnnotationPreparing]; ok && controllerOf(&vm) == uid && vm.DeletionTimestamp == nil {
			out[vm.Name] = since
		}
	}
	return out
}

// drained is what the drainer knows of one VM that prepared to leave.
type drained struct {
	since    string        // its preparing time, as its annotation says
	seen     time.Time     // when the drainer first saw it preparing
	delay    time.Duration // how long after seen (or after the drainer recovered) it releases it
	released time.Time     // when it removed the hook; zero while it holds it
}

// drainer is the drain hook's controller, played by the test: every
// 100 ms it lists the namespace's VirtualMachines and releases each that
// prepares to leave and carries the hook (a merge patch of the hook's
// annotation to null) once a delay drawn from the scenario's seed (up to
// maxDelay) has passed since it first saw it, so that VMs are released
// in random order. Crashed, it releases nothing until it recovers (the
// delays then run from the recovery); a VM it keeps it holds until let.
type drainer struct {
	c        client.Client
	ns       string
	maxDelay time.Duration
	cancel   context.CancelFunc
	done     chan struct{}

	mu       sync.Mutex
	rng      *rand.Rand
	from     time.Time // releasing since; zero while crashed
	kept     map[string]bool
	vms      map[string]*drained
	released []string // in the order released
}

// startDrainer starts a drainer of ns's VirtualMachines, crashed or
// releasing from the start; stop it when the scenario ends.
func startDrainer(t *seeded, e *testenv.Env, ns string, maxDelay time.Duration, crashed bool) *drainer {
	ctx, cancel := context.WithCancel(context.Background())
	d := &drainer{c: e.Client, ns: ns, maxDelay: maxDelay, cancel: cancel, done: make(chan struct{}),
		rng: rand.New(rand.NewPCG(t.seed, t.seed^0xd7a1)), kept: map[string]bool{}, vms: map[string]*drained{}}
	if !crashed {
		d.from = time.Now()
	}
	go d.run(ctx)
	t.Cleanup(d.stop)
	return d
}

// run polls and releases until ctx ends.
func (d *drainer) run(ctx context.Context) {
	defer close(d.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
		var l vmv1.VirtualMachineList
		if err := d.c.List(ctx, &l, client.InNamespace(d.ns)); err != nil {
			continue
		}
		for _, name := range d.due(l.Items, time.Now()) {
			vm := &vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: name}}
			patch := []byte(`{"metadata":{"annotations":{"` + drainHook + `":null}}}`)
			if err := d.c.Patch(ctx, vm, client.RawPatch(types.MergePatchType, patch)); err == nil {
				d.mu.Lock()
				d.vms[name].released = time.Now()
				d.released = append(d.released, name)
				d.mu.Unlock()
			}
		}
	}
}

// due records the VMs of l that prepare to leave held by the drain hook,
// drawing each new one's delay, and returns those to release at now.
func (d *drainer) due(l []vmv1.VirtualMachine, now time.Time) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, vm := range l {
		since, ok := vm.Annotations[kube.AnnotationPreparing]
		if _, held := vm.Annotations[drainHook]; !ok || !held || vm.DeletionTimestamp != nil {
			continue
		}
		r := d.vms[vm.Name]
		if r == nil || r.since != since { // new, or preparing again from another time

			r = &drained{since: since, seen: now, delay: time.Duration(d.rng.Int64N(int64(d.maxDelay) + 1))}
			d.vms[vm.Name] = r
		}
		if d.from.IsZero() || d.kept[vm.Name] || !r.released.IsZero() {
			continue
		}
		if !now.Before(later(r.seen, d.from).Add(r.delay)) {
			out = append(out, vm.Name)
		}
	}
	return out
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// recover makes a crashed drainer release from now on.
func (d *drainer) recover() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.from = time.Now()
}

// keep holds the VM name until let, whatever its delay.
func (d *drainer) keep(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.kept[name] = true
}

// let releases a VM kept, once its delay has passed.
func (d *drainer) let(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.kept, name)
}

// report returns what the drainer knows of each VM it saw preparing, by
// name, and the names it released in the order it released them.
func (d *drainer) report() (map[string]drained, []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]drained{}
	for name, r := range d.vms {
		out[name] = *r
	}
	return out, slices.Clone(d.released)
}

// stop ends the drainer's polls.
func (d *drainer) stop() {
	d.cancel()
	<-d.done
}

// afterPreparing describes how long after preparing each timed out VM was
// seen deleted: "+4.1 s, +4.2 s".
func afterPreparing(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("+%.1f s", d.Seconds())
	}
	return strings.Join(parts, ", ")
}

// waitHookTimedOut waits until the set has a HookTimedOut event naming
// each of the VMs of names, and returns the events' notes. The events
// recorder folds events of one reason about one object into a series,
// whatever their notes (client-go's tools/events: its key leaves the
// note out), so each event names its VM as its related object too, which
// the key keeps.
func waitHookTimedOut(t *seeded, e *testenv.Env, ns string, names []string) []string {
	t.Helper()
	var got []string
	if len(names) == 0 {
		return nil // nothing timed out: the caller has said so
	}
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		evs, err := setEvents(e, ns)
		got = evs["HookTimedOut"]
		return err == nil && !slices.ContainsFunc(names, func(n string) bool {
			return !slices.ContainsFunc(got, func(note string) bool { return strings.Contains(note, "child "+n+":") })
		}), nil
	})
	if err != nil {
		t.Errorf("HookTimedOut events %q; want one naming each of %v", got, names)
	}
	return got
}

// orderInversions counts the pairs of VMs released in the other order
// than they began to prepare (by their preparing times, then names for
// VMs that began in one pass): 0 when the drainer released them as they
// came.
func orderInversions(vms map[string]drained, released []string) int {
	since := func(name string) time.Time {
		t, _ := time.Parse(time.RFC3339Nano, vms[name].since)
		return t
	}
	n := 0
	for i := range released {
		for j := i + 1; j < len(released); j++ {
			a, b := released[i], released[j]
			if c := since(a).Compare(since(b)); c > 0 || c == 0 && a > b {
				n++
			}
		}
	}
	return n
}

// waitSet waits until ok holds of the set as the API server has it (a
// set gone reads as nil), and returns it then.
func waitSet(t *seeded, e *testenv.Env, set *vmv1.VirtualMachineReplicaSet, what string, ok func(*vmv1.VirtualMachineReplicaSet) bool) *vmv1.VirtualMachineReplicaSet {
	t.Helper()
	var s *vmv1.VirtualMachineReplicaSet
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		got, err := getSet(e, set)
		switch {
		case apierrors.IsNotFound(err):
			s = nil
		case err != nil:
			return false, nil
		default:
			s = got
		}
		return ok(s), nil
	})
	if err != nil {
		desc := "gone"
		if s != nil {
			desc = fmt.Sprintf("deleting %v, finalizers %v, generation %d, status %+v", s.DeletionTimestamp != nil, s.Finalizers, s.Generation, s.Status)
		}
		t.Fatalf("waiting for the set: %s; it is %s%s", what, desc, unsettled(e, set.Namespace))
	}
	return s
}

// waitReason waits until the set's condition typ has reason (want) or
// has another or none (!want), and returns its message then.
func waitReason(t *seeded, e *testenv.Env, set *vmv1.VirtualMachineReplicaSet, typ, reason string, want bool) string {
	t.Helper()
	s := waitSet(t, e, set, fmt.Sprintf("its condition %s with the reason %s: %v", typ, reason, want), func(s *vmv1.VirtualMachineReplicaSet) bool {
		if s == nil {
			return false
		}
		c := meta.FindStatusCondition(s.Status.Conditions, typ)
		return (c != nil && c.Reason == reason) == want
	})
	if c := meta.FindStatusCondition(s.Status.Conditions, typ); c != nil {
		return c.Message
	}
	return ""
}

// hookScene is the world of a lifecycle-hook scenario with one set:
// healScene's, the set with the drain hook, its gate checker and a
// drainer.
type hookScene struct {
	scene
	set *vmv1.VirtualMachineReplicaSet
	g   *gateCheck
	d   *drainer
}

// startHookScene starts healScene's world named name and a set of n VMs
// whose drain hook holds each for at most timeout, then result; once the
// set has converged it starts its gate checker and a drainer crashed
// from the start, which releases after up to maxDelay once it recovers.
// Stop s.op when the scenario ends.
func startHookScene(t *seeded, e *testenv.Env, name string, n int, timeout time.Duration, result string, maxDelay time.Duration) *hookScene {
	s := &hookScene{scene: startScene(t, e, name)}
	s.set = hookedSet(s.ns, int32(n), nil, timeout, result)
	if err := e.Client.Create(context.Background(), s.set); err != nil {
		t.Fatal(err)
	}
	converge(t, e, s.sim, s.ns, n)
	s.g = watchGate(t, e, s.set)
	s.d = startDrainer(t, e, s.ns, maxDelay, true)
	return s
}

// waitPreparing waits until k of the set's VMs prepare to leave, and
// returns their preparing times by name.
func (s *hookScene) waitPreparing(t *seeded, e *testenv.Env, k int) map[string]string {
	t.Helper()
	var leaving map[string]string
	waitVMs(t, e, s.ns, fmt.Sprintf("%d VMs preparing", k), func(l []vmv1.VirtualMachine) bool {
		leaving = preparing(l, s.set.UID)
		return len(leaving) == k
	})
	return leaving
}

// unchanged returns a check for holdFor that reports vCenter destroying
// a VM from now on, the set having other than live VMs or any being
// deleted, or other VMs preparing than those of leaving, or with other
// preparing times.
func (s *hookScene) unchanged(t *seeded, e *testenv.Env, live int, leaving map[string]string) func() string {
	destroys := callsOf(s.gate).destroys
	return func() string {
		if got := callsOf(s.gate).destroys; got != destroys {
			return fmt.Sprintf("vCenter destroyed %d VMs", got-destroys)
		}
		if n, deleting, err := children(context.Background(), e.Client, s.ns, s.set.UID); err == nil && (n != live || deleting != 0) {
			return fmt.Sprintf("the set has %d VMs live and %d being deleted, want %d and none", n, deleting, live)
		}
		if now := preparing(vms(t, e, s.ns), s.set.UID); !maps.Equal(now, leaving) {
			return fmt.Sprintf("the VMs preparing, with their preparing times, are %v; were %v", now, leaving)
		}
		return ""
	}
}

// stop fails when the gate checker saw more of the set's VMs at once
// than most, waits for the operator's report of the foreign objects and
// stops it; it returns the most VMs seen.
func (s *hookScene) stop(t *seeded, e *testenv.Env, most int) int {
	t.Helper()
	seen := s.g.mostExisting()
	if seen > most {
		t.Errorf("the gate checker saw %d of the set's VMs at once, more than %d", seen, most)
	}
	s.planted.reported(t, e)
	s.op.stop()
	return seen
}
