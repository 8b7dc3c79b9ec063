package soakstat

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"text/tabwriter"
)

// WriteTable writes results as a table, by series name and then process:
// the second half's sample count, first, min, max and last values, the
// fitted slope per hour, the rise over the half with its standard error,
// the rise allowed, and the verdict. Memory is shown in MiB. A line after
// the table states each kind's tolerance.
func WriteTable(w io.Writer, results []Result) error {
	rs := slices.Clone(results)
	slices.SortStableFunc(rs, byProcessAndName)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "series\tprocess\tunit\tn\tfirst\tmin\tmax\tlast\tslope/h\tgrowth\t±err\tallowed\tverdict\t")
	for _, r := range rs {
		k := r.Kind
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			r.Name, r.Process, k.Unit(), r.N,
			num(k, r.First), num(k, r.Min), num(k, r.Max), num(k, r.Last),
			signed(k, r.SlopePerHour()), signed(k, r.Growth), num(k, r.GrowthErr), num(k, r.Allowed), r.Verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var kinds []Kind
	for _, r := range rs {
		if !slices.Contains(kinds, r.Kind) {
			kinds = append(kinds, r.Kind)
		}
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		i := slices.IndexFunc(rs, func(r Result) bool { return r.Kind == k })
		if _, err := fmt.Fprintf(w, "%s: %s\n", k, describe(k, rs[i].Tolerance)); err != nil {
			return err
		}
	}
	return nil
}

// describe states tolerance t of kind k in words.
func describe(k Kind, t Tolerance) string {
	floor := num(k, t.Absolute)
	if k == Memory {
		floor += " MiB"
	}
	s := fmt.Sprintf("fails when the second half's fitted rise exceeds %s%% of its median and %s",
		strconv.FormatFloat(100*t.Relative, 'f', -1, 64), floor)
	if t.Sigmas > 0 {
		s += fmt.Sprintf(", and %s standard errors", strconv.FormatFloat(t.Sigmas, 'f', -1, 64))
	}
	return s
}

// num formats v, of kind k, in the kind's unit: MiB to a tenth, counts
// to a hundredth when fractional; "-" for NaN.
func num(k Kind, v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	v = k.display(v)
	if k == Memory {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// signed is num with a sign on positive values.
func signed(k Kind, v float64) string {
	s := num(k, v)
	if v > 0 && !math.IsInf(v, 0) {
		return "+" + s
	}
	return s
}
