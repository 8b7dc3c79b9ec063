package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// line matches "BenchmarkName/sub-8   100   123 ns/op   45 B/op   6 allocs/op".
var line = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(.*)$`)

// metric matches one "value unit" pair after ns/op; values may be signed,
// in exponent form, NaN or infinite, as testing.B.ReportMetric prints them.
var metric = regexp.MustCompile(`([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|NaN|[-+]Inf) (\S+)`)

// sample holds one benchmark's results, one entry per run.
type sample struct {
	ns, bytes, allocs []float64
	metrics           map[string][]float64 // by unit, from b.ReportMetric
	units             []string             // metrics' units, in order seen
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchratio:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	samples := map[string]*sample{}
	var order []string
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		fmt.Fprintln(out, sc.Text())
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		name := strings.TrimPrefix(m[1], "Benchmark")
		s, ok := samples[name]
		if !ok {
			s = &sample{metrics: map[string][]float64{}}
			samples[name] = s
			order = append(order, name)
		}
		ns, _ := strconv.ParseFloat(m[2], 64)
		s.ns = append(s.ns, ns)
		for _, e := range metric.FindAllStringSubmatch(m[3], -1) {
			v, _ := strconv.ParseFloat(e[1], 64)
			switch unit := e[2]; unit {
			case "B/op":
				s.bytes = append(s.bytes, v)
			case "allocs/op":
				s.allocs = append(s.allocs, v)
			default:
				if _, seen := s.metrics[unit]; !seen {
					s.units = append(s.units, unit)
				}
				s.metrics[unit] = append(s.metrics[unit], v)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(order) == 0 {
		return fmt.Errorf("no benchmark results in the input")
	}
	fmt.Fprintln(out, "\nRatios against the baseline of the same run (median ns/op; in brackets, the range of run i over baseline run i):")
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "benchmark\tns/op\tratio\tB/op\tallocs/op\t")
	for _, name := range order {
		group := name[:max(strings.LastIndexByte(name, '/'), 0)]
		ratio := "-"
		s := samples[name]
		if base, ok := samples[group+"/baseline"]; ok && !strings.HasSuffix(name, "/baseline") {
			var runs []float64
			for i := range min(len(s.ns), len(base.ns)) {
				runs = append(runs, s.ns[i]/base.ns[i])
			}
			ratio = fmt.Sprintf("%.2fx (%.2f to %.2f)", median(s.ns)/median(base.ns), slices.Min(runs), slices.Max(runs))
		}
		fmt.Fprintf(w, "%s\t%.0f\t%s\t%.0f\t%.0f\t\n", name, median(s.ns), ratio, median(s.bytes), median(s.allocs))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	header := false
	for _, name := range order {
		s := samples[name]
		for _, unit := range s.units {
			if !header {
				fmt.Fprintln(out, "\nReported metrics (median and range over the runs):")
				header = true
			}
			v := s.metrics[unit]
			fmt.Fprintf(out, "%s: %s %s (%s to %s, %s)\n", name, number(median(v)), unit,
				number(slices.Min(v)), number(slices.Max(v)), plural(len(v), "run"))
		}
	}
	return nil
}

// number formats a reported metric: three significant digits, but whole
// numbers from 1,000 up.
func number(v float64) string {
	if math.Abs(v) >= 1000 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// plural returns "1 run" or "n runs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
