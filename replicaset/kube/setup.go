package kube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// noController is the child index's value for objects without a
// controller (no UID is ever this string).
const noController = "none"

// anySelector is the owner index's value for owners whose selector has no
// matchLabels pair.
const anySelector = "*"

// SetupWithManager fills in what the manager provides (Client, Cache,
// APIReader, Scheme, Events and Metrics when nil), registers the indexes
// the reconciler reads through, and registers the reconciler under name:
// it watches owners, the children they control, and orphans that an
// owner's selector matches.
//
// The indexes are what make a pass cost what its owner has, not what the
// namespace holds: children are indexed by their controller's UID (orphans
// under one value of their own), and owners by one matchLabels pair of
// their selector, so an orphan's owners are found from its labels.
//
// It logs, to the manager's logger, which of the optional interfaces
// ([Zoner], [InPlaceUpdater], [TemplateMatcher], [HealthChecker],
// [Starter], [Restarter], [InPlaceRollout], [InPlaceSubresource]) the
// Adapter implements and which it does not, and an error for each it seems meant to
// implement but does not (a method of the interface's with another
// signature, or on the pointer of an Adapter given as a value): the
// Reconciler finds them by type assertion, so such an Adapter silently
// goes without.
func (r *Reconciler[O, C]) SetupWithManager(mgr ctrl.Manager, name string) error {
	managersClient := r.Client == nil
	if managersClient {
		r.Client = mgr.GetClient()
	}
	var informers cache.Informers // read directly: the manager's own cache
	if r.Cache == nil {
		r.Cache = mgr.GetCache()
		informers = mgr.GetCache()
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Scheme == nil {
		r.Scheme = mgr.GetScheme()
	}
	if r.Events == nil {
		r.Events = mgr.GetEventRecorder(name)
	}
	if r.Metrics == nil {
		m, err := NewMetrics(metrics.Registry)
		if err != nil {
			return err
		}
		r.Metrics = m
	}
	if err := r.setup(mgr.GetFieldIndexer(), informers, name, mgr.GetLogger()); err != nil {
		return err
	}
	if managersClient && isPlainClient(r.Client) {
		d, err := newChildDeleter(mgr.GetConfig(), mgr.GetHTTPClient(), mgr.GetRESTMapper(), r.childGVK)
		if err != nil {
			return err
		}
		r.deleter = d
	}
	workers := r.MaxConcurrentReconciles
	if workers == 0 {
		workers = DefaultMaxConcurrentReconciles
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(r.owner.newObj(), builder.WithPredicates(ownerChanged)).
		Watches(r.child.newObj(), r.childEvents()).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// SetupWithIndexer readies the Reconciler to run passes without a
// manager: it resolves the owner's and the child's kinds through Scheme
// (which must be set), and registers with indexer the field indexes the
// reconciler reads through, named after name (the controller's name, as
// given to SetupWithManager). It watches nothing and
// starts nothing: the caller calls Reconcile itself, for instance in a
// unit test. Client, Cache and APIReader must be set before the first
// Reconcile, and Cache must serve the indexes registered here.
// controller-runtime's fake client takes indexes only through its
// builder, before it is built, and is no FieldIndexer itself:
// [github.com/replicakit/replicakit/replicaset/kube/kubetest.NewFakeClient]
// bridges the two. It logs what it found of the Adapter's optional
// interfaces as SetupWithManager does, to controller-runtime's logger
// (ctrl.Log, set with ctrl.SetLogger).
func (r *Reconciler[O, C]) SetupWithIndexer(indexer client.FieldIndexer, name string) error {
	return r.setup(indexer, nil, name, ctrl.Log)
}

// setup is SetupWithIndexer, with the child index registered on the
// child's informer in informers when they keep an indexer (see
// informerIndex) rather than as a field index, and what it found of the
// Adapter's optional interfaces logged to logger.
func (r *Reconciler[O, C]) setup(indexer client.FieldIndexer, informers cache.Informers, name string, logger logr.Logger) error {
	if name == "" {
		return errors.New("kube: SetupWithIndexer needs a controller name")
	}
	var missing []string
	for _, f := range []struct {
		name string
		nil  bool
	}{
		{"Scheme", r.Scheme == nil}, {"Adapter", r.Adapter == nil},
	} {
		if f.nil {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("kube: Reconciler.%s must be set", strings.Join(missing, ", Reconciler."))
	}
	owner, err := kindOf[O](r.Scheme, r.OwnerKind, "OwnerKind", "owner")
	if err != nil {
		return err
	}
	child, err := kindOf[C](r.Scheme, r.ChildKind, "ChildKind", "child")
	if err != nil {
		return err
	}
	// The Reconciler is changed only once every index is registered, so a
	// failed setup leaves it as it was: Reconcile still refuses to run.
	ctx := context.Background()
	var direct toolscache.Indexer
	if informers != nil {
		if direct, err = r.informerIndex(ctx, informers, child.newObj(), name); err != nil {
			return err
		}
	}
	if direct == nil {
		if err := indexer.IndexField(ctx, child.newObj(), childIndexName(name), controllerUID); err != nil {
			return fmt.Errorf("index children by controller: %w", err)
		}
	}
	if err := indexer.IndexField(ctx, owner.newObj(), ownerIndexName(name), r.selectorKey); err != nil {
		return fmt.Errorf("index owners by selector: %w", err)
	}
	r.owner, r.child = owner, child
	r.ownerGVK, r.childGVK, r.index, r.childIndexer = owner.gvk, child.gvk, name, direct
	r.trackTables()
	r.logSetup(logger, name)
	return nil
}

// childEvents maps an event of a child to the owner that controls it, read
// off its controller reference (the child is in its owner's namespace), and
// an orphan's to the owners whose selector matches it. One handler per child kind, and no REST mapping per event.
func (r *Reconciler[O, C]) childEvents() handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return handler.Funcs{
		CreateFunc:  func(ctx context.Context, e event.CreateEvent, q queue) { r.ownersOf(ctx, e.Object, q.Add) },
		DeleteFunc:  func(ctx context.Context, e event.DeleteEvent, q queue) { r.ownersOf(ctx, e.Object, q.Add) },
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q queue) { r.ownersOf(ctx, e.Object, q.Add) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			// Both: a child released or adopted by another concerns
			// the owner it left as much as the one it joined.
			r.ownersOf(ctx, e.ObjectOld, q.Add)
			r.ownersOf(ctx, e.ObjectNew, q.Add)
		},
	}
}

// ownersOf calls add with each owner that child concerns: its controller
// when that is of the owner kind, or, for an orphan, its candidate owners.
func (r *Reconciler[O, C]) ownersOf(ctx context.Context, child client.Object, add func(reconcile.Request)) {
	if child == nil {
		return
	}
	if ref := metav1.GetControllerOfNoCopy(child); ref != nil {
		if ref.Kind == r.ownerGVK.Kind && groupOf(ref.APIVersion) == r.ownerGVK.Group {
			add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: child.GetNamespace(), Name: ref.Name}})
		}
		return
	}
	for _, req := range r.ownersOfOrphan(ctx, child) {
		add(req)
	}
}

