// Package kube binds the replicaset planner to controller-runtime: a
// generic [Reconciler] keeps the children of any owner kind converged on the
// owner's desired count, with a page of kind-specific code (an [Adapter]).
//
// # One reconcile
//
// Each pass is four steps. Read: the owner and the children in its
// namespace from the cache; children it controls and its selector matches
// are its replicas, matching orphans are adopted (after a read from the API
// server confirms the owner is live), owned children that stopped matching
// are released, and children controlled by anyone else are never touched.
// Decide: replicaset.Compute, with the owner's deletion policy looked up in
// a deletionpolicy.Registry. Act: execute.Plan creates children with names
// from the naming package and a controller reference with
// blockOwnerDeletion, with slow start, and deletes the planned
// victims with a UID precondition. Report: status and conditions
// (ReplicaFailure, ScalingUp, ScalingDown, Ready), patched only when they
// changed, an exact requeue for availability, events and metrics.
//
// An owner that is paused or being deleted is never acted on; an invalid
// spec or an unknown policy is reported in the ReplicaFailure condition and
// not retried.
//
// # Freshness
//
// Caches lag. [Expectations] remembers what a pass created and deleted and
// holds the next pass's actions until the cache shows those writes; when it
// has not within a TTL, the pass reads the children from the API server
// instead of assuming success. A create that failed is forgotten only when
// a read from the API server shows it did not happen. This is what keeps a
// replica set from ever creating more children than asked for.
//
// # Steering scale-down
//
// [AnnotationDeleteFirst], [AnnotationDeletionCost] and
// [AnnotationScaleInProtection] on a child map to the planner's marked,
// cost and protected replica fields (see [Replica]).
package kube
