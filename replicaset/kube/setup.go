package kube

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// SetupWithManager fills in what the manager provides (Client, APIReader,
// Scheme, Events and Metrics when nil) and registers the reconciler under
// name, watching owners and the children they control, and, when
// EmptyOwnerList is set, orphans that an owner's selector matches.
func (r *Reconciler[O, C]) SetupWithManager(mgr ctrl.Manager, name string) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
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
	b := ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(r.EmptyOwner()).
		Owns(r.EmptyChild())
	if r.EmptyOwnerList != nil {
		b = b.Watches(r.EmptyChild(), handler.EnqueueRequestsFromMapFunc(r.ownersOfOrphan))
	}
	return b.Complete(r)
}

// ownersOfOrphan maps a child without a controller to the owners in its
// namespace whose selector matches it, so an orphan is adopted as soon as
// it appears rather than at its owner's next event.
func (r *Reconciler[O, C]) ownersOfOrphan(ctx context.Context, child client.Object) []reconcile.Request {
	if metav1.GetControllerOfNoCopy(child) != nil || child.GetDeletionTimestamp() != nil {
		return nil
	}
	l := r.EmptyOwnerList()
	if err := r.Client.List(ctx, l, client.InNamespace(child.GetNamespace())); err != nil {
		return nil
	}
	items, err := meta.ExtractList(l)
	if err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, it := range items {
		owner, ok := it.(O)
		if !ok {
			continue
		}
		spec, err := r.Adapter.Spec(owner)
		if err != nil || spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(child.GetLabels())) {
			continue
		}
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(owner)})
	}
	return out
}
