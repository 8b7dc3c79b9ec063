// Package vcsim runs govmomi's in-process vCenter simulator as a real
// endpoint: a VPX model with two clusters, served over TLS with its own
// certificate and real credentials, so that clients exercise placement, TLS
// verification and login as against a real vCenter. The example operator
// uses it as its embedded default; tests use it through vcsimtest. Both
// serve one call at a time (Serialized).
package vcsim
