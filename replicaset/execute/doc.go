// Package execute carries out a replicaset.Plan against an Actuator, the two
// operations a platform must offer (create a named replica, delete a
// replica). It is written once and used by every binding: the
// controller-runtime reconciler and vmprovider.Set.
//
// It issues creates with slow start, as the Kubernetes ReplicaSet
// controller does: one create first, and two more for each success, so the
// creates in flight double per round trip (1, 2, 4, …) and never exceed what
// the controller's batches would have started for as many successes; unlike
// batches, a slow create does not hold back the next ones. It starts no
// create once one has returned a failure (those already started finish);
// it starts deletes in plan order; it stops starting work when the context
// ends; and it reports what succeeded, what was skipped, and every error,
// each as an *OpError naming the replica.
//
// The caller supplies the names of the replicas to create (see the naming
// package), so that a create retried after a lost response is idempotent.
//
// A plan that spreads replicas over zones (replicaset.Spec.Zones) needs a
// ZonedActuator, which is told each new replica's zone; the result lists
// the zones whose creates failed (Result.FailedZones), for the caller to
// back off on the next passes (replicaset.History.After).
package execute
