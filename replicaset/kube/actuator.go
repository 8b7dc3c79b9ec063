package kube

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/execute"
)

// actuator creates and deletes one owner's children through the client.
type actuator[O, C client.Object] struct {
	r     *Reconciler[O, C]
	owner O
}

var _ execute.Actuator = (*actuator[client.Object, client.Object])(nil)

// Create creates the child called name with a controller reference (with
// blockOwnerDeletion) to the owner. A child of that name that the owner
// already controls is success: the create was retried.
func (a *actuator[O, C]) Create(ctx context.Context, name string) error {
	child, err := a.r.Adapter.NewChild(a.owner)
	if err != nil {
		return err
	}
	child.SetName(name)
	child.SetNamespace(a.owner.GetNamespace())
	if err := controllerutil.SetControllerReference(a.owner, child, a.r.Scheme); err != nil {
		return err
	}
	err = a.r.Client.Create(ctx, child)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	existing := a.r.EmptyChild()
	if gerr := a.r.APIReader.Get(ctx, client.ObjectKeyFromObject(child), existing); gerr != nil {
		return fmt.Errorf("%w (and reading it: %w)", err, gerr)
	}
	if ref := metav1.GetControllerOfNoCopy(existing); ref != nil && ref.UID == a.owner.GetUID() {
		return nil
	}
	return fmt.Errorf("%s exists and is not controlled by %s: %w", name, a.owner.GetName(), err)
}

// Delete deletes the child, only if it is still the one planned (same UID).
// A child already gone is success.
func (a *actuator[O, C]) Delete(ctx context.Context, r replicaset.Replica) error {
	child := a.r.EmptyChild()
	child.SetName(r.Name)
	child.SetNamespace(a.owner.GetNamespace())
	uid := types.UID(r.UID)
	err := a.r.Client.Delete(ctx, child, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
