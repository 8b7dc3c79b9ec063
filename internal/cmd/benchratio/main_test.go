package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRun: the summary after the passed-through input gives each
// benchmark's median, its median ratio to the baseline with the range of
// the per-run ratios, and each reported metric's median and range, signed,
// in exponent form or NaN as the testing package may print them.
func TestRun(t *testing.T) {
	in := `goos: linux
BenchmarkF/n=1/baseline-2   100   10 ns/op   0 B/op   0 allocs/op
BenchmarkF/n=1/baseline-2   100   20 ns/op   0 B/op   0 allocs/op
BenchmarkF/n=1/baseline-2   100   10 ns/op   0 B/op   0 allocs/op
BenchmarkF/n=1/fast-2       100   15 ns/op   8 B/op   1 allocs/op
BenchmarkF/n=1/fast-2       100   20 ns/op   8 B/op   1 allocs/op
BenchmarkF/n=1/fast-2       100   40 ns/op   8 B/op   1 allocs/op
BenchmarkG/paired-2         10   30 ns/op   1.10 a/b   -0.5 delta   1234567 big/op
BenchmarkG/paired-2         10   30 ns/op   1.30 a/b   -1.5 delta   2e+06 big/op
BenchmarkG/paired-2         10   30 ns/op   1.20 a/b   0.25 delta   NaN big/op
BenchmarkH/once-2           10   30 ns/op   1.5e-05 tiny
PASS
`
	var out strings.Builder
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(strings.TrimPrefix(out.String(), in), "\n"), "\n")
	want := []string{
		"",
		"Ratios against the baseline of the same run (median ns/op; in brackets, the range of run i over baseline run i):",
		"       benchmark  ns/op                 ratio  B/op  allocs/op",
		"  F/n=1/baseline     10                     -     0          0",
		"      F/n=1/fast     20  2.00x (1.00 to 4.00)     8          1",
		"        G/paired     30                     -     0          0",
		"          H/once     30                     -     0          0",
		"",
		"Reported metrics (median and range over the runs):",
		"G/paired: 1.2 a/b (1.1 to 1.3, 3 runs)",
		"G/paired: -0.5 delta (-1.5 to 0.25, 3 runs)",
		"G/paired: 1234567 big/op (NaN to NaN, 3 runs)",
		"H/once: 1.5e-05 tiny (1.5e-05 to 1.5e-05, 1 run)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
}

// TestRun_NoResults: input without a benchmark line is an error.
func TestRun_NoResults(t *testing.T) {
	var out strings.Builder
	if err := run(strings.NewReader("PASS\n"), &out); err == nil {
		t.Error("run on input without results = nil, want an error")
	}
}
