package soakstat

import (
	"math"
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// distinctTimes draws 2 to 40 times in seconds, at least two different.
func distinctTimes(t *rapid.T) []float64 {
	ts := rapid.SliceOfN(rapid.IntRange(0, 3600), 2, 40).Draw(t, "times")
	if slices.Min(ts) == slices.Max(ts) {
		ts[0]++
	}
	out := make([]float64, len(ts))
	for i, v := range ts {
		out[i] = float64(v)
	}
	return out
}

// naiveSlope is the least-squares slope by the textbook formula, in exact
// rational arithmetic: (nΣtv − ΣtΣv) / (nΣt² − (Σt)²).
func naiveSlope(ts, vs []float64) float64 {
	n := big.NewRat(int64(len(ts)), 1)
	st, sv, stv, stt := new(big.Rat), new(big.Rat), new(big.Rat), new(big.Rat)
	for i := range ts {
		t, v := new(big.Rat).SetFloat64(ts[i]), new(big.Rat).SetFloat64(vs[i])
		st.Add(st, t)
		sv.Add(sv, v)
		stv.Add(stv, new(big.Rat).Mul(t, v))
		stt.Add(stt, new(big.Rat).Mul(t, t))
	}
	num := new(big.Rat).Sub(new(big.Rat).Mul(n, stv), new(big.Rat).Mul(st, sv))
	den := new(big.Rat).Sub(new(big.Rat).Mul(n, stt), new(big.Rat).Mul(st, st))
	out, _ := new(big.Rat).Quo(num, den).Float64()
	return out
}

// near reports whether got is want within rel of scale.
func near(got, want, scale, rel float64) bool {
	return math.Abs(got-want) <= rel*(math.Abs(want)+scale)
}

func TestLeastSquares_MatchesNaiveModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ts := distinctTimes(t)
		vs := make([]float64, len(ts))
		for i := range vs {
			vs[i] = float64(rapid.Int64Range(-1<<40, 1<<40).Draw(t, "v"))
		}
		got, _, _ := leastSquares(ts, vs)
		want := naiveSlope(ts, vs)
		scale := (slices.Max(vs) - slices.Min(vs)) / (slices.Max(ts) - slices.Min(ts))
		if !near(got, want, scale, 1e-9) {
			t.Fatalf("slope %v, naive model %v", got, want)
		}
	})
}

func TestLeastSquares_ExactLine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ts := distinctTimes(t)
		a := float64(rapid.IntRange(-1e9, 1e9).Draw(t, "a"))
		b := float64(rapid.IntRange(-1e6, 1e6).Draw(t, "b"))
		vs := make([]float64, len(ts))
		for i, x := range ts {
			vs[i] = a + b*x
		}
		slope, intercept, slopeErr := leastSquares(ts, vs)
		if !near(slope, b, 1e-3, 1e-9) || !near(intercept, a, math.Abs(b)*3600, 1e-9) {
			t.Fatalf("line %v + %v·t fitted as %v + %v·t", a, b, intercept, slope)
		}
		if !near(slopeErr, 0, math.Abs(a)/3600+math.Abs(b), 1e-9) {
			t.Fatalf("an exact line has slope error %v", slopeErr)
		}
	})
}

func TestLeastSquares_ShiftAndScale(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ts := distinctTimes(t)
		vs := make([]float64, len(ts))
		for i := range vs {
			vs[i] = rapid.Float64Range(-1e6, 1e6).Draw(t, "v")
		}
		c := rapid.Float64Range(-1e9, 1e9).Draw(t, "c")
		k := rapid.Float64Range(-1e3, 1e3).Draw(t, "k")
		shifted, scaled := slices.Clone(vs), slices.Clone(vs)
		for i := range vs {
			shifted[i] += c
			scaled[i] *= k
		}
		slope, _, _ := leastSquares(ts, vs)
		s1, _, _ := leastSquares(ts, shifted)
		s2, _, _ := leastSquares(ts, scaled)
		scale := 2e6 / (slices.Max(ts) - slices.Min(ts))
		if !near(s1, slope, scale*(1+math.Abs(c)/1e6), 1e-9) {
			t.Fatalf("adding %v changed the slope from %v to %v", c, slope, s1)
		}
		if !near(s2, k*slope, math.Abs(k)*scale, 1e-9) {
			t.Fatalf("scaling by %v made slope %v of %v", k, s2, slope)
		}
	})
}

