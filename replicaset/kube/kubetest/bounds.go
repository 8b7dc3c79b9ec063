package kubetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Bounds is what a BoundsWatch saw of an owner's children over a test.
type Bounds struct {
	// MostLive is the most children that existed at once, counting those
	// being deleted: what a rollout's MaxSurge bounds (Desired + MaxSurge).
	MostLive int
	// FewestReady is the fewest children, not being deleted, that were
	// ready at once: what a rollout's MaxUnavailable bounds (Desired −
	// MaxUnavailable, ready being available when the owner's MinReady is
	// zero).
	FewestReady int
}

// String renders b as "most live 4, fewest ready 3".
func (b Bounds) String() string {
	return fmt.Sprintf("most live %d, fewest ready %d", b.MostLive, b.FewestReady)
}

// BoundsWatch watches the children of one owner on the API server,
// independently of the Reconciler and its cache, and records their
// Bounds from the moment it starts until it stops: every change of a
// child is an event, so no moment between two polls is missed. A test
// starts it before the change it checks (a template change, a scale) and
// stops it once the owner has settled, then compares the Bounds with the
// strategy's. Its methods may be called from any goroutine.
type BoundsWatch struct {
	c        client.WithWatch
	list     client.ObjectList
	owner    types.UID
	ns       string
	ready    func(client.Object) (bool, error)
	cancel   context.CancelFunc
	done     chan struct{}
	mu       sync.Mutex
	children map[string]seen // by name
	bounds   Bounds
	err      error
}

// seen is what the watch last saw of a child.
type seen struct{ deleting, ready bool }

// WatchBounds starts a BoundsWatch of owner's children: the objects of
// list's kind in owner's namespace whose controller reference is owner
// (by UID: owner must have one, so read or create it first). ready says
// whether a child is ready; PodReady does for Pods. It lists the children
// to start from, then watches from that list's resource version, and
// watches again from the last event it saw when the API server ends the
// watch. The watch runs until Stop or until ctx ends.
func WatchBounds[C client.Object](ctx context.Context, c client.WithWatch, owner client.Object, list client.ObjectList, ready func(C) bool) (*BoundsWatch, error) {
	if owner.GetUID() == "" {
		return nil, fmt.Errorf("kubetest: owner %s has no UID; create or read it first", owner.GetName())
	}
	w := &BoundsWatch{c: c, list: list, owner: owner.GetUID(), ns: owner.GetNamespace(), done: make(chan struct{})}
	w.ready = func(obj client.Object) (bool, error) {
		child, ok := obj.(C)
		if !ok {
			var want C
			return false, fmt.Errorf("kubetest: the watch of %T sent a %T, not a %T", list, obj, want)
		}
		return ready(child), nil
	}
	state, rv, err := w.read(ctx)
	if err != nil {
		return nil, err
	}
	w.children = state
	live, readyNow := count(state)
	w.bounds = Bounds{MostLive: live, FewestReady: readyNow}
	ctx, w.cancel = context.WithCancel(ctx)
	wi, err := w.watch(ctx, rv)
	if err != nil {
		w.cancel()
		return nil, err
	}
	go w.run(ctx, wi, rv)
	return w, nil
}

// Bounds returns the bounds seen so far.
func (w *BoundsWatch) Bounds() Bounds {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bounds
}

// Stop waits until the watch has seen the children as the API server
// holds them now (so that a change made just before is not lost in
// flight), for as long as ctx allows, then ends the watch and returns the
// bounds it saw. It returns an error when the watch failed, or did not
// catch up before ctx ended; the bounds are what it saw until then.
func (w *BoundsWatch) Stop(ctx context.Context) (Bounds, error) {
	caughtUp := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		now, _, err := w.read(ctx)
		if err != nil {
			return false, err
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.err != nil || maps.Equal(now, w.children), nil
	})
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if caughtUp != nil && w.err == nil {
		return w.bounds, fmt.Errorf("kubetest: the watch of the children did not catch up with the API server: %w", caughtUp)
	}
	return w.bounds, w.err
}

