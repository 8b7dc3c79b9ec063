package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// podState is what a rollout watch keeps of one Pod.
type podState struct {
	version     string
	ready       bool // the Ready condition is True
	terminating bool // deletionTimestamp set
}

// available: with minReadySeconds 0, as every rollout here has, a Pod is
// available when it is ready and not being deleted (a ReplicaSet's
// availableReplicas counts only active Pods).
func (s podState) available() bool { return s.ready && !s.terminating }

func stateOf(p *corev1.Pod) podState {
	s := podState{version: podVersion(p), terminating: p.DeletionTimestamp != nil}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			s.ready = true
		}
	}
	return s
}

// rolloutWatch counts the Pods of one namespace from a watch of the API
// server (an informer), independently of the controller rolling them: how
// many exist, are live (not being deleted), are available, and are
// available on the wanted version. While it tracks, it records the fewest
// available Pods and the most live ones it saw, and counts the Pods
// removed (kwok's final deletes).
type rolloutWatch struct {
	mu   sync.Mutex
	pods map[string]podState // by namespace/name
	want string              // the version a rollout moves to

	total, live, available, wantAvailable int

	tracking        bool
	fewestAvailable int
	mostLive        int
	mostTotal       int
	removed         int

	stop chan struct{}
}

// watchRollout starts a rollout watch of namespace ns and waits until it
// has listed the namespace.
func watchRollout(cs kubernetes.Interface, ns string) (*rolloutWatch, error) {
	x := &rolloutWatch{pods: map[string]podState{}, stop: make(chan struct{})}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { x.set(o) },
		UpdateFunc: func(_, o any) { x.set(o) },
		DeleteFunc: x.remove,
	}); err != nil {
		return nil, err
	}
	f.Start(x.stop)
	if !cache.WaitForCacheSync(x.stop, inf.HasSynced) {
		close(x.stop)
		return nil, fmt.Errorf("pod informer for %s did not sync", ns)
	}
	return x, nil
}

func (x *rolloutWatch) close() { close(x.stop) }

// count adds (by +1) or takes away (by -1) s from the totals.
func (x *rolloutWatch) count(s podState, by int) {
	x.total += by
	if !s.terminating {
		x.live += by
	}
	if s.available() {
		x.available += by
		if s.version == x.want {
			x.wantAvailable += by
		}
	}
}

func (x *rolloutWatch) set(o any) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	key := p.Namespace + "/" + p.Name
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.pods[key]; ok {
		x.count(old, -1)
	}
	s := stateOf(p)
	x.pods[key] = s
	x.count(s, +1)
	x.note()
}

func (x *rolloutWatch) remove(o any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(o)
	if err != nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	old, ok := x.pods[key]
	if !ok {
		return
	}
	x.count(old, -1)
	delete(x.pods, key)
	if x.tracking {
		x.removed++
	}
	x.note()
}

// note records the extremes, while tracking. The caller holds mu.
func (x *rolloutWatch) note() {
	if !x.tracking {
		return
	}
	x.fewestAvailable = min(x.fewestAvailable, x.available)
	x.mostLive = max(x.mostLive, x.live)
	x.mostTotal = max(x.mostTotal, x.total)
}

// track sets the wanted version and starts recording the extremes and the
// removals from the counts as they are now.
func (x *rolloutWatch) track(want string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.want, x.wantAvailable = want, 0
	for _, s := range x.pods {
		if s.available() && s.version == want {
			x.wantAvailable++
		}
	}
	x.tracking, x.removed = true, 0
	x.fewestAvailable, x.mostLive, x.mostTotal = x.available, x.live, x.total
}

// untrack stops recording and returns what was recorded: the fewest
// available Pods, the most live Pods, the most Pods (those being deleted
// included), and the Pods removed.
func (x *rolloutWatch) untrack() (fewestAvailable, mostLive, mostTotal, removed int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.tracking = false
	return x.fewestAvailable, x.mostLive, x.mostTotal, x.removed
}

// settled reports whether the namespace holds exactly n Pods, all
// available on the wanted version (none on another, none being deleted).
func (x *rolloutWatch) settled(n int) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.total == n && x.wantAvailable == n
}

// empty reports whether the namespace holds no Pod.
func (x *rolloutWatch) empty() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.total == 0
}

// await polls done every 2 ms until it holds, for at most limit.
func await(ctx context.Context, what string, limit time.Duration, done func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for !done() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("not %s after %v", what, limit)
		case <-time.After(2 * time.Millisecond):
		}
	}
	return nil
}
