// Package vcsim runs govmomi's in-process vCenter simulator as a real
// endpoint: a VPX model with two clusters, served over TLS with its own
// certificate and real credentials, so that clients exercise placement, TLS
// verification and login as against a real vCenter. The example operator
// runs it in process with --vcsim; tests use it through vcsimtest. Both
// serve one call at a time (Serialized), and the chaos suite fails chosen
// calls at that gate (Faults), where tests also read the requests of the
// ones they record (Faults.Record). The gate counts the calls it sees, the
// tasks they start and the calls that serve a watch (Counts), and can play
// a real vCenter's times (Latency, RealWorld): a round trip per call, and
// tasks that run for minutes, scaled, without holding the gate. Tests also
// have the simulator change VMs' CPUs and memory only as vCenter allows
// (Hotplug).
package vcsim