func TestMedian_SplitsInHalves(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		vs := rapid.SliceOfN(rapid.Float64Range(-1e9, 1e9), 1, 50).Draw(t, "vs")
		m := median(vs)
		if m2 := median(rapid.Permutation(vs).Draw(t, "perm")); m2 != m {
			t.Fatalf("median %v, of a permutation %v", m, m2)
		}
		below, above := 0, 0
		for _, v := range vs {
			if v < m {
				below++
			}
			if v > m {
				above++
			}
		}
		if 2*below > len(vs) || 2*above > len(vs) {
			t.Fatalf("median %v of %v: %d below, %d above", m, vs, below, above)
		}
	})
}

// evenly returns a series of vs sampled every 30 s from t0.
func evenly(kind Kind, vs []float64) Series {
	s := Series{Process: "p", Name: "q", Kind: kind}
	for i, v := range vs {
		s.Points = append(s.Points, Point{T: t0.Add(time.Duration(i) * 30 * time.Second), V: v})
	}
	return s
}

// drawTolerance draws a tolerance with a positive floor.
func drawTolerance(t *rapid.T) Tolerance {
	return Tolerance{
		Relative: rapid.Float64Range(0, 0.4).Draw(t, "relative"),
		Absolute: rapid.Float64Range(1, 1e8).Draw(t, "absolute"),
		Sigmas:   rapid.Float64Range(0, 5).Draw(t, "sigmas"),
	}
}

// TestCheck_BoundedNoiseNeverFails: evenly spaced samples within ±A of a
// level, A under a third of the tolerance's floor, never grow, however
// the noise is arranged (a step halfway through the judged half is the
// worst case, a fitted rise of almost 3A).
func TestCheck_BoundedNoiseNeverFails(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tol := drawTolerance(t)
		level := rapid.Float64Range(-1e9, 1e9).Draw(t, "level")
		a := tol.Absolute / 3 * rapid.Float64Range(0, 0.999).Draw(t, "amplitude")
		step := rapid.Bool().Draw(t, "step")
		n := rapid.IntRange(0, 200).Draw(t, "n")
		vs := make([]float64, n)
		for i := range vs {
			switch {
			case step && 4*i < 3*n:
				vs[i] = level - a
			case step:
				vs[i] = level + a
			default:
				vs[i] = level + a*rapid.Float64Range(-1, 1).Draw(t, "noise")
			}
		}
		if r := Check(evenly(Entries, vs), tol); r.Verdict == Grows {
			t.Fatalf("noise within ±%v of %v grew: %+v", a, level, r)
		}
	})
}

// TestCheck_RampBeyondToleranceFails: a line rising more than the
// tolerance over the second half, with noise a thousandth of its rise,
// always fails.
func TestCheck_RampBeyondToleranceFails(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tol := drawTolerance(t)
		tol.Relative = rapid.Float64Range(0, 0.3).Draw(t, "relative")
		level := rapid.Float64Range(0, 1e9).Draw(t, "level")
		n := rapid.IntRange(2*MinPoints, 200).Draw(t, "n")
		// The judged half starts at the first sample past the middle,
		// and spans the fraction phi of the run; its median is at most
		// level plus the whole rise (and the noise), so with this rise
		// the fitted one, less three times the noise, exceeds what is
		// allowed.
		phi := float64(n-1-(n-1+1)/2) / float64(n-1)
		need := (tol.Relative*level + tol.Absolute) / (phi - 0.003 - 1.001*tol.Relative)
		rise := need * rapid.Float64Range(1.01, 100).Draw(t, "factor")
		a := rise / 1000 * rapid.Float64Range(0, 1).Draw(t, "amplitude")
		vs := make([]float64, n)
		for i := range vs {
			vs[i] = level + rise*float64(i)/float64(n-1) + a*rapid.Float64Range(-1, 1).Draw(t, "noise")
		}
		r := Check(evenly(Memory, vs), tol)
		if r.Verdict != Grows {
			t.Fatalf("a rise of %v over the run, beyond %v allowed, passed: %+v", rise, r.Allowed, r)
		}
	})
}

// TestCheck_OnlyTheSecondHalfCounts: the first half's values (the
// warm-up) change nothing.
func TestCheck_OnlyTheSecondHalfCounts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 100).Draw(t, "n")
		vs := rapid.SliceOfN(rapid.Float64Range(-1e6, 1e6), n, n).Draw(t, "vs")
		warm := slices.Clone(vs)
		for i := 0; 2*i < n-1; i++ {
			warm[i] = rapid.Float64Range(-1e12, 1e12).Draw(t, "warm")
		}
		tol := drawTolerance(t)
		a, b := Check(evenly(Entries, vs), tol), Check(evenly(Entries, warm), tol)
		if diff := cmp.Diff(a, b, cmpopts.EquateNaNs()); diff != "" {
			t.Fatalf("the warm-up changed the result (-before +after):\n%s", diff)
		}
	})
}