// groupOf is the group of an apiVersion ("" for the core group's "v1").
func groupOf(apiVersion string) string {
	group, _, found := strings.Cut(apiVersion, "/")
	if !found {
		return ""
	}
	return group
}

// ownerChanged lets through the owner updates a pass can act on: its spec
// (generation), labels, annotations and deletion. An update of the status
// alone, which this reconciler writes itself, starts no pass: each would
// cost a pass that finds nothing to do.
var ownerChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, n := e.ObjectOld, e.ObjectNew
	return o.GetGeneration() != n.GetGeneration() ||
		!maps.Equal(o.GetLabels(), n.GetLabels()) ||
		!maps.Equal(o.GetAnnotations(), n.GetAnnotations()) ||
		!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp())
}}

// childIndex and ownerIndex name the reconciler's indexes; the
// controller's name keeps two reconcilers of one kind apart.
func (r *Reconciler[O, C]) childIndex() string { return childIndexName(r.index) }
func (r *Reconciler[O, C]) ownerIndex() string { return ownerIndexName(r.index) }

// childIndexName and ownerIndexName name the field indexes of the
// controller called name.
func childIndexName(name string) string { return "replicakit.io/controller-uid." + name }
func ownerIndexName(name string) string { return "replicakit.io/selector." + name }

