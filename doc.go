// Package replicakit is a library of replica-set reconciliation primitives
// for virtual machines and any other Kubernetes-managed thing: keep N
// replicas converged on a desired count, pick the right replica to remove,
// name new ones safely, report honest status, and never touch what you do
// not own.
//
// The root package holds only this overview; the work is in its packages.
//
// # Organization
//
// replicakit is a functional core with a thin shell, in the manner of etcd's
// raft: decisions are pure functions that return values describing work, and
// I/O happens at the edges.
//
//   - [github.com/replicakit/replicakit/replicaset] is the core: the replica
//     state model, Compute (a scale plan from the desired count and the
//     observed replicas), status arithmetic and slow-start batch sizes. It
//     imports only the standard library, reads no clock and uses no global
//     randomness.
//   - [github.com/replicakit/replicakit/replicaset/execute] carries a plan out
//     against a two-method Actuator (create a named replica, delete a
//     replica) in slow-start batches, reporting every error. Every binding
//     uses it.
//   - [github.com/replicakit/replicakit/deletionpolicy] holds the deletion
//     orders (Random, Oldest, Newest, UnhealthyFirst, HighestOrdinal) and an
//     explicit Registry mapping the names users write in specs to policies;
//     deletionpolicytest checks any policy's contract.
//   - [github.com/replicakit/replicakit/naming] makes replica names valid as
//     Kubernetes object names, label values and vSphere VM names, so creates
//     are idempotent by name.
//
// # Getting started
//
// Describe what you observed as replicaset.Replica values, ask Compute for a
// plan, and carry it out:
//
//	policy, err := deletionpolicy.Default().Lookup(spec.DeletePolicy)
//	plan, err := replicaset.Compute(replicaset.Spec{Desired: 3, Seed: ownerSeed}, observed, policy, now)
//	names, err := naming.Random{Base: owner, Source: src}.Names(plan.Create, existingNames)
//	result := execute.Plan(ctx, actuator, plan, names, execute.Options{})
//
// Each package's documentation has runnable examples.
package replicakit
