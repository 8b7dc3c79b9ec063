package soakstat

import (
	"encoding/xml"
	"errors"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// svgShape is what a test reads back of an SVG: the charts' titles, and
// per chart its lines, dots and fitted lines.
type svgShape struct {
	titles                 []string
	polylines, dots, fits  []int // per chart
	numbersAreFinite, root bool
}

// parseSVG parses an SVG with encoding/xml and counts what each chart
// (a <g class="chart">) holds.
func parseSVG(t interface{ Fatalf(string, ...any) }, svg string) svgShape {
	d := xml.NewDecoder(strings.NewReader(svg))
	s := svgShape{numbersAreFinite: true}
	depth, inChart, titleNext := 0, -1, false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the SVG does not parse: %v\n%s", err, svg)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 1 {
				s.root = tok.Name.Local == "svg" && tok.Name.Space == "http://www.w3.org/2000/svg"
			}
			attr := map[string]string{}
			for _, a := range tok.Attr {
				attr[a.Name.Local] = a.Value
				if strings.Contains(a.Value, "NaN") || strings.Contains(a.Value, "Inf") {
					s.numbersAreFinite = false
				}
			}
			switch {
			case tok.Name.Local == "g" && attr["class"] == "chart":
				inChart = len(s.polylines)
				s.polylines, s.dots, s.fits = append(s.polylines, 0), append(s.dots, 0), append(s.fits, 0)
				titleNext = true
			case inChart < 0:
			case tok.Name.Local == "polyline":
				s.polylines[inChart]++
			case tok.Name.Local == "circle":
				s.dots[inChart]++
			case tok.Name.Local == "line" && attr["class"] == "fit":
				s.fits[inChart]++
			}
		case xml.CharData:
			if titleNext && strings.TrimSpace(string(tok)) != "" {
				s.titles = append(s.titles, string(tok))
				titleNext = false
			}
		case xml.EndElement:
			depth--
			if tok.Name.Local == "g" {
				inChart = -1
			}
		}
	}
	return s
}

// TestWriteSVG_AnySeries draws arbitrary series, NaN, infinities, empty
// and single samples included, with and without results: the SVG always
// parses, has one chart per name, titled with it and drawn with finite
// numbers only, and one fitted line per judged series.
func TestWriteSVG_AnySeries(t *testing.T) {
	value := rapid.OneOf(
		rapid.Float64Range(-1e12, 1e12),
		rapid.SampledFrom([]float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, 1e300, -1e300}),
		rapid.Float64(),
	)
	rapid.Check(t, func(t *rapid.T) {
		names := []string{"rss", "heap", `<a & "b">`, "cache_objects/vms", "ünï\x01"}
		var series []Series
		for range rapid.IntRange(0, 8).Draw(t, "series") {
			s := Series{
				Process: rapid.SampledFrom([]string{"manager-0", "manager-1", "vcsim", "<&>"}).Draw(t, "process"),
				Name:    rapid.SampledFrom(names).Draw(t, "name"),
				Kind:    Kind(rapid.IntRange(0, 4).Draw(t, "kind")),
			}
			at := t0
			for range rapid.IntRange(0, 40).Draw(t, "points") {
				at = at.Add(time.Duration(rapid.IntRange(0, 60).Draw(t, "dt")) * time.Second)
				s.Points = append(s.Points, Point{T: at, V: value.Draw(t, "v")})
			}
			series = append(series, s)
		}
		var results []Result
		if rapid.Bool().Draw(t, "judged") {
			results = Evaluate(series, nil)
		}
		var b strings.Builder
		if err := WriteSVG(&b, series, results); err != nil {
			t.Fatal(err)
		}
		got := parseSVG(t, b.String())
		var want []string
		for _, s := range series {
			if !slices.Contains(want, s.Name) {
				want = append(want, s.Name)
			}
		}
		if !got.root || len(got.titles) != len(want) {
			t.Fatalf("an <svg> root %v, %d charts; want %d\n%s", got.root, len(got.titles), len(want), b.String())
		}
		for i, name := range want {
			if clean := strings.ToValidUTF8(strings.ReplaceAll(name, "\x01", "\uFFFD"), "\uFFFD"); !strings.HasPrefix(got.titles[i], clean) {
				t.Fatalf("chart %d is titled %q, want %q first", i, got.titles[i], clean)
			}
		}
		if !got.numbersAreFinite {
			t.Fatalf("an attribute holds NaN or Inf:\n%s", b.String())
		}
		for i, name := range want {
			judged := 0
			for _, r := range results {
				if r.Name == name && r.Verdict != NoData && !math.IsInf(r.Kind.display(r.Intercept+r.Growth), 0) {
					judged++
				}
			}
			if got.fits[i] > judged {
				t.Fatalf("chart %s has %d fitted lines for %d judged series", name, got.fits[i], judged)
			}
		}
	})
}

// TestWriteSVG_Shapes: each process's series is a line; a gap splits it;
// a lone sample is a dot; an empty chart says so.
func TestWriteSVG_Shapes(t *testing.T) {
	nan := math.NaN()
	var steady []float64
	for i := range 20 {
		steady = append(steady, float64(i%3))
	}
	gap := slices.Concat(steady[:8], []float64{nan}, steady[9:])
	series := []Series{
		evenly(Entries, steady), evenly(Entries, gap), evenly(Entries, []float64{nan, 5, nan}), evenly(Memory, []float64{nan}),
	}
	series[0].Process, series[0].Name = "manager-0", "cache"
	series[1].Process, series[1].Name = "manager-1", "cache"
	series[2].Process, series[2].Name = "vcsim", "cache"
	series[3].Process, series[3].Name = "manager-0", "heap"
	var b strings.Builder
	if err := WriteSVG(&b, series, Evaluate(series, nil)); err != nil {
		t.Fatal(err)
	}
	got := parseSVG(t, b.String())
	if want := []string{"cache (count): vcsim NO DATA", "heap (MiB): manager-0 NO DATA"}; !slices.Equal(got.titles, want) {
		t.Errorf("titles %q, want %q", got.titles, want)
	}
	if !slices.Equal(got.polylines, []int{3, 0}) || !slices.Equal(got.dots, []int{1, 0}) || !slices.Equal(got.fits, []int{2, 0}) {
		t.Errorf("polylines %v, dots %v, fitted lines %v; want [3 0], [1 0], [2 0]", got.polylines, got.dots, got.fits)
	}
	if !strings.Contains(b.String(), ">no data</text>") {
		t.Error("the empty chart does not say it has no data")
	}
}

func TestNiceStep(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		raw := rapid.Float64Range(1e-9, 1e12).Draw(t, "raw")
		step := niceStep(raw)
		mant := step / math.Pow(10, math.Floor(math.Log10(step)+1e-9))
		nice := slices.ContainsFunc([]float64{1, 2, 5, 10}, func(m float64) bool { return math.Abs(mant-m) < 1e-6 })
		if step < raw || step > 5*raw*(1+1e-9) || !nice {
			t.Fatalf("niceStep(%v) = %v (mantissa %v)", raw, step, mant)
		}
	})
}
