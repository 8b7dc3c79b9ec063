package soakstat

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// acceptText asks a Prometheus endpoint for the text exposition format,
// which is what promhttp (and so controller-runtime's metrics server)
// answers when the scraper asks for nothing else.
const acceptText = "text/plain;version=0.0.4"

// maxExposition bounds what Scrape reads of one answer. A manager's
// metrics are some hundred kilobytes; a broken endpoint that streams
// forever fails instead of filling memory.
const maxExposition = 64 << 20

// Exposition is one scrape of a Prometheus endpoint, parsed.
type Exposition struct {
	families map[string][]sample
}

// sample is one sample of a family: its labels and value.
type sample struct {
	labels map[string]string
	value  float64
}

// Scrape GETs url, a Prometheus endpoint over plain HTTP (the soak runs
// the managers with -metrics-secure=false), with c (nil means
// http.DefaultClient; give one with a timeout), and parses its answer.
func Scrape(ctx context.Context, c *http.Client, url string) (*Exposition, error) {
	if c == nil {
		c = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", acceptText)
	res, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = res.Body.Close() }() // read to the end or to an error, which Parse reports
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, res.Status)
	}
	e, err := Parse(io.LimitReader(res.Body, maxExposition))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return e, nil
}

// Parse reads a Prometheus text exposition. Of each family it keeps the
// samples that have one value: gauges, counters and untyped samples.
// Histograms and summaries are kept as the count of their observations.
func Parse(r io.Reader) (*Exposition, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	e := &Exposition{families: make(map[string][]sample, len(mfs))}
	for name, mf := range mfs {
		var out []sample
		for _, m := range mf.GetMetric() {
			s := sample{labels: make(map[string]string, len(m.GetLabel()))}
			for _, l := range m.GetLabel() {
				s.labels[l.GetName()] = l.GetValue()
			}
			switch {
			case m.GetGauge() != nil:
				s.value = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				s.value = m.GetCounter().GetValue()
			case m.GetUntyped() != nil:
				s.value = m.GetUntyped().GetValue()
			case m.GetHistogram() != nil:
				s.value = float64(m.GetHistogram().GetSampleCount())
			case m.GetSummary() != nil:
				s.value = float64(m.GetSummary().GetSampleCount())
			default:
				continue
			}
			out = append(out, s)
		}
		e.families[name] = out
	}
	return e, nil
}

// Sum returns family's value summed over all its label sets, and whether
// the exposition has the family at all. A family without samples sums to
// 0. NaN samples make the sum NaN.
func (e *Exposition) Sum(family string) (float64, bool) {
	samples, ok := e.families[family]
	if !ok {
		return math.NaN(), false
	}
	sum := 0.0
	for _, s := range samples {
		sum += s.value
	}
	return sum, true
}

// SumBy returns family's values summed per value of label (a sample
// without the label counts under ""); nil when the exposition lacks the
// family.
func (e *Exposition) SumBy(family, label string) map[string]float64 {
	samples, ok := e.families[family]
	if !ok {
		return nil
	}
	out := map[string]float64{}
	for _, s := range samples {
		out[s.labels[label]] += s.value
	}
	return out
}
