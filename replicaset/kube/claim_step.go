package kube

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// claim returns the children owner controls whose labels match selector.
// When write is true it first adopts matching orphans (after confirming the
// owner with a live read) and releases owned children that no longer
// match. Children controlled by anyone else are never touched.
func (r *Reconciler[O, C]) claim(ctx context.Context, owner client.Object, selector labels.Selector, children []client.Object, write bool) ([]client.Object, error) {
	var mine []client.Object
	var errs []error
	ownerLive := false // checked once, on the first orphan
	for _, c := range children {
		switch ClaimFor(owner.GetUID(), selector.Matches(labels.Set(c.GetLabels())), c) {
		case Keep:
			mine = append(mine, c)
		case Adopt:
			if !write || owner.GetDeletionTimestamp() != nil {
				continue
			}
			if !ownerLive {
				live, err := r.confirmOwner(ctx, owner)
				if err != nil {
					return nil, err
				}
				if !live {
					return mine, nil // a deleted or replaced owner adopts nothing
				}
				ownerLive = true
			}
			if err := r.patchOwnership(ctx, c, func(obj client.Object) error {
				return controllerutil.SetControllerReference(owner, obj, r.Scheme)
			}); err != nil {
				errs = append(errs, fmt.Errorf("adopt %s: %w", c.GetName(), err))
				continue
			}
			r.event(owner, corev1.EventTypeNormal, "SuccessfulAdopt", "Adopt", "Adopted %s", c.GetName())
			mine = append(mine, c)
		case Release:
			if !write {
				continue
			}
			if err := r.patchOwnership(ctx, c, func(obj client.Object) error {
				return controllerutil.RemoveControllerReference(owner, obj, r.Scheme)
			}); err != nil {
				errs = append(errs, fmt.Errorf("release %s: %w", c.GetName(), err))
				continue
			}
			r.event(owner, corev1.EventTypeNormal, "SuccessfulRelease", "Release", "Released %s: its labels no longer match", c.GetName())
		}
	}
	return mine, errors.Join(errs...)
}

// confirmOwner reads the owner from the API server: it is live when it
// exists with the same UID and is not being deleted.
func (r *Reconciler[O, C]) confirmOwner(ctx context.Context, owner client.Object) (bool, error) {
	fresh := r.EmptyOwner()
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(owner), fresh)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("confirm owner %s before adopting: %w", owner.GetName(), err)
	}
	return fresh.GetUID() == owner.GetUID() && fresh.GetDeletionTimestamp() == nil, nil
}

// patchOwnership changes a child's owner references with an optimistic
// lock, so a concurrent change by another controller wins cleanly.
func (r *Reconciler[O, C]) patchOwnership(ctx context.Context, c client.Object, change func(client.Object) error) error {
	before := c.DeepCopyObject().(client.Object)
	if err := change(c); err != nil {
		return err
	}
	return r.Client.Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

func (r *Reconciler[O, C]) event(owner client.Object, kind, reason, action, note string, args ...any) {
	if r.Events != nil {
		r.Events.Eventf(owner, nil, kind, reason, action, note, args...)
	}
}
