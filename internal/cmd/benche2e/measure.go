package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// podCount follows the number of Pods in a namespace through an informer,
// so waiting costs the API server one watch, not repeated lists.
type podCount struct {
	n    atomic.Int64
	stop chan struct{}
}

func countPods(cs kubernetes.Interface, ns string) (*podCount, error) {
	c := &podCount{stop: make(chan struct{})}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.n.Add(1) },
		DeleteFunc: func(any) { c.n.Add(-1) },
	}); err != nil {
		return nil, err
	}
	f.Start(c.stop)
	if !cache.WaitForCacheSync(c.stop, inf.HasSynced) {
		return nil, fmt.Errorf("pod informer for %s did not sync", ns)
	}
	return c, nil
}

// await waits until exactly n Pods exist.
func (c *podCount) await(ctx context.Context, n int, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for c.n.Load() != int64(n) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d Pods after %v, want %d", c.n.Load(), limit, n)
		case <-time.After(2 * time.Millisecond):
		}
	}
	return nil
}

func (c *podCount) close() { close(c.stop) }
