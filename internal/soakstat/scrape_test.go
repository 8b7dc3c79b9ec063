package soakstat

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"pgregory.net/rapid"
	_ "sigs.k8s.io/controller-runtime/pkg/controller" // registers the Go and process collectors
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// serve serves reg's metrics as promhttp does (and so controller-runtime's
// metrics server) until the test ends, and returns the URL.
func serve(t interface{ Cleanup(func()) }, reg prometheus.Gatherer) string {
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestScrape_SumsLikeANaiveModel registers gauges of random label values
// and values, scrapes them over HTTP, and compares the sums with sums
// taken of what was set.
func TestScrape_SumsLikeANaiveModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		reg := prometheus.NewRegistry()
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "soak_test_objects", Help: "h"}, []string{"resource", "kind"})
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: "soak_test_total", Help: "h"})
		reg.MustRegister(g, c)
		label := rapid.SampledFrom([]string{"", "a", "b", `q"uote`, "ü\n"})
		set := map[[2]string]float64{}
		for range rapid.IntRange(0, 12).Draw(t, "n") {
			k := [2]string{label.Draw(t, "resource"), label.Draw(t, "kind")}
			set[k] = float64(rapid.IntRange(-1000, 1000).Draw(t, "value"))
			g.WithLabelValues(k[0], k[1]).Set(set[k])
		}
		count := float64(rapid.IntRange(0, 1e6).Draw(t, "count"))
		c.Add(count)

		e, err := Scrape(context.Background(), nil, serve(t, reg))
		if err != nil {
			t.Fatal(err)
		}
		wantSum, wantBy := 0.0, map[string]float64{}
		for k, v := range set {
			wantSum += v
			wantBy[k[0]] += v
		}
		sum, ok := e.Sum("soak_test_objects")
		if len(set) == 0 {
			// A vector without children exposes no family at all.
			if ok || e.SumBy("soak_test_objects", "resource") != nil {
				t.Fatalf("an empty vector scraped as %v", sum)
			}
			wantBy = nil
		} else if !ok || sum != wantSum {
			t.Fatalf("Sum = %v, %v; want %v", sum, ok, wantSum)
		}
		if diff := cmp.Diff(wantBy, e.SumBy("soak_test_objects", "resource")); diff != "" {
			t.Fatalf("SumBy (-want +got):\n%s", diff)
		}
		if got, ok := e.Sum("soak_test_total"); !ok || got != count {
			t.Fatalf("counter: %v, %v; want %v", got, ok, count)
		}
		if got, ok := e.Sum("soak_test_absent"); ok || !math.IsNaN(got) {
			t.Fatalf("absent family: %v, %v; want NaN, false", got, ok)
		}
	})
}

func TestScrape_Errors(t *testing.T) {
	for _, tt := range []struct {
		what string
		h    http.HandlerFunc
		want string
	}{
		{"not found", func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) }, "404"},
		{"not an exposition", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "<html>hello</html>\n") }, "text format parsing error"},
	} {
		srv := httptest.NewServer(tt.h)
		_, err := Scrape(context.Background(), srv.Client(), srv.URL)
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error with %q", tt.what, err, tt.want)
		}
	}
}

// TestControllerRuntimeRegistry: the registry a manager serves has the
// Go runtime's families that DefaultQuantities read.
func TestControllerRuntimeRegistry(t *testing.T) {
	e, err := Scrape(context.Background(), nil, serve(t, metrics.Registry))
	if err != nil {
		t.Fatal(err)
	}
	for _, family := range []string{FamilyHeapInuse, FamilyHeapLive, FamilyGoroutines} {
		if v, ok := e.Sum(family); !ok || !(v > 0) {
			t.Errorf("controller-runtime's registry serves %s = %v, %v; want a positive value", family, v, ok)
		}
	}
}

// TestSampler samples this process twice: rss and fds from /proc and a
// quantity of each form from a metrics endpoint; then an endpoint that is
// down, which records NaN where it can and reports it.
func TestSampler(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "objects", Help: "h"}, []string{"resource"})
	g.WithLabelValues("sets").Set(2)
	g.WithLabelValues("vms").Set(5)
	heap := prometheus.NewGauge(prometheus.GaugeOpts{Name: "heap", Help: "h"})
	heap.Set(1 << 20)
	reg.MustRegister(g, heap)
	url := serve(t, reg)
	s := Sampler{Quantities: []Quantity{
		{Name: "heap", Family: "heap", Kind: Memory},
		{Name: "objects", Family: "objects", By: "resource", Kind: Entries},
		{Name: "absent", Family: "absent", Kind: Entries},
	}}
	target := Target{Process: "self", PID: os.Getpid(), MetricsURL: url}
	ctx := context.Background()
	if err := s.Sample(ctx, target, t0); err == nil || !strings.Contains(err.Error(), "exposes no absent") {
		t.Errorf("a missing family: %v, want it reported", err)
	}
	heap.Set(2 << 20)
	_ = s.Sample(ctx, target, t0.Add(30e9))
	s.Add("other", "heap", Memory, t0, 7)
	down := Target{Process: "down", MetricsURL: "http://127.0.0.1:1/metrics"}
	if err := s.Sample(ctx, down, t0); err == nil {
		t.Error("an endpoint that is down reported no error")
	}

	type got struct {
		Process, Name string
		Kind          Kind
		Values        []float64
	}
	var all []got
	for _, sr := range s.Series() {
		g := got{Process: sr.Process, Name: sr.Name, Kind: sr.Kind}
		for _, p := range sr.Points {
			if sr.Name == "rss" || sr.Name == "fds" {
				p.V = math.Min(p.V, 1) // present; their values are TestReadProc's
			}
			g.Values = append(g.Values, p.V)
		}
		all = append(all, g)
	}
	nan := math.NaN()
	want := []got{
		{"self", "rss", Memory, []float64{1, 1}},
		{"self", "fds", FileDescriptors, []float64{1, 1}},
		{"self", "heap", Memory, []float64{1 << 20, 2 << 20}},
		{"self", "objects/sets", Entries, []float64{2, 2}},
		{"self", "objects/vms", Entries, []float64{5, 5}},
		{"self", "absent", Entries, []float64{nan, nan}},
		{"other", "heap", Memory, []float64{7}},
		{"down", "heap", Memory, []float64{nan}},
		{"down", "absent", Entries, []float64{nan}},
	}
	if diff := cmp.Diff(want, all, cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
}
