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
//     observed replicas, with zones, rollouts and self-healing), status
//     arithmetic and slow-start sizes. It imports only the standard library, reads no clock and uses
//     no global randomness.
//   - [github.com/replicakit/replicakit/replicaset/execute] carries a plan out
//     against a two-method Actuator (create a named replica, delete a
//     replica) with slow start (one create, then two more per success) and
//     reports every error. Every binding uses it.
//   - [github.com/replicakit/replicakit/deletionpolicy] holds the deletion
//     orders (Random, Oldest, Newest, UnhealthyFirst, HighestOrdinal) and an
//     explicit Registry mapping the names users write in specs to policies;
//     deletionpolicytest checks any policy's contract.
//   - [github.com/replicakit/replicakit/naming] makes replica names valid as
//     Kubernetes object names, label values and vSphere VM names, so creates
//     are idempotent by name.
//   - [github.com/replicakit/replicakit/replicaset/kube] binds the core to
//     controller-runtime: a generic Reconciler over any owner and child
//     kind, configured by a four-method Adapter;
//     [github.com/replicakit/replicakit/replicaset/kube/kubetest] runs its
//     passes in an importer's unit tests.
//   - [github.com/replicakit/replicakit/vmprovider] says what a replica set
//     needs from a VM platform and keeps a set of VMs without Kubernetes
//     (Set); [github.com/replicakit/replicakit/vmprovider/vsphere]
//     implements it with govmomi, and vmprovidertest checks any provider
//     and fakes one.
//
// # Getting started
//
// Describe what you observed as replicaset.Replica values, ask Compute for a
// plan, name the replicas it creates, and carry it out with execute.Plan.
// The README's tour is a complete program doing this; each package's
// documentation has runnable examples, and the example operator
// (github.com/replicakit/replicakit/examples/vmset) puts it all together
// for VirtualMachines in vCenter.
package replicakit
