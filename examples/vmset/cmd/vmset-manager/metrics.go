package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
)

// cachedResources are the kinds the manager's informers hold: the sets,
// which the binding reconciles, and the VirtualMachines, the sets'
// children, which the VirtualMachine controller reconciles too. The
// controllers read nothing else through the manager's cache.
var cachedResources = []struct {
	resource string
	obj      client.Object
}{
	{"virtualmachinereplicasets", &vmv1.VirtualMachineReplicaSet{}},
	{"virtualmachines", &vmv1.VirtualMachine{}},
}

// cacheObjects is the collector of
//
//	vmset_cache_objects{resource}
//
// the objects in the manager's informer caches, per resource, counted at
// each scrape from the informers' stores by key (no object is listed or
// copied). With a steady number of sets and VMs it stays steady: a soak
// reads it to tell a cache that holds deleted objects from a process that
// leaks. The stores of several managers in one process (tests) are added
// up; a store added twice counts once.
type cacheObjects struct {
	desc *prometheus.Desc

	mu      sync.Mutex
	handles map[*int][]resourceStore // per countCachedObjects call not yet stopped
}

// resourceStore is the store of one resource's informer.
type resourceStore struct {
	resource string
	store    toolscache.Store
}

func newCacheObjects() *cacheObjects {
	return &cacheObjects{
		desc: prometheus.NewDesc("vmset_cache_objects",
			"Objects in vmset-manager's informer caches.", []string{"resource"}, nil),
		handles: map[*int][]resourceStore{},
	}
}

// Describe implements prometheus.Collector.
func (c *cacheObjects) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector: a sample per resource that
// some store is counted for.
func (c *cacheObjects) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	stores := map[string]map[toolscache.Store]struct{}{}
	for _, rs := range c.handles {
		for _, s := range rs {
			if stores[s.resource] == nil {
				stores[s.resource] = map[toolscache.Store]struct{}{}
			}
			stores[s.resource][s.store] = struct{}{}
		}
	}
	c.mu.Unlock()
	for _, r := range cachedResources {
		if len(stores[r.resource]) == 0 {
			continue
		}
		n := 0
		for s := range stores[r.resource] {
			n += len(s.ListKeys())
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), r.resource)
	}
}

// countCachedObjects has reg report vmset_cache_objects for informers (the
// manager's cache), until the returned stop is called. It takes the
// informers of cachedResources without waiting for them to sync; the
// controllers' setup has made them already, or the controllers would make
// them when they start. An informer that keeps no store of its own (a
// cache restricted to several namespaces) is not counted.
func countCachedObjects(ctx context.Context, informers cache.Informers, reg prometheus.Registerer) (stop func(), err error) {
	c := newCacheObjects()
	if err := reg.Register(c); err != nil {
		var already prometheus.AlreadyRegisteredError
		existing, ok := (*cacheObjects)(nil), false
		if errors.As(err, &already) {
			existing, ok = already.ExistingCollector.(*cacheObjects)
		}
		if !ok {
			return nil, err
		}
		c = existing
	}
	var stores []resourceStore
	for _, r := range cachedResources {
		inf, err := informers.GetInformer(ctx, r.obj, cache.BlockUntilSynced(false))
		if err != nil {
			return nil, fmt.Errorf("informer of %s: %w", r.resource, err)
		}
		if s, ok := inf.(interface{ GetStore() toolscache.Store }); ok && s.GetStore() != nil {
			stores = append(stores, resourceStore{r.resource, s.GetStore()})
		}
	}
	handle := new(int)
	c.mu.Lock()
	c.handles[handle] = stores
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.handles, handle)
	}, nil
}
