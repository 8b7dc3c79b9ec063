// Package controllers holds the example operator's two controllers: the
// VirtualMachine controller, which realizes each VirtualMachine as a vSphere
// VM through a vmprovider.Provider, and the VirtualMachineReplicaSet
// controller, built from replicakit's controller-runtime binding.
//
// Zones: VirtualMachineReconciler.Zones maps each zone to a vSphere
// placement, and a VirtualMachine's spec.zone picks one; the replica-set
// adapter is a kube.Zoner that reads and writes spec.zone, refuses sets
// listing a zone without a placement, and describes a VirtualMachine whose
// clone vCenter refuses as failed, so that the set replaces it in another
// zone.
//
// Rollouts are on for every set. The adapter is a kube.TemplateMatcher
// too: a VirtualMachine without a revision label (made before rollouts, by
// v0.1.0, or adopted) whose spec is not its set's template's is replaced
// under the set's strategy rather than labelled as current.
//
// Self-healing is on for a set with spec.remediation. The VirtualMachine
// controller writes each VirtualMachine's Healthy condition
// (ConditionHealthy) from what it reads of vCenter; the adapter is a
// kube.HealthChecker that reads it, and a kube.Restarter whose restart is
// a reset of the VM in vCenter (VirtualMachineReconciler.Reset, which
// Setup gives the adapter as ReplicaSetAdapter.Reset). The reset is made
// by the replica-set controller itself, synchronously, through the
// provider of the vCenter that holds the VM, rather than asked of the
// VirtualMachine controller through the object: the binding records a
// restart and emits its event once Restart returns, so they follow the
// reset itself, and there is no request field to add, watch and clear.
package controllers
