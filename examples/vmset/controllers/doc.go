// Package controllers holds the example operator's two controllers: the
// VirtualMachine controller, which realizes each VirtualMachine as a vSphere
// VM through a vmprovider.Provider, and the VirtualMachineReplicaSet
// controller, built from replicakit's controller-runtime binding.
package controllers
