package rollwatch

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
)

// Watcher follows one set's VirtualMachines through a watch of the API
// server and checks its Bounds after every change.
type Watcher struct {
	c      client.WithWatch
	ns     string
	cancel context.CancelFunc
	done   chan struct{}

	mu sync.Mutex
	t  *tally
}

// Start lists the VirtualMachines of set's namespace, checks them, and
// watches them from there until Stop. Start it once the set has settled:
// a set that is still coming up is below its availability bound.
func Start(ctx context.Context, cfg *rest.Config, set *vmv1.VirtualMachineReplicaSet, b Bounds) (*Watcher, error) {
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: vmcheck.Scheme()})
	if err != nil {
		return nil, err
	}
	w := &Watcher{c: c, ns: set.Namespace, done: make(chan struct{}), t: newTally(set.UID, b)}
	rv, err := w.list(ctx)
	if err != nil {
		return nil, err
	}
	ctx, w.cancel = context.WithCancel(ctx)
	wi, err := w.watch(ctx, rv)
	if err != nil {
		w.cancel()
		return nil, err
	}
	go w.run(ctx, wi, rv)
	return w, nil
}

// list reads the namespace's VirtualMachines into a fresh picture, checks
// it, and returns the list's resource version.
func (w *Watcher) list(ctx context.Context) (string, error) {
	var l vmv1.VirtualMachineList
	if err := w.c.List(ctx, &l, client.InNamespace(w.ns)); err != nil {
		return "", err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	clear(w.t.vms)
	for i := range l.Items {
		w.t.put(watch.Added, &l.Items[i])
	}
	w.t.check(time.Now(), "the list at resource version "+l.ResourceVersion)
	return l.ResourceVersion, nil
}

// watch opens a watch of the namespace's VirtualMachines from resource
// version rv, with bookmarks, which keep the resource version to resume
// from current.
func (w *Watcher) watch(ctx context.Context, rv string) (watch.Interface, error) {
	return w.c.Watch(ctx, &vmv1.VirtualMachineList{}, client.InNamespace(w.ns),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
}

// run checks every change until the context ends, resuming the watch
// whenever the server ends it (its timeout).
func (w *Watcher) run(ctx context.Context, wi watch.Interface, rv string) {
	defer close(w.done)
	for wi != nil {
		var expired bool
		rv, expired = w.consume(wi, rv)
		wi.Stop()
		wi = w.resume(ctx, rv, expired)
	}
}

// resume watches again from rv or, when rv is too old to resume from, from
// a new list (a gap: what happened in between was not seen), retrying
// until the context ends; then it returns nil.
func (w *Watcher) resume(ctx context.Context, rv string, expired bool) watch.Interface {
	for ctx.Err() == nil {
		if expired {
			if next, err := w.list(ctx); err == nil {
				rv, expired = next, false
				w.mu.Lock()
				w.t.r.Gaps++
				w.mu.Unlock()
			}
		}
		if !expired {
			wi, err := w.watch(ctx, rv)
			if err == nil {
				return wi
			}
			expired = apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// consume checks the watch's changes until it ends, and returns the last
// resource version seen and whether the server said it is too old to
// resume from.
func (w *Watcher) consume(wi watch.Interface, rv string) (string, bool) {
	for ev := range wi.ResultChan() {
		switch o := ev.Object.(type) {
		case *metav1.Status:
			if ev.Type == watch.Error {
				err := apierrors.FromObject(o)
				return rv, apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
			}
		case *vmv1.VirtualMachine:
			rv = o.ResourceVersion
			if ev.Type == watch.Bookmark {
				continue
			}
			w.mu.Lock()
			w.t.put(ev.Type, o)
			w.t.check(time.Now(), fmt.Sprintf("%s %s at resource version %s", ev.Type, o.Name, rv))
			w.mu.Unlock()
		}
	}
	return rv, false
}

// Excuse lowers the availability bound by n from now on: n VMs made
// unavailable from outside the operator (a test that hangs their guests),
// which no rollout can keep available. The planner keeps the others to
// the bound, and never takes available VMs lower while below it, so the
// set's available VMs stay at or above replicas − maxUnavailable − n.
func (w *Watcher) Excuse(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t.excused += n
}

// Report returns what the watcher has seen so far.
func (w *Watcher) Report() Report {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.t.r
	r.First, r.Refused = slices.Clone(r.First), maps.Clone(r.Refused)
	return r
}

// Stop ends the watch and returns what it saw.
func (w *Watcher) Stop() Report {
	w.cancel()
	<-w.done
	return w.Report()
}
