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
package controllers
