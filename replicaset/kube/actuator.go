package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/execute"
)

// ErrNameTaken means a create found its name held by an object the owner
// does not control. The object is left alone; the name is not used again
// for that owner, and the next pass, which starts at once, creates the
// child under another name.
var ErrNameTaken = errors.New("kube: name taken by an object of another owner")

// unsureError is a create that failed without a clear answer (a timeout, a
// server error) and whose outcome a read could not settle either: the
// child may exist, so the pass keeps expecting it.
type unsureError struct{ err error }

func (e *unsureError) Error() string { return e.err.Error() + " (whether it was created is unknown)" }
func (e *unsureError) Unwrap() error { return e.err }

// actuator creates and deletes one owner's children through the client.
type actuator[O, C client.Object] struct {
	r     *Reconciler[O, C]
	owner O
	// revision is the template's, which every new child is labelled
	// with (RevisionLabel); empty without Spec.Rollout.
	revision string
	// versions holds the resourceVersion the pass read of each child it
	// may delete, by UID: a delete goes through only if the child is
	// still that version.
	versions map[types.UID]string
	// gates are the launch gates every new child starts with
	// (Lifecycle.LaunchGates).
	gates []string
}

// errChildChanged means a delete found its child changed since the pass
// read it (another resourceVersion, or another object of that name): the
// plan was made on what no longer holds, so the child is left, and the
// next pass, which the change's watch event starts, plans with it.
var errChildChanged = errors.New("kube: child changed since the pass read it")

var _ execute.ZonedActuator = (*actuator[client.Object, client.Object])(nil)

// Create creates the child called name in no zone (see CreateIn).
func (a *actuator[O, C]) Create(ctx context.Context, name string) error {
	return a.CreateIn(ctx, name, "")
}

// CreateIn creates the child called name, in zone unless it is empty,
// with a controller reference (with blockOwnerDeletion) to the owner. A
// child of that name that the owner already controls is success: the
// create was retried, or its response was lost. Only a create that failed
// without a clear answer, or found the name taken, costs a read from the
// API server; a refusal costs none.
func (a *actuator[O, C]) CreateIn(ctx context.Context, name, zone string) error {
	child, err := a.r.Adapter.NewChild(a.owner)
	if err != nil {
		return err
	}
	template := templateKeys(child.GetLabels()) // before the zone: SetZone may add labels
	if zone != "" {
		a.r.setZone(child, zone)
	}
	stampNew(child, template, a.revision)
	if len(a.gates) > 0 {
		gates := map[string]string{}
		for _, g := range a.gates {
			gates[LaunchGateAnnotation(a.r.hookDomain(), g)] = a.owner.GetName()
		}
		child = withAnnotations(child, gates).(C)
	}
	child.SetName(name)
	child.SetNamespace(a.owner.GetNamespace())
	if err := controllerutil.SetControllerReference(a.owner, child, a.r.Scheme); err != nil {
		return err
	}
	err = a.r.Client.Create(ctx, child)
	if err == nil || !apierrors.IsAlreadyExists(err) && !unclear(err) {
		return err // created, or refused: it did not happen
	}
	existing := a.r.child.newObj()
	switch gerr := a.r.APIReader.Get(ctx, client.ObjectKeyFromObject(child), existing); {
	case apierrors.IsNotFound(gerr):
		return err // it did not happen
	case gerr != nil:
		return &unsureError{fmt.Errorf("%w (and reading it: %w)", err, gerr)}
	}
	if ref := metav1.GetControllerOfNoCopy(existing); ref != nil && ref.UID == a.owner.GetUID() {
		return nil
	}
	return fmt.Errorf("%s exists and is not controlled by %s: %w", name, a.owner.GetName(), ErrNameTaken)
}

// unclear reports whether a failed write may still have happened: no
// answer from the API server, a timeout, or a server error. A 4xx answer
// (forbidden, invalid, quota, too many requests) is a refusal.
func unclear(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true // a transport error or an ended context
	}
	code := status.Status().Code
	return code == 0 || code >= http.StatusInternalServerError || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)
}

// Delete deletes the child, only if it is still the one planned (same UID)
// and, when the pass read it, unchanged since (same resourceVersion): a
// plan made on a child not yet ready, say, must not delete it once it is,
// whatever held the delete back meanwhile (the plan's creates, a retry).
// A child that changed is left, with an error wrapping errChildChanged. A
// child already gone is success. The request names the child by its
// metadata only; with the manager's own client it goes through the
// Reconciler's childDeleter, which does not read the API server's answer
// (the child being deleted).
func (a *actuator[O, C]) Delete(ctx context.Context, r replicaset.Replica) error {
	uid := types.UID(r.UID)
	pre := metav1.Preconditions{UID: &uid}
	if v := a.versions[uid]; v != "" {
		pre.ResourceVersion = &v
	}
	var err error
	if d := a.r.deleter; d != nil {
		err = d.delete(ctx, a.owner.GetNamespace(), r.Name, metav1.DeleteOptions{
			Preconditions: &pre, PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	} else {
		child := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: a.owner.GetNamespace(), Name: r.Name}}
		child.SetGroupVersionKind(a.r.childGVK)
		err = a.r.Client.Delete(ctx, child, client.Preconditions(pre), client.PropagationPolicy(metav1.DeletePropagationBackground))
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return fmt.Errorf("%w: %w", errChildChanged, err)
	}
	return err
}
