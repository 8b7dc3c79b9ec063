// Package procs runs the example operator as it is deployed, as processes
// of their own, for the reliability tests and the soak: the vCenter
// simulator served by internal/cmd/vcsimd over TLS with credentials, and
// vmset-manager replicas that elect a leader on the real API server, each
// with its metrics and probes on a loopback port and its log in a file.
//
// Build compiles both programs. A Manager can be stopped (SIGTERM), killed
// (SIGKILL, as a node or the kubelet kills a pod), started again, and
// supervised (started again whenever it exits on its own, as a kubelet
// restarts a container); Leader says which replica leads, from the
// replicas' own leader_election_master_status metric. The control plane's
// own processes are restarted by internal/testenv (Env.Restart).
package procs