// read lists the owner's children and returns what they are, with the
// list's resource version.
func (w *BoundsWatch) read(ctx context.Context) (map[string]seen, string, error) {
	l := w.list.DeepCopyObject().(client.ObjectList)
	if err := w.c.List(ctx, l, client.InNamespace(w.ns)); err != nil {
		return nil, "", fmt.Errorf("kubetest: list children: %w", err)
	}
	objs, err := meta.ExtractList(l)
	if err != nil {
		return nil, "", fmt.Errorf("kubetest: list children: %w", err)
	}
	state := map[string]seen{}
	for _, o := range objs {
		obj, ok := o.(client.Object)
		if !ok {
			return nil, "", fmt.Errorf("kubetest: list children: %T is not an object", o)
		}
		if s, mine, err := w.see(obj); err != nil {
			return nil, "", err
		} else if mine {
			state[obj.GetName()] = s
		}
	}
	return state, l.GetResourceVersion(), nil
}

// see describes obj, and reports whether the owner controls it.
func (w *BoundsWatch) see(obj client.Object) (seen, bool, error) {
	if ref := metav1.GetControllerOfNoCopy(obj); ref == nil || ref.UID != w.owner {
		return seen{}, false, nil
	}
	ready, err := w.ready(obj)
	return seen{deleting: obj.GetDeletionTimestamp() != nil, ready: ready}, true, err
}

func (w *BoundsWatch) watch(ctx context.Context, rv string) (watch.Interface, error) {
	wi, err := w.c.Watch(ctx, w.list.DeepCopyObject().(client.ObjectList), client.InNamespace(w.ns),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
	if err != nil {
		return nil, fmt.Errorf("kubetest: watch children: %w", err)
	}
	return wi, nil
}

// run records every event until ctx ends, watching again from the last
// resource version it saw (rv to begin with) when the API server ends a
// watch.
func (w *BoundsWatch) run(ctx context.Context, wi watch.Interface, rv string) {
	defer close(w.done)
	defer func() { wi.Stop() }()
	for {
		var ev watch.Event
		var open bool
		select {
		case <-ctx.Done():
			return
		case ev, open = <-wi.ResultChan():
		}
		if !open {
			wi.Stop()
			var err error
			if wi, err = w.watch(ctx, rv); err != nil {
				if ctx.Err() == nil {
					w.fail(err)
				}
				wi = watch.NewEmptyWatch()
				return
			}
			continue
		}
		if ev.Type == watch.Error {
			w.fail(fmt.Errorf("kubetest: watch children: %w", apierrors.FromObject(ev.Object)))
			return
		}
		obj, ok := ev.Object.(client.Object)
		if !ok || ev.Type == watch.Bookmark {
			continue
		}
		rv = obj.GetResourceVersion()
		s, mine, err := w.see(obj)
		if err != nil {
			w.fail(err)
			return
		}
		w.record(obj.GetName(), s, mine && ev.Type != watch.Deleted)
	}
}

// record sets what the watch saw of child name (gone when !present) and
// updates the bounds.
func (w *BoundsWatch) record(name string, s seen, present bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if present {
		w.children[name] = s
	} else {
		delete(w.children, name)
	}
	live, ready := count(w.children)
	w.bounds.MostLive = max(w.bounds.MostLive, live)
	w.bounds.FewestReady = min(w.bounds.FewestReady, ready)
}

// fail records why the watch ended early.
func (w *BoundsWatch) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = errors.Join(w.err, err)
}

// count returns the children that live, counting those being deleted,
// and the ready ones not being deleted.
func count(children map[string]seen) (live, ready int) {
	for _, s := range children {
		live++
		if s.ready && !s.deleting {
			ready++
		}
	}
	return live, ready
}
