package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// line matches "BenchmarkName/sub-8   100   123 ns/op   45 B/op   6 allocs/op".
var line = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(.*)$`)

var extra = regexp.MustCompile(`([\d.]+) (B/op|allocs/op)`)

type sample struct{ ns, bytes, allocs []float64 }

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
			s = &sample{}
			samples[name] = s
			order = append(order, name)
		}
		ns, _ := strconv.ParseFloat(m[2], 64)
		s.ns = append(s.ns, ns)
		for _, e := range extra.FindAllStringSubmatch(m[3], -1) {
			v, _ := strconv.ParseFloat(e[1], 64)
			if e[2] == "B/op" {
				s.bytes = append(s.bytes, v)
			} else {
				s.allocs = append(s.allocs, v)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(order) == 0 {
		return fmt.Errorf("no benchmark results in the input")
	}
	fmt.Fprintln(out, "\nRatios against the baseline of the same run (median ns/op):")
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "benchmark\tns/op\tratio\tB/op\tallocs/op\t")
	for _, name := range order {
		group := name[:max(strings.LastIndexByte(name, '/'), 0)]
		ratio := "-"
		if base, ok := samples[group+"/baseline"]; ok && !strings.HasSuffix(name, "/baseline") {
			ratio = fmt.Sprintf("%.2fx", median(samples[name].ns)/median(base.ns))
		}
		s := samples[name]
		fmt.Fprintf(w, "%s\t%.0f\t%s\t%.0f\t%.0f\t\n", name, median(s.ns), ratio, median(s.bytes), median(s.allocs))
	}
	return w.Flush()
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
