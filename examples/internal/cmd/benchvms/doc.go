// Command benchvms measures VMs through the example operator on vcsim
// (`make bench-e2e` runs it after the binding's benchmark).
//
// On one real API server (etcd and kube-apiserver built by `make tools`) and
// a simulator serving one call at a time, it times 0→N VMs through the
// example operator reading vCenter through its watch, beside the same N
// clones made straight through the provider at its task bound and beside
// the operator reading vCenter on every reconcile, and beside the operator
// with a watch of every field of a VM instead of the 8 properties it reads
// (controllers.WatchedFields against vsphere.AllFields); counts a settled set's
// vCenter calls (beyond the watch's long poll) and API writes per minute;
// and times K sets of M VMs created at once, with the CPU of this process,
// where the operator and the simulator both run. Then it times 0→N VMs in
// one set over two zones on two vCenters (two simulators, each serving its
// own calls) beside the same two zones on one vCenter; -vcenters-only
// measures that alone. Last, it times a hung guest healed: a set of 3
// with spec.remediation (unhealthyWindow 2s, startupWindow 5s), one VM's
// heartbeat made red for good (vcsim.SetHeartbeat), from the hang to the
// reset done in vCenter and to the replacement serving (its VirtualMachine
// Ready, the set all ready and healthy, the hung VM gone), with restart on
// and off, -heal-runs times each; beside the floor, the windows plus one
// provider Reset and one provider Create (clone and power-on; vcsim boots
// nothing) measured on a simulator of their own in the same run.
// -heal-only measures that alone (`make bench-heal`).
//
// Two measurements run only when asked for, as they do not move with the
// simulator's CPU (`make bench-calls` runs both). -calls-only counts, at
// the simulator's gate (vcsim.Counts), the vCenter calls and tasks per VM
// of 0→N VMs and of a rollout of 20 VMs from 4 to 8 GiB (by replacement),
// through the operator beside the same work straight through the provider
// (N creates, 8 at a time; 20 creates and deletes, one at a time), each
// -calls-runs times, and prints the calls beyond the operator's watch,
// their ratio to the provider's and a table by method. -latency times
// 0→20 VMs and the same rollout, operator beside provider, on simulators
// playing a real vCenter's times (vcsim.RealWorld: a full clone 2
// minutes) scaled by -latency-scale, -latency-runs times. Both run the
// scenarios of scenario.go, where linked clones and in-place rollouts
// will be a few lines each. -cpuprofile writes the process's CPU profile.
package main
