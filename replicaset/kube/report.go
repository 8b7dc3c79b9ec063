package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// report settles the pass and writes what it says: expectations dropped,
// names remembered as taken, the owner's status (patched only when it
// changed), events and metrics; and it tells controller-runtime when to
// come back.
func (r *Reconciler[O, C]) report(ctx context.Context, o *observation, d decision, out outcome, took time.Duration) (reconcile.Result, error) {
	v := settle(o, d, out)
	r.Expectations.Forgive(o.key, v.forgive...)
	r.Expectations.ForgiveDeletes(o.key, v.forgiveUIDs...)
	r.Expectations.noteTaken(o.key, v.taken, o.now)
	if r.Events != nil {
		for _, e := range v.events {
			r.Events.Eventf(o.owner, nil, e.kind, e.reason, e.action, "%s", e.note)
		}
	}
	r.Metrics.record(r.kind(o.owner), d, out, took)

	if !out.ownerGone {
		before := o.owner.DeepCopyObject().(client.Object)
		r.Adapter.SetStatus(o.owner.(O), v.status)
		if !equality.Semantic.DeepEqual(before, o.owner) {
			err := r.Client.Status().Patch(ctx, o.owner, client.MergeFrom(before))
			if apierrors.IsNotFound(err) {
				r.Expectations.Forget(o.key) // deleted since the read: nothing left to report
				return reconcile.Result{}, nil
			}
			if err != nil {
				return reconcile.Result{}, errors.Join(v.retry, fmt.Errorf("patch status of %s: %w", o.key, err))
			}
		}
	}
	switch {
	case v.retry != nil:
		return reconcile.Result{}, v.retry
	case v.terminal != nil:
		return reconcile.Result{}, reconcile.TerminalError(v.terminal)
	}
	return reconcile.Result{RequeueAfter: v.requeue}, nil
}

// kind names the owner's kind for metrics; typed objects from the cache
// carry no TypeMeta, so it comes from the scheme.
func (r *Reconciler[O, C]) kind(obj client.Object) string {
	gvk, err := apiutil.GVKForObject(obj, r.Scheme)
	if err != nil {
		return "unknown"
	}
	return gvk.Kind
}
