// Package vcsim runs govmomi's in-process vCenter simulator as a real
// endpoint: a VPX model with two clusters, served over TLS with its own
// certificate and real credentials, so that clients exercise placement, TLS
// verification and login as against a real vCenter. The example operator
// runs it in process with --vcsim; tests use it through vcsimtest. Both
// serve one call at a time (Serialized), and the chaos suite fails chosen
// calls at that gate (Faults), where tests also count calls and read the
// requests of the ones they record (Faults.Record). Tests also have the
// simulator change VMs' CPUs and memory only as vCenter allows (Hotplug).
package vcsim
