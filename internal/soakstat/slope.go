package soakstat

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// Tolerance is how much a series may grow over the second half of a run:
// the rise of its least-squares line over that half fails the series when
// it exceeds both Allowed (the larger of Relative times the half's median
// and Absolute) and Sigmas standard errors of that rise.
//
// The relative part scales with what the process holds: a manager of a
// thousand VMs has more to wobble than one of ten. The absolute floor
// keeps small series from failing on a handful of objects or goroutines
// coming and going. The standard errors keep noise from failing a series:
// a slope fitted to 30 samples of a sawtooth or of a fluctuating workload
// has an uncertainty of its own, which the line's residuals measure, while
// a leak rises steadily and its residuals are small. For evenly spaced
// samples of a flat series whose values stay within ±A of a level, the
// fitted rise is always under 3A, so a series whose noise stays within a
// third of Absolute never fails, whatever Sigmas is.
type Tolerance struct {
	// Relative is the allowed rise as a fraction of the magnitude of the
	// second half's median.
	Relative float64
	// Absolute is the allowed rise however small the median, in the
	// kind's base unit (bytes for Memory).
	Absolute float64
	// Sigmas is how many standard errors of the rise it must also
	// exceed; zero requires none.
	Sigmas float64
}

// Allowed is the rise allowed a series whose second half has median m.
func (t Tolerance) Allowed(m float64) float64 {
	return max(t.Relative*math.Abs(m), t.Absolute)
}

// DefaultTolerance is the Tolerance of a kind; Tolerances uses it for the
// kinds it does not set. A soak's second half is 15 minutes (30 samples)
// by default, or an hour with SOAK=2h.
//
//   - Memory: 10% of the median and at least 8 MiB. A manager's heap in
//     use swings by up to the live heap (GOGC=100) between collections,
//     and its RSS follows the heap's high-water mark, which the first
//     half's warm-up mostly reaches; a leak of one 10 KiB object (a VM
//     object and its copies) per reconcile, at one reconcile a second,
//     adds 9 MiB in 15 minutes, and a smaller one shows over 2 hours.
//   - Goroutines: 5% of the median and at least 5. Workers are fixed;
//     what comes and goes is per connection and per request, and a leak
//     per reconcile or per watch restart adds many more.
//   - FileDescriptors: 5% of the median and at least 5: connections to
//     the API server and to vCenter come and go, and a leak per
//     connection or per session adds one each time.
//   - Entries: 10% of the median and at least 5. With a steady workload
//     the cached objects and the owners in the tables follow the
//     workload and must not drift; a table that never forgets a deleted
//     owner grows by one per owner deleted.
//
// Every kind also requires 4 standard errors: with 30 samples of pure
// noise the fitted rise exceeds that about once in 5,000 series.
func DefaultTolerance(k Kind) Tolerance {
	switch k {
	case Memory:
		return Tolerance{Relative: 0.10, Absolute: 8 * mib, Sigmas: 4}
	case Goroutines, FileDescriptors:
		return Tolerance{Relative: 0.05, Absolute: 5, Sigmas: 4}
	}
	return Tolerance{Relative: 0.10, Absolute: 5, Sigmas: 4}
}

// Tolerances sets the Tolerance of some kinds; the others have their
// DefaultTolerance. A nil Tolerances is all defaults.
type Tolerances map[Kind]Tolerance

// For is the Tolerance of kind k.
func (ts Tolerances) For(k Kind) Tolerance {
	if t, ok := ts[k]; ok {
		return t
	}
	return DefaultTolerance(k)
}

// MinPoints is the fewest finite samples in a series' second half that
// Check judges; with fewer, its verdict is NoData.
const MinPoints = 4

// Verdict is what Check concludes of a series.
type Verdict int

// The verdicts.
const (
	// Pass means the series did not grow beyond its tolerance.
	Pass Verdict = iota
	// Grows means it did: a leak, or a workload that is not steady.
	Grows
	// NoData means too few samples were taken to tell: a soak that
	// could not measure a quantity vouches for nothing.
	NoData
)

