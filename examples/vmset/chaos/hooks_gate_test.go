package chaos_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	toolswatch "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// deletion is one of the set's VMs as the gate checker first saw it
// deleted.
type deletion struct {
	annotations map[string]string
	stamp       time.Time // its deletionTimestamp, to the second; zero when first seen gone
	seen        time.Time // when the watch delivered it: the deletion came no later
	neverRan    bool      // pending or failed then (the adapter's phase): nothing to drain
}

// gateCheck watches the set's VirtualMachines (a watch of its own,
// resumed where it stopped: toolswatch.RetryWatcher) and keeps each as
// it was when it was deleted, by the operator or by the garbage
// collector once the set is gone, for check.
type gateCheck struct {
	owner  types.UID
	ns     string
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	live    map[string]bool // the set's VMs seen not being deleted
	exist   map[string]bool // the set's VMs there now, being deleted or not
	most    int             // the most of them there at once
	deleted map[string]deletion
	judged  map[string]bool
	ended   string // why the watch ended before stop

	since    map[string]string // each VM's preparing time as last seen, "" when it had none
	restamps []string          // "name: old → new" for each preparing time written over another
}

// watchGate starts a gate checker of set's VirtualMachines; stop it when
// the scenario ends.
func watchGate(t *seeded, e *testenv.Env, set *vmv1.VirtualMachineReplicaSet) *gateCheck {
	c, err := client.NewWithWatch(e.Config, client.Options{Scheme: vmcheck.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	g := &gateCheck{owner: set.UID, ns: set.Namespace, done: make(chan struct{}),
		live: map[string]bool{}, exist: map[string]bool{}, deleted: map[string]deletion{}, judged: map[string]bool{},
		since: map[string]string{}}
	var l vmv1.VirtualMachineList
	if err := c.List(context.Background(), &l, client.InNamespace(g.ns)); err != nil {
		t.Fatal(err)
	}
	for i := range l.Items {
		g.put(watch.Added, &l.Items[i])
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	rw, err := toolswatch.NewRetryWatcherWithContext(ctx, l.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, &vmv1.VirtualMachineList{}, client.InNamespace(g.ns), &client.ListOptions{Raw: &o})
		}})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		defer close(g.done)
		defer rw.Stop()
		for ev := range rw.ResultChan() {
			if vm, ok := ev.Object.(*vmv1.VirtualMachine); ok {
				g.put(ev.Type, vm)
			} else if ev.Type == watch.Error && ctx.Err() == nil {
				g.mu.Lock()
				g.ended = fmt.Sprintf("the watch ended: %v", apierrors.FromObject(ev.Object))
				g.mu.Unlock()
			}
		}
	}()
	t.Cleanup(g.stop)
	return g
}

// stop ends the watch.
func (g *gateCheck) stop() {
	g.cancel()
	<-g.done
}

// restamped lists the preparing times the watch saw written over
// another, each as "name: old → new": a VM that began to prepare again
// while it prepared, its timeout counted anew.
func (g *gateCheck) restamped() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.restamps)
}

// checkRestamps fails on any preparing time the watch saw written over
// another: the binding's passes wait until the cache shows a
// preparation, so that a VM preparing is never prepared again.
func (g *gateCheck) checkRestamps(t *seeded) {
	t.Helper()
	if r := g.restamped(); len(r) > 0 {
		t.Errorf("VMs prepared again while they prepared, their timeouts counted anew: %v", r)
	}
}

// mostExisting is the most VMs of the set the watch saw there at once,
// counting those being deleted.
func (g *gateCheck) mostExisting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.most
}

