package kube

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// SetupWithManager fills in what the manager provides (Client, APIReader,
// Scheme, Events when nil) and registers the reconciler under name,
// watching owners and the children they control.
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
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(r.EmptyOwner()).
		Owns(r.EmptyChild()).
		Complete(r)
}
