package soakstat

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The charts' geometry, in SVG user units (pixels).
const (
	chartW, chartH = 380, 230
	padLeft        = 60 // room for the value labels and the unit
	padRight       = 14
	padTop         = 44 // the title and the legend
	padBottom      = 40 // the minute labels and "minutes"
	plotW          = chartW - padLeft - padRight
	plotH          = chartH - padTop - padBottom
	columns        = 3
	header         = 22 // the caption above the charts
)

// palette colours the processes, in the order they first appear.
var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}

// WriteSVG draws series as small multiples: one chart per series name, in
// the order the names first appear, three to a row, with every process's
// series of that name as a line of its own colour (the same in every
// chart). The x axis is minutes since the first sample of the run, the
// same in every chart; the y axis is in the kind's unit. With results
// (from Check or Evaluate; nil draws none), each chart shades the second
// half, draws each process's fitted line over it dashed, and names in its
// title the processes whose series grew. Gaps (NaN samples) break the
// lines; a chart with no finite sample says "no data".
func WriteSVG(w io.Writer, series []Series, results []Result) error {
	var names, procs []string
	var t0, t1 time.Time
	for _, s := range series {
		if !slices.Contains(names, s.Name) {
			names = append(names, s.Name)
		}
		if !slices.Contains(procs, s.Process) {
			procs = append(procs, s.Process)
		}
		for _, p := range s.Points {
			if t0.IsZero() || p.T.Before(t0) {
				t0 = p.T
			}
			if t1.IsZero() || p.T.After(t1) {
				t1 = p.T
			}
		}
	}
	minutes := func(t time.Time) float64 { return t.Sub(t0).Minutes() }
	xmax := minutes(t1)
	if !(xmax > 0) {
		xmax = 1
	}
	rows := max(1, (len(names)+columns-1)/columns)
	cols := min(max(1, len(names)), columns)
	var b strings.Builder
	width, height := cols*chartW, header+rows*chartH
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
	if results != nil {
		fmt.Fprintf(&b, `<text x="%d" y="15" fill="#555555">Shaded: the second half of the run, which is judged; dashed: its least-squares line per process.</text>`+"\n", padLeft)
	}
	for i, name := range names {
		c := chart{name: name, x0: float64(i%columns) * chartW, y0: header + float64(i/columns)*chartH, xmax: xmax, minutes: minutes}
		for _, s := range series {
			if s.Name == name {
				c.series = append(c.series, s)
				c.colours = append(c.colours, palette[slices.Index(procs, s.Process)%len(palette)])
			}
		}
		for _, r := range results {
			if r.Name == name {
				c.results = append(c.results, r)
			}
		}
		c.draw(&b)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// chart is one small multiple: the series of one name.
type chart struct {
	name     string
	x0, y0   float64 // where the chart sits in the picture
	xmax     float64 // minutes at the right edge
	minutes  func(time.Time) float64
	series   []Series
	colours  []string // per series
	results  []Result
	lo, hi   float64 // the y axis, in the unit
	unitKind Kind
}

// draw writes the chart as a group of class "chart".
func (c *chart) draw(b *strings.Builder) {
	if len(c.series) > 0 {
		c.unitKind = c.series[0].Kind
	}
	fmt.Fprintf(b, `<g class="chart" transform="translate(%s,%s)">`+"\n", f(c.x0), f(c.y0))
	title := c.name + " (" + c.unitKind.Unit() + ")"
	var grew []string
	for _, r := range c.results {
		if r.Verdict != Pass {
			grew = append(grew, r.Process+" "+r.Verdict.String())
		}
	}
	colour := "#000000"
	if len(grew) > 0 {
		title += ": " + strings.Join(grew, ", ")
		colour = "#c00000"
	}
	fmt.Fprintf(b, `<text x="%d" y="14" font-weight="bold" fill="%s">%s</text>`+"\n", padLeft, colour, esc(title))
	x := float64(padLeft)
	for i, s := range c.series {
		fmt.Fprintf(b, `<line x1="%s" y1="27" x2="%s" y2="27" stroke="%s" stroke-width="2"/>`, f(x), f(x+14), c.colours[i])
		fmt.Fprintf(b, `<text x="%s" y="31">%s</text>`+"\n", f(x+18), esc(s.Process))
		x += 26 + 6.5*float64(len([]rune(s.Process)))
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999999"/>`+"\n", padLeft, padTop, plotW, plotH)
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">minutes</text>`+"\n", padLeft+plotW/2, chartH-6)
	fmt.Fprintf(b, `<text transform="translate(14,%d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", padTop+plotH/2, esc(c.unitKind.Unit()))
	if !c.yRange() {
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" fill="#999999">no data</text>`+"\n", padLeft+plotW/2, padTop+plotH/2)
		b.WriteString("</g>\n")
		return
	}
	c.shadeSecondHalf(b)
	c.axes(b)
	for i, s := range c.series {
		c.line(b, s, c.colours[i])
	}
	for _, r := range c.results {
		c.fit(b, r)
	}
	b.WriteString("</g>\n")
}

// yRange sets the y axis from the finite values and fitted lines; false
// when there are none.
func (c *chart) yRange() bool {
	lo, hi := math.Inf(1), math.Inf(-1)
	see := func(v float64) {
		if v = c.unitKind.display(v); !math.IsNaN(v) && !math.IsInf(v, 0) {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	for _, s := range c.series {
		for _, p := range s.Points {
			see(p.V)
		}
	}
	for _, r := range c.results {
		if r.Verdict != NoData {
			see(r.Intercept)
			see(r.Intercept + r.Growth)
		}
	}
	if lo > hi || math.IsInf(hi-lo, 0) {
		return false
	}
	if lo == hi {
		pad := max(math.Abs(lo)*0.05, 1)
		lo, hi = lo-pad, hi+pad
	}
	step := niceStep((hi - lo) / 4)
	c.lo, c.hi = math.Floor(lo/step)*step, math.Ceil(hi/step)*step
	return c.hi > c.lo && !math.IsInf(c.hi-c.lo, 0)
}

// px and py map minutes and a value in the unit into the chart.
func (c *chart) px(minutes float64) float64 { return padLeft + minutes/c.xmax*plotW }
func (c *chart) py(v float64) float64       { return padTop + plotH - (v-c.lo)/(c.hi-c.lo)*plotH }

// shadeSecondHalf shades the part of the run the results judged.
func (c *chart) shadeSecondHalf(b *strings.Builder) {
	var from time.Time
	for _, r := range c.results {
		if r.Verdict != NoData && (from.IsZero() || r.From.Before(from)) {
			from = r.From
		}
	}
	if from.IsZero() {
		return
	}
	x := c.px(c.minutes(from))
	fmt.Fprintf(b, `<rect x="%s" y="%d" width="%s" height="%d" fill="#f0f0f0"/>`+"\n", f(x), padTop, f(padLeft+plotW-x), plotH)
}

// axes writes the grid lines and their labels.
func (c *chart) axes(b *strings.Builder) {
	ystep := niceStep((c.hi - c.lo) / 4)
	for _, v := range ticks(c.lo, c.hi, ystep) {
		y := c.py(v)
		fmt.Fprintf(b, `<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#e0e0e0"/>`, padLeft, f(y), padLeft+plotW, f(y))
		fmt.Fprintf(b, `<text x="%d" y="%s" text-anchor="end">%s</text>`+"\n", padLeft-4, f(y+4), label(v, ystep))
	}
	xstep := niceStep(c.xmax / 5)
	for _, m := range ticks(0, c.xmax, xstep) {
		x := c.px(m)
		fmt.Fprintf(b, `<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#e0e0e0"/>`, f(x), padTop, f(x), padTop+plotH)
		fmt.Fprintf(b, `<text x="%s" y="%d" text-anchor="middle">%s</text>`+"\n", f(x), padTop+plotH+14, label(m, xstep))
	}
}

// line draws series s: a polyline per run of finite samples, a dot for a
// run of one.
func (c *chart) line(b *strings.Builder, s Series, colour string) {
	var run []string
	flush := func() {
		switch len(run) {
		case 0:
		case 1:
			x, y, _ := strings.Cut(run[0], ",")
			fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="2" fill="%s"/>`+"\n", x, y, colour)
		default:
			fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", colour, strings.Join(run, " "))
		}
		run = run[:0]
	}
	for _, p := range s.Points {
		v := c.unitKind.display(p.V)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			flush()
			continue
		}
		run = append(run, f(c.px(c.minutes(p.T)))+","+f(c.py(v)))
	}
	flush()
}

// fit draws r's fitted line over the second half, dashed, in the colour
// of r's process.
func (c *chart) fit(b *strings.Builder, r Result) {
	if r.Verdict == NoData {
		return
	}
	i := slices.IndexFunc(c.series, func(s Series) bool { return s.Process == r.Process })
	if i < 0 {
		return
	}
	k := c.unitKind
	y1, y2 := k.display(r.Intercept), k.display(r.Intercept+r.Growth)
	if math.IsNaN(y1+y2) || math.IsInf(y1+y2, 0) {
		return
	}
	fmt.Fprintf(b, `<line class="fit" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1" stroke-dasharray="4 3"/>`+"\n",
		f(c.px(c.minutes(r.From))), f(c.py(y1)), f(c.px(c.minutes(r.To))), f(c.py(y2)), c.colours[i])
}

// niceStep is the smallest of 1, 2 and 5 times a power of ten that is at
// least raw (1 when raw is not a positive finite number).
func niceStep(raw float64) float64 {
	if !(raw > 0) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// ticks lists the multiples of step from lo to hi, at most 50.
func ticks(lo, hi, step float64) []float64 {
	var out []float64
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9 && len(out) < 50; v += step {
		out = append(out, v)
	}
	return out
}

// label formats tick v with as many decimals as step needs.
func label(v, step float64) string {
	decimals := max(0, int(-math.Floor(math.Log10(step))))
	if math.Abs(v) < step*1e-9 {
		v = 0 // not "-0"
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// f formats a coordinate.
func f(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// esc escapes s for XML text and attribute values.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder never fails
	return b.String()
}