// String names the verdict as the table shows it.
func (v Verdict) String() string {
	switch v {
	case Pass:
		return "ok"
	case Grows:
		return "GROWS"
	case NoData:
		return "NO DATA"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// Result is Check's judgement of one series, with what it was made of.
// The statistics are of the second half of the run, in the kind's base
// unit (bytes for Memory); they are NaN when there are no samples.
type Result struct {
	// Process, Name and Kind are the series'.
	Process, Name string
	Kind          Kind
	// Tolerance is what the series was judged by.
	Tolerance Tolerance
	// N is the number of finite samples in the second half, which runs
	// from From to To (the last sample's time).
	N        int
	From, To time.Time
	// First, Min, Max, Last and Median are of the second half's values.
	First, Min, Max, Last, Median float64
	// Slope is the least-squares line's slope, per second, and
	// Intercept its value at From.
	Slope, Intercept float64
	// Growth is the line's rise from From to To, GrowthErr its standard
	// error, and Allowed the rise the Tolerance allows.
	Growth, GrowthErr, Allowed float64
	// Verdict is the conclusion.
	Verdict Verdict
}

// SlopePerHour is the slope per hour.
func (r Result) SlopePerHour() float64 { return r.Slope * 3600 }

// Check judges series s by tol: it fits a least-squares line to the
// samples of the second half of the run (from halfway between the first
// and the last finite sample's times), and fails the series when the
// line's rise over that half exceeds tol (see Tolerance). NaN and
// infinite samples are skipped. The fit's error bounds assume samples
// evenly spaced in time, as a soak takes them.
func Check(s Series, tol Tolerance) Result {
	return check(s, tol, time.Time{})
}

// CheckFrom is Check over the samples taken at or after from, such as
// the second half of a whole run for a process started before it.
func CheckFrom(s Series, tol Tolerance, from time.Time) Result {
	return check(s, tol, from)
}

// check is Check from from, or, when from is zero, from halfway between
// the first and the last finite sample's times.
func check(s Series, tol Tolerance, from time.Time) Result {
	nan := math.NaN()
	r := Result{Process: s.Process, Name: s.Name, Kind: s.Kind, Tolerance: tol,
		First: nan, Min: nan, Max: nan, Last: nan, Median: nan, Slope: nan, Intercept: nan,
		Growth: nan, GrowthErr: nan, Allowed: nan, Verdict: NoData}
	var pts []Point
	for _, p := range s.Points {
		if !math.IsNaN(p.V) && !math.IsInf(p.V, 0) {
			pts = append(pts, p)
		}
	}
	if len(pts) == 0 {
		return r
	}
	slices.SortStableFunc(pts, func(a, b Point) int { return a.T.Compare(b.T) })
	start, end := pts[0].T, pts[len(pts)-1].T
	mid := from
	if mid.IsZero() {
		mid = start.Add(end.Sub(start) / 2)
	}
	i, _ := slices.BinarySearchFunc(pts, mid, func(p Point, t time.Time) int { return p.T.Compare(t) })
	half := pts[i:]
	if len(half) == 0 {
		return r
	}
	r.N, r.From, r.To = len(half), half[0].T, end
	vs := make([]float64, len(half))
	ts := make([]float64, len(half))
	for j, p := range half {
		vs[j], ts[j] = p.V, p.T.Sub(r.From).Seconds()
	}
	r.First, r.Last = vs[0], vs[len(vs)-1]
	r.Min, r.Max = slices.Min(vs), slices.Max(vs)
	r.Median = median(vs)
	r.Allowed = tol.Allowed(r.Median)
	span := end.Sub(r.From).Seconds()
	if r.N < MinPoints || span <= 0 {
		return r
	}
	var slopeErr float64
	r.Slope, r.Intercept, slopeErr = leastSquares(ts, vs)
	r.Growth, r.GrowthErr = r.Slope*span, slopeErr*span
	r.Verdict = Pass
	if r.Growth > r.Allowed && r.Growth > tol.Sigmas*r.GrowthErr {
		r.Verdict = Grows
	}
	return r
}

// leastSquares fits v = intercept + slope·t to the points (ts[i], vs[i]),
// of which there are at least two at different times, and returns the
// slope's standard error too (0 for two points, which leave no residual
// to measure it by).
func leastSquares(ts, vs []float64) (slope, intercept, slopeErr float64) {
	n := float64(len(ts))
	var tm, vm float64
	for i := range ts {
		tm += ts[i]
		vm += vs[i]
	}
	tm, vm = tm/n, vm/n
	var sxx, sxy float64
	for i := range ts {
		dt := ts[i] - tm
		sxx += dt * dt
		sxy += dt * (vs[i] - vm)
	}
	slope = sxy / sxx
	intercept = vm - slope*tm
	if len(ts) > 2 {
		var rss float64
		for i := range ts {
			e := vs[i] - vm - slope*(ts[i]-tm)
			rss += e * e
		}
		slopeErr = math.Sqrt(rss / (n - 2) / sxx)
	}
	return slope, intercept, slopeErr
}

// median is the median of vs (not empty): the middle value, or the mean
// of the two middle ones.
func median(vs []float64) float64 {
	s := slices.Sorted(slices.Values(vs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return s[n/2-1]/2 + s[n/2]/2
}

// Evaluate checks each series by the Tolerance of its kind in tol.
func Evaluate(series []Series, tol Tolerances) []Result {
	return EvaluateFrom(series, tol, time.Time{})
}

// EvaluateFrom checks each series by the Tolerance of its kind in tol
// over its samples taken at or after from (zero: each series' own second
// half, as Evaluate).
func EvaluateFrom(series []Series, tol Tolerances, from time.Time) []Result {
	out := make([]Result, len(series))
	for i, s := range series {
		out[i] = check(s, tol.For(s.Kind), from)
	}
	return out
}

// Failed reports whether any result is not Pass.
func Failed(results []Result) bool {
	return slices.ContainsFunc(results, func(r Result) bool { return r.Verdict != Pass })
}

// byProcessAndName orders results as tables list them: by quantity, then
// process, so that one quantity's processes sit together.
func byProcessAndName(a, b Result) int {
	return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Process, b.Process))
}
