// Package benchkit holds what the end-to-end benchmarks share: counting the
// API server's writes, reading a process's CPU time, fresh namespaces and a
// controller-runtime manager started for a measurement. The binding's
// benchmark (internal/cmd/benche2e) and the example operator's
// (examples/internal/cmd/benchvms, in the examples module) both use it.
package benchkit