// put records vm as a change of type typ shows it.
func (g *gateCheck) put(typ watch.EventType, vm *vmv1.VirtualMachine) {
	if controllerOf(vm) != g.owner {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if typ == watch.Deleted {
		delete(g.exist, vm.Name)
	} else {
		g.exist[vm.Name] = true
		g.most = max(g.most, len(g.exist))
	}
	// A preparing time written over another, with no take-back between
	// (which removes it): the VM began to prepare again.
	since := vm.Annotations[kube.AnnotationPreparing]
	if old := g.since[vm.Name]; old != "" && since != "" && since != old {
		g.restamps = append(g.restamps, fmt.Sprintf("%s: %s → %s", vm.Name, old, since))
	}
	g.since[vm.Name] = since
	if typ != watch.Deleted && vm.DeletionTimestamp == nil {
		g.live[vm.Name] = true
		return
	}
	if _, ok := g.deleted[vm.Name]; ok {
		return
	}
	d := deletion{annotations: maps.Clone(vm.Annotations), seen: time.Now()}
	if ts := vm.DeletionTimestamp; ts != nil {
		d.stamp = ts.Time
	}
	var r replicaset.Replica
	controllers.ReplicaSetAdapter{}.Describe(vm, &r)
	d.neverRan = r.Phase == replicaset.PhasePending || r.Phase == replicaset.PhaseFailed
	g.deleted[vm.Name] = d
}

// gateSummary is what check found of the deletions it judged.
type gateSummary struct {
	released, timedOut, skipped []string        // by name, sorted
	after                       []time.Duration // of each timed out VM: from its preparing time until seen deleted
}

// check judges the deletions seen since the last check: each VM the set
// had must have prepared (unless it never ran) and have been either
// released by the drainer (its hook gone at its deletion) or held past
// timeout. It first waits, for up to 30 s, until the watch has seen every
// VM of the set that the API server no longer shows live deleted, and
// fails on one it never saw deleted.
func (g *gateCheck) check(t *seeded, e *testenv.Env, timeout time.Duration, d *drainer) gateSummary {
	t.Helper()
	var unseen []string
	_ = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var l vmv1.VirtualMachineList
		if err := e.Client.List(ctx, &l, client.InNamespace(g.ns)); err != nil {
			return false, nil
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		unseen = unseen[:0]
		for name := range g.live {
			if _, ok := g.deleted[name]; !ok && !slices.ContainsFunc(l.Items, func(vm vmv1.VirtualMachine) bool { return vm.Name == name && vm.DeletionTimestamp == nil }) {
				unseen = append(unseen, name)
			}
		}
		return len(unseen) == 0, nil
	})
	drainedVMs, _ := d.report()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(unseen) > 0 || g.ended != "" {
		t.Errorf("the gate checker lost track (%s): it never saw %v deleted", g.ended, unseen)
	}
	var s gateSummary
	for _, name := range slices.Sorted(maps.Keys(g.deleted)) {
		if g.judged[name] {
			continue
		}
		g.judged[name] = true
		del := g.deleted[name]
		kind, after, why := del.judge(timeout, !drainedVMs[name].released.IsZero())
		switch kind {
		case "released":
			s.released = append(s.released, name)
		case "timed out":
			s.timedOut, s.after = append(s.timedOut, name), append(s.after, after)
		case "never ran":
			s.skipped = append(s.skipped, name)
		default:
			t.Errorf("VM %s passed no gate: %s (its annotations then: %v)", name, why, del.annotations)
		}
	}
	return s
}

