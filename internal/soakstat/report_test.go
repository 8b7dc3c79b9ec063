package soakstat

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWriteTable: rows by series and process, memory in MiB, a leak
// marked, a series too short to judge marked, and each kind's tolerance
// stated under the table.
func TestWriteTable(t *testing.T) {
	var flat, leak, rss []float64
	for i := range 61 {
		flat = append(flat, 150+float64(i%5))
		leak = append(leak, 150+float64(i))
		rss = append(rss, float64(60<<20+(i%4)<<20))
	}
	series := []Series{evenly(Goroutines, flat), evenly(Goroutines, leak), evenly(Memory, rss), evenly(Memory, rss[:1])}
	series[0].Process, series[0].Name = "manager-1", "goroutines"
	series[1].Process, series[1].Name = "manager-0", "goroutines"
	series[2].Process, series[2].Name = "manager-0", "rss"
	series[3].Process, series[3].Name = "vcsim", "rss"
	results := Evaluate(series, nil)
	if !Failed(results) || Failed(results[:1]) {
		t.Errorf("Failed: %v for all, %v for the flat one; want true, false", Failed(results), Failed(results[:1]))
	}
	var b strings.Builder
	if err := WriteTable(&b, results); err != nil {
		t.Fatal(err)
	}
	want := `
      series    process   unit   n  first   min   max  last  slope/h  growth  ±err  allowed  verdict
  goroutines  manager-0  count  31    180   180   210   210     +120     +30     0     9.75    GROWS
  goroutines  manager-1  count  31    150   150   154   150    +1.45   +0.36  0.89     7.60       ok
         rss  manager-0    MiB  31   62.0  60.0  63.0  60.0     -0.8    -0.2   0.7      8.0       ok
         rss      vcsim    MiB   1   60.0  60.0  60.0  60.0        -       -     -      8.0  NO DATA
memory: fails when the second half's fitted rise exceeds 10% of its median and 8.0 MiB, and 4 standard errors
goroutines: fails when the second half's fitted rise exceeds 5% of its median and 5, and 4 standard errors
`
	got := "\n" + trimLines(b.String())
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}

// trimLines drops the spaces that end lines.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}
