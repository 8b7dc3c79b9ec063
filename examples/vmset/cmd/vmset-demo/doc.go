// Command vmset-demo plays the example operator's story on real components:
// it starts etcd, kube-apiserver and kube-controller-manager (the garbage
// collector) from bin/, starts vmset-manager on its embedded vCenter
// simulator, and then, with the real kubectl, creates a set of three VMs,
// scales it to one and to two and deletes it; makes a set of web VMs ready
// by their guests' addresses and rolls it onto more CPUs and memory;
// spreads a set over three zones, scales it and rolls it; spreads one
// over two vCenters; and heals a set of six: a hung guest's VM reset and
// then replaced, four hung at once held as a storm until they come back.
// After every step
// it checks the VirtualMachines in Kubernetes and the VMs in vCenter (over
// the vSphere API) and exits 1 on any mismatch; while a set rolls, an
// independent watch of its VirtualMachines checks that its available VMs
// never go below, and its VMs never above, the bounds of its strategy. It
// stops every process it started, also on Ctrl-C.
//
// With -keep it starts the same environment, prints how to reach it, and
// keeps it running until Ctrl-C. `make demo` and `make run` call it.
package main
