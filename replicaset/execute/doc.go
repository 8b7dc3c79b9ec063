// Package execute carries out a replicaset.Plan against an Actuator, the two
// operations a platform must offer (create a named replica, delete a
// replica). It is written once and used by every binding: the
// controller-runtime reconciler and the VM provider's actuator.
//
// It issues creates in slow-start batches (1, 2, 4, …) and stops after the
// first batch with a failure, as the Kubernetes ReplicaSet controller does;
// it starts deletes in plan order; it stops starting work when the context
// ends; and it reports what succeeded, what was skipped, and every error,
// each as an *OpError naming the replica.
//
// The caller supplies the names of the replicas to create (see the naming
// package), so that a create retried after a lost response is idempotent.
package execute
