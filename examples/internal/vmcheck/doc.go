// Package vmcheck observes the example operator's work from both sides, the
// VirtualMachine objects in Kubernetes and the VMs in vCenter read over the
// vSphere API, for its tests and for `make demo`.
package vmcheck
