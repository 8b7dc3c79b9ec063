// Command vmset-manager runs the example operator: the VirtualMachineReplicaSet
// controller built from replicakit's binding and the VirtualMachine controller
// that realizes each VirtualMachine in vCenter.
//
// It reads the kubeconfig from --kubeconfig, $KUBECONFIG, the in-cluster
// service account or ~/.kube/config, in that order. vCenter comes from the
// --vsphere-* flags or the VSPHERE_* environment variables (flags win); the
// password only from $VSPHERE_PASSWORD or --vsphere-password-file, never from
// a flag value that ps would show. The password file, and the username and
// password files of each --vcenter directory, are read again at every
// login (and vCenter asks for one when a session expires or is ended), so
// that a mounted Secret rotated in place is taken with no restart. Without a vCenter URL it refuses to
// start, saying how to give one, unless --vcsim asks for govmomi's vCenter
// simulator in process, on the loopback interface (for demos and tests: its
// VMs exist nowhere else); it logs where the simulator listens, and
// --vcsim-env-file also writes govc's settings for it to a file.
//
// Zones, the failure domains a set's spec.zones spreads its VMs over, are
// placements: --zone NAME:resourcePool=PATH[,folder=PATH][,datastore=NAME],
// repeated, or $VSPHERE_ZONES holding the same entries separated by ';'
// (flags win). With --vcsim and no zones given, the simulator gets a third
// cluster and the zones zone-a, zone-b and zone-c, one per cluster.
// --zone-backoff is how long a set's new VMs avoid a zone after a clone
// there failed.
//
// Deleting a running VM whose VMware Tools run shuts its guest down first
// and powers the VM off only if the guest has not stopped within
// --vsphere-shutdown-grace (vsphere.DefaultShutdownGrace, 90 s; negative:
// power off at once), so a VirtualMachine's deletion may take that long.
//
// It is an ordinary controller-runtime manager: leader election
// (--leader-elect), health probes on --health-probe-bind-address (/healthz,
// /readyz), Prometheus metrics on --metrics-bind-address (:8443), structured
// logs (--log-format json or text) and events.
//
// Metrics are served over HTTPS to authenticated and authorized clients
// only, as kubebuilder's scaffold serves them: a scraper presents a bearer
// token, which the manager checks with a TokenReview, and must be allowed
// GET on the non-resource URL /metrics, which it checks with a
// SubjectAccessReview (bind the vmset-metrics-reader ClusterRole to the
// scraper's service account). The certificate is tls.crt and tls.key in
// --metrics-cert-dir (refused at start when either is missing), reloaded
// when they change; without the flag, those in controller-runtime's
// default folder ($TMPDIR/k8s-metrics-server/serving-certs) or else a
// self-signed one made at start.
// HTTP/2 is off unless --enable-http2. --metrics-secure=false serves plain
// HTTP to anyone, for a manager on a laptop.
//
// Run vmset-manager -help for every flag.
package main