// judge says how del passed the gate of hooks timing out after timeout:
// "released" (its drain hook gone, released by the drainer when
// released), "timed out" (with how long after its preparing time the
// watch saw it deleted), "never ran", or "" and why it passed none.
//
// When it was deleted is known only within bounds. A correct operator
// deletes a held VM only once its pass's clock reads its deadline
// (preparing time + timeout; the preparing time is the operator's own,
// to the nanosecond, and runs on this machine's clock), so the true
// moment T is never before the deadline. The API server stores the
// deletionTimestamp to the second, cutting the fraction off: T lies in
// [stamp, stamp + 1 s), and no later than the moment the watch delivered
// the deletion (seen). A deletion is early for certain when the latest T
// can be is before the deadline: stamp + 1 s ≤ deadline, or seen before
// the deadline. The 1 s is added to the stamp only, which is what the
// truncation took away: it lifts the stamp to the latest moment it
// stands for, so it flags no correct deletion, and never to the deadline
// or the other way, which would accept a deletion earlier than the
// second the stamp allows. What is left unknown is a deletion early by
// less than the fraction of its second, and the watch's seen narrows
// that further (it arrives within milliseconds).
func (del deletion) judge(timeout time.Duration, released bool) (kind string, after time.Duration, why string) {
	since, ok := del.annotations[kube.AnnotationPreparing]
	if !ok {
		if del.neverRan {
			return "never ran", 0, ""
		}
		return "", 0, "deleted without preparing, though it had run"
	}
	p, err := time.Parse(time.RFC3339Nano, since)
	if err != nil {
		return "", 0, fmt.Sprintf("its preparing time %q does not parse: %v", since, err)
	}
	after = del.seen.Sub(p)
	if _, held := del.annotations[drainHook]; !held {
		if !released {
			return "", after, "deleted without its drain hook, which the drainer never released"
		}
		return "released", after, ""
	}
	deadline := p.Add(timeout)
	if del.seen.Before(deadline) || !del.stamp.IsZero() && !del.stamp.Add(time.Second).After(deadline) {
		return "", after, fmt.Sprintf("deleted while its drain hook held it, before the timeout: preparing since %s, deadline %s, deletionTimestamp %s, seen deleted %s (%v after preparing)",
			since, deadline.Format(time.RFC3339Nano), del.stamp.Format(time.RFC3339), del.seen.Format(time.RFC3339Nano), after.Round(time.Millisecond))
	}
	return "timed out", after, ""
}

// TestGateJudge: the gate checker flags a deletion early for certain and
// no deletion a correct operator makes, its deletionTimestamp cut to the
// second.
func TestGateJudge(t *testing.T) {
	p := time.Date(2026, 1, 2, 10, 0, 0, 300_000_000, time.UTC) // preparing; the deadline is 4 s later, at :04.3
	at := func(s float64) time.Time { return p.Truncate(time.Minute).Add(time.Duration(s * float64(time.Second))) }
	held := map[string]string{kube.AnnotationPreparing: p.Format(time.RFC3339Nano), drainHook: setName}
	free := map[string]string{kube.AnnotationPreparing: p.Format(time.RFC3339Nano)}
	for _, tc := range []struct {
		name     string
		del      deletion
		released bool
		want     string
	}{
		{"timed out, its stamp cut below the deadline", deletion{annotations: held, stamp: at(4), seen: at(4.35)}, false, "timed out"},
		{"timed out, its stamp past the deadline", deletion{annotations: held, stamp: at(5), seen: at(5.01)}, false, "timed out"},
		{"early, seen before the deadline", deletion{annotations: held, stamp: at(4), seen: at(4.2)}, false, ""},
		{"early, its whole second before the deadline, seen late", deletion{annotations: held, stamp: at(3), seen: at(6)}, false, ""},
		{"at once", deletion{annotations: held, stamp: at(0), seen: at(0.4)}, false, ""},
		{"released", deletion{annotations: free, stamp: at(1), seen: at(1.1)}, true, "released"},
		{"its hook gone, released by no one", deletion{annotations: free, stamp: at(1), seen: at(1.1)}, false, ""},
		{"never prepared, never ran", deletion{stamp: at(1), seen: at(1.1), neverRan: true}, false, "never ran"},
		{"never prepared, had run", deletion{stamp: at(1), seen: at(1.1)}, false, ""},
	} {
		if got, _, why := tc.del.judge(4*time.Second, tc.released); got != tc.want {
			t.Errorf("%s: judged %q (%s), want %q", tc.name, got, why, tc.want)
		}
	}
}
