package kube

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A pass reads an owner's children (and its candidate orphans) through
// the index on their controller's UID. Through the cache's List, every
// read copies each child it finds into a list and takes its address back
// out (about a sixth of the binding's CPU in a rollout of 500 Pods). With
// the manager's own cache, whose informers hold an indexer, the reconciler
// instead registers its index on the child's informer itself and reads
// the cached objects from it as they are, which is what the cache's List
// does with client.UnsafeDisableDeepCopy, without the copies. Any other
// Cache (one given in Reconciler.Cache, a cache restricted to namespaces,
// whose informers have no one indexer) is read through List and the field
// index of SetupWithIndexer. With a manager whose NewCache wraps the cache,
// the owner is still read through the wrapper, the children not.

// informerIndex registers the reconciler's child index, named after name,
// on the informer that informers keep for the child's kind (of child, an
// empty one), and returns
// that informer's indexer; nil when the informer keeps none (a cache over
// several namespaces), when the index is then left to a field index.
func (r *Reconciler[O, C]) informerIndex(ctx context.Context, informers cache.Informers, child client.Object, name string) (toolscache.Indexer, error) {
	// Not blocking until synced, as IndexField does not: a manager
	// already running would otherwise wait here for a cache that may
	// never sync (missing RBAC), where the controller fails after its
	// CacheSyncTimeout instead.
	inf, err := informers.GetInformer(ctx, child, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("index children by controller: %w", err)
	}
	withIndexer, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return nil, nil
	}
	idx := withIndexer.GetIndexer()
	if idx == nil {
		return nil, nil
	}
	if err := inf.AddIndexers(toolscache.Indexers{childIndexName(name): namespacedControllerUID}); err != nil {
		return nil, fmt.Errorf("index children by controller: %w", err)
	}
	if idx.GetIndexers()[childIndexName(name)] == nil {
		return nil, nil // an informer that does not keep what it is given (a test double)
	}
	return idx, nil
}

// namespacedControllerUID indexes a cached child as controllerUID does,
// each value prefixed with its namespace and a slash.
func namespacedControllerUID(obj any) ([]string, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return nil, nil
	}
	keys := controllerUID(o)
	for i, k := range keys {
		keys[i] = o.GetNamespace() + "/" + k
	}
	return keys, nil
}

// children lists the children of namespace ns under the child index's
// value key (an owner's UID, or orphanKey) that sel matches (every one,
// when sel is nil). The objects are the cache's own: never modified.
func (r *Reconciler[O, C]) children(ctx context.Context, ns, key string, sel labels.Selector) ([]client.Object, error) {
	if r.childIndexer == nil {
		opts := []client.ListOption{client.InNamespace(ns), client.MatchingFields{r.childIndex(): key}, client.UnsafeDisableDeepCopy}
		if sel != nil {
			opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
		}
		return r.list(ctx, r.Cache, opts...)
	}
	items, err := r.childIndexer.ByIndex(r.childIndex(), ns+"/"+key)
	if err != nil {
		return nil, fmt.Errorf("list children: %w", err)
	}
	out := make([]client.Object, 0, len(items))
	for _, it := range items {
		o, ok := it.(client.Object)
		if !ok || sel != nil && !sel.Matches(labels.Set(o.GetLabels())) {
			continue
		}
		out = append(out, o)
	}
	return out, nil
}
