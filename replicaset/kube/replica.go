package kube

import (
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/replicakit/replicakit/replicaset"
)

// Annotations a person (or another controller) puts on a child to steer
// scale-down.
const (
	// AnnotationDeleteFirst marks a child for deletion on the next
	// scale-down, ahead of the policy's own order (replicaset.Compute
	// states the whole order). Any value but "false" marks it.
	AnnotationDeleteFirst = "replicakit.io/delete-first"
	// AnnotationDeletionCost is an integer hint: among children the
	// policy ranks alike, lower cost is deleted first (as
	// controller.kubernetes.io/pod-deletion-cost). Default 0.
	AnnotationDeletionCost = "replicakit.io/deletion-cost"
	// AnnotationScaleInProtection set to "true" protects a child from
	// scale-down: it is never chosen.
	AnnotationScaleInProtection = "replicakit.io/scale-in-protection"
)

// ReplicaOf describes a child object's metadata as the planner sees it:
// identity, creation time, whether it is being deleted, its revision
// (RevisionLabel), and the three annotations above; not its lifecycle
// (AnnotationPreparing, the hooks and gates under a domain: see
// PreDeleteHooks and LaunchGates). The caller adds what only the child's kind knows
// (phase, readiness). A deletion cost that is not an integer is ignored
// (cost 0), and the returned error says so, naming the child and the
// value, so the caller can report it without failing the pass (the
// Reconciler records a Warning event and says it in the ReplicaFailure
// condition).
func ReplicaOf(obj metav1.Object) (replicaset.Replica, error) {
	r := replicaset.Replica{
		Name:      obj.GetName(),
		UID:       string(obj.GetUID()),
		CreatedAt: obj.GetCreationTimestamp().Time,
		Deleting:  obj.GetDeletionTimestamp() != nil,
		Revision:  obj.GetLabels()[RevisionLabel],
	}
	a := obj.GetAnnotations()
	if v, ok := a[AnnotationDeleteFirst]; ok && v != "false" {
		r.MarkedForDeletion = true
	}
	r.Protected = a[AnnotationScaleInProtection] == "true"
	if v, ok := a[AnnotationDeletionCost]; ok {
		cost, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return r, fmt.Errorf("child %s: annotation %s=%q is not an integer; using 0", obj.GetName(), AnnotationDeletionCost, v)
		}
		r.DeletionCost = cost
	}
	return r, nil
}