// controllerUID indexes a child by its controller's UID; a child without a
// controller goes under noController and under noController/k=v for each
// of its labels, so an owner finds its candidate orphans through one pair
// of its selector.
func controllerUID(obj client.Object) []string {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		return []string{string(ref.UID)}
	}
	keys := []string{noController}
	for k, v := range obj.GetLabels() {
		keys = append(keys, noController+"/"+k+"="+v)
	}
	return keys
}

// orphanKey is the child index's value under which an owner with selector
// sel finds its candidate orphans.
func orphanKey(sel *metav1.LabelSelector) string {
	if pair, ok := firstPair(sel); ok {
		return noController + "/" + pair
	}
	return noController
}

// firstPair is the selector's matchLabels pair of the smallest key, as
// key=value; every object the selector matches carries it.
func firstPair(sel *metav1.LabelSelector) (string, bool) {
	if sel == nil || len(sel.MatchLabels) == 0 {
		return "", false
	}
	k := slices.Min(slices.Collect(maps.Keys(sel.MatchLabels)))
	return k + "=" + sel.MatchLabels[k], true
}

// selectorKey indexes an owner by the first matchLabels pair of its
// selector (key=value), which every child it selects carries.
func (r *Reconciler[O, C]) selectorKey(obj client.Object) []string {
	owner, ok := obj.(O)
	if !ok {
		return nil
	}
	spec, err := r.Adapter.Spec(owner)
	if err != nil || spec.Selector == nil {
		return nil
	}
	if pair, ok := firstPair(spec.Selector); ok {
		return []string{pair}
	}
	return []string{anySelector}
}

// ownersOfOrphan maps a child without a controller to the owners in its
// namespace whose selector matches it, so an orphan is adopted as soon as
// it appears rather than at its owner's next event. It reads only the
// owners indexed under one of the child's labels (or under no pair).
func (r *Reconciler[O, C]) ownersOfOrphan(ctx context.Context, c client.Object) []reconcile.Request {
	if metav1.GetControllerOfNoCopy(c) != nil || c.GetDeletionTimestamp() != nil {
		return nil
	}
	keys := []string{anySelector}
	for k, v := range c.GetLabels() {
		keys = append(keys, k+"="+v)
	}
	var out []reconcile.Request
	var listErr error
	for _, key := range keys {
		l := r.owner.newList()
		if err := r.Cache.List(ctx, l, client.InNamespace(c.GetNamespace()),
			client.MatchingFields{r.ownerIndex(): key}, client.UnsafeDisableDeepCopy); err != nil {
			listErr = cmp.Or(listErr, err)
			continue
		}
		_ = forEachObject(l, func(obj client.Object) {
			owner, ok := obj.(O)
			if !ok {
				return
			}
			spec, err := r.Adapter.Spec(owner)
			if err != nil {
				return
			}
			sel, err := selectorOf(spec)
			if err != nil || !sel.Matches(labels.Set(c.GetLabels())) {
				return
			}
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(owner)})
		})
	}
	if listErr != nil {
		// An event handler returns no error: say so, once, and the orphan
		// waits for an owner's next event.
		log.FromContext(ctx).Error(listErr, "listing the owners that may adopt an orphan", "child", client.ObjectKeyFromObject(c))
	}
	return out
}
