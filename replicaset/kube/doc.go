// Package kube binds the replicaset planner to controller-runtime: it turns
// the children a Kubernetes owner controls into replicaset.Replica values,
// and remembers a pass's writes until the informer cache has seen them.
//
// [Replica] maps a child's metadata, including the [AnnotationDeleteFirst],
// [AnnotationDeletionCost] and [AnnotationScaleInProtection] annotations.
// [Expectations] keeps a reconciler from acting on a stale cache: after a
// pass creates or deletes children, the owner is acted on again only once
// the cache shows those writes, or, when it has not within a TTL, after a
// read from the API server itself.
package kube
