// Command benchratio reads `go test -bench` output on standard input, passes
// it through, and then prints every benchmark as a ratio against its
// baseline measured in the same run.
//
// Benchmarks are grouped by their name up to the last '/': in a group, the
// sub-benchmark named "baseline" is the reference and every other one is
// reported as median ns/op over the baseline's median ns/op. With -count N,
// the median of the N runs is used. A group without a baseline is listed
// without ratios.
//
//	go test -bench . -count 5 ./... | go run ./internal/cmd/benchratio
package main