func TestCheck_NoData(t *testing.T) {
	nan := math.NaN()
	for _, tt := range []struct {
		what string
		vs   []float64
	}{
		{"no samples", nil},
		{"one sample", []float64{1}},
		{"only NaN and infinities", []float64{nan, math.Inf(1), nan, math.Inf(-1), nan, nan, nan, nan}},
		{"three in the second half", []float64{1, 2, 3, 4, 5, 6}},
		{"NaN in the second half", []float64{1, 2, 3, 4, 5, 6, nan, 8}},
	} {
		r := Check(evenly(Goroutines, tt.vs), DefaultTolerance(Goroutines))
		if r.Verdict != NoData {
			t.Errorf("%s: verdict %v, want %v (%+v)", tt.what, r.Verdict, NoData, r)
		}
	}
}

// TestCheck_Example: a goroutine leak of one a minute over half an hour,
// and the same series flat.
func TestCheck_Example(t *testing.T) {
	var leak, flat []float64
	for i := range 61 {
		leak = append(leak, 100+float64(i)/2)
		flat = append(flat, 100+float64(i%3))
	}
	r := Check(evenly(Goroutines, leak), DefaultTolerance(Goroutines))
	want := Result{Process: "p", Name: "q", Kind: Goroutines, Tolerance: DefaultTolerance(Goroutines),
		N: 31, From: t0.Add(15 * time.Minute), To: t0.Add(30 * time.Minute),
		First: 115, Min: 115, Max: 130, Last: 130, Median: 122.5,
		Slope: 1.0 / 60, Intercept: 115, Growth: 15, GrowthErr: 0, Allowed: 6.125, Verdict: Grows}
	if diff := cmp.Diff(want, r, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("leak (-want +got):\n%s", diff)
	}
	if got := r.SlopePerHour(); math.Abs(got-60) > 1e-9 {
		t.Errorf("slope per hour %v, want 60", got)
	}
	if r := Check(evenly(Goroutines, flat), DefaultTolerance(Goroutines)); r.Verdict != Pass {
		t.Errorf("flat: %+v", r)
	}
}

func TestTolerances_For(t *testing.T) {
	mine := Tolerance{Relative: 0.5, Absolute: 1}
	ts := Tolerances{Entries: mine}
	if got := ts.For(Entries); got != mine {
		t.Errorf("For(Entries) = %+v, want %+v", got, mine)
	}
	if got := ts.For(Memory); got != DefaultTolerance(Memory) {
		t.Errorf("For(Memory) = %+v, want the default", got)
	}
	if got, want := (Tolerances(nil)).For(FileDescriptors), DefaultTolerance(FileDescriptors); got != want {
		t.Errorf("nil For = %+v, want %+v", got, want)
	}
}

// TestCheckFrom_JudgesFromTheGivenTime checks that CheckFrom judges the
// samples from its time on, whatever the series' own span: a series
// sampled from the start of a run, judged from halfway, is Check's
// verdict; one that starts later is judged from the given time, not
// from halfway through its own samples.
func TestCheckFrom_JudgesFromTheGivenTime(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(MinPoints*2, 80).Draw(t, "n")
		late := rapid.IntRange(0, n/2).Draw(t, "late") // samples missed at the start
		t0 := time.Unix(1_000_000, 0)
		s := Series{Process: "p", Name: "x", Kind: Entries}
		for i := late; i < n; i++ {
			v := rapid.Float64Range(0, 100).Draw(t, "v")
			s.Points = append(s.Points, Point{T: t0.Add(time.Duration(i) * 30 * time.Second), V: v})
		}
		mid := t0.Add(time.Duration(n-1) * 30 * time.Second / 2)
		r := CheckFrom(s, DefaultTolerance(Entries), mid)
		want := 0
		for _, p := range s.Points {
			if !p.T.Before(mid) {
				want++
			}
		}
		if r.N != want || (want > 0 && r.From.Before(mid)) {
			t.Fatalf("CheckFrom judged %d samples from %v, want the %d from %v", r.N, r.From, want, mid)
		}
		if late == 0 {
			if got := Check(s, DefaultTolerance(Entries)); got.N != r.N || got.Verdict != r.Verdict {
				t.Fatalf("a series sampled from the start: Check %+v, CheckFrom at the run's middle %+v", got, r)
			}
		}
	})
}
