// Package rollwatch checks a VirtualMachineReplicaSet's rollout from
// outside the example operator, for its chaos suite and `make demo`.
//
// A Watcher follows the set's VirtualMachines with a watch of the API
// server of its own (every change, in the order etcd made them, not a
// sample) and checks, after each, the bounds the set's strategy gives
// (Bounds, resolved by replicaset.Strategy.Limits): its available VMs never
// below replicas − maxUnavailable, and its VMs, counting those being
// deleted, never above replicas + maxSurge. "Available" is what the
// operator's status means by it: Ready, not being deleted, and ready for
// minReadySeconds. A test that makes VMs unavailable itself (hangs their
// guests) excuses them (Watcher.Excuse), lowering the availability bound
// by as many. A VCenterCount polls vCenter for the set's VMs that
// exist there against the same surge bound, and ReadHardware reads what a
// rollout changed on each VM (CPUs and memory) over the vSphere API.
package rollwatch
