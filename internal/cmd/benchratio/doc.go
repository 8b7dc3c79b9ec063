// Command benchratio reads `go test -bench` output on standard input, passes
// it through, and then prints every benchmark as a ratio against its
// baseline measured in the same run.
//
// Benchmarks are grouped by their name up to the last '/': in a group, the
// sub-benchmark named "baseline" is the reference and every other one is
// reported as median ns/op over the baseline's median ns/op. With -count N,
// the median of the N runs is used, and beside it the range of the
// per-run ratios: run i over the baseline's run i, for as many runs as
// both have. A group without a baseline is listed without ratios.
//
// Metrics a benchmark reports with testing.B.ReportMetric (such as a ratio
// it measured itself, pair by pair) are listed after the table, each with
// its median and range over the runs.
//
//	go test -bench . -count 5 ./... | go run ./internal/cmd/benchratio
package main
