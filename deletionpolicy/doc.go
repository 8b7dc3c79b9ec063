// Package deletionpolicy chooses which replicas a scale-down removes.
//
// A [Policy] ranks deletion candidates; [replicaset.Compute] applies the
// universal tiers around it (its documentation states the whole deletion
// order), so every policy, shipped or yours, obeys the same outer order
// and only ranks what those tiers leave to it.
//
// # Shipped policies
//
// [Random] (the default of the VirtualMachineReplicaSet this library grew
// from: equal weight, but stable per replica and seed), [Oldest], [Newest],
// [UnhealthyFirst] (not provisioned, then not ready, then not available, as
// the Kubernetes ReplicaSet ranks pods) and [HighestOrdinal]. Each honours the
// deletion-cost hint and states its order in its doc comment.
//
// # Registry
//
// Specs name their policy as a string. A [Registry] maps names to policies;
// it is an explicit value built by the caller ([Default] for the shipped
// ones), never a package global filled by init functions. Looking up an
// unknown name returns an [UnknownPolicyError] listing the known names, which
// a controller can surface as a condition.
//
// The deletionpolicytest package checks that any policy, yours included,
// keeps the contract.
package deletionpolicy
