// Command vmset-manager runs the example operator: the VirtualMachineReplicaSet
// controller built from replicakit's binding and the VirtualMachine controller
// that realizes each VirtualMachine in vCenter.
//
// It reads the kubeconfig from --kubeconfig, $KUBECONFIG, the in-cluster
// service account or ~/.kube/config, in that order. vCenter comes from the
// --vsphere-* flags or the VSPHERE_* environment variables (flags win); the
// password only from $VSPHERE_PASSWORD or --vsphere-password-file, never from
// a flag value that ps would show. Without a vCenter URL it refuses to
// start, saying how to give one, unless --vcsim asks for govmomi's vCenter
// simulator in process, on the loopback interface (for demos and tests: its
// VMs exist nowhere else); it logs where the simulator listens, and
// --vcsim-env-file also writes govc's settings for it to a file.
//
// It is an ordinary controller-runtime manager: leader election
// (--leader-elect), health probes on --health-probe-bind-address (/healthz,
// /readyz), Prometheus metrics over HTTP on --metrics-bind-address,
// structured logs (--log-format json or text) and events.
//
// Run vmset-manager -help for every flag.
package main
