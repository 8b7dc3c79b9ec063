package kube

import (
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/replicakit/replicakit/replicaset"
)

// tableGauges gathers reg's table gauges: family, then kind, to value.
func tableGauges(t *testing.T, reg prometheus.Gatherer) map[string]map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "replicakit_expectations_entries" && mf.GetName() != "replicakit_zone_backoff_entries" {
			continue
		}
		out[mf.GetName()] = map[string]float64{}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" {
					out[mf.GetName()][l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}

type cmReconciler = Reconciler[*corev1.ConfigMap, *corev1.ConfigMap]

// tracked returns a reconciler of owner kind kind whose tables m counts,
// as setup leaves it.
func tracked(m *Metrics, kind string) *cmReconciler {
	r := &cmReconciler{Metrics: m}
	r.ownerGVK = schema.GroupVersionKind{Version: "v1", Kind: kind}
	r.trackTables()
	return r
}

// trackedAndDropped tracks a reconciler of kind kind, and drops it.
func trackedAndDropped(m *Metrics, kind string) {
	r := tracked(m, kind)
	r.backoff.record("ns/x", replicaset.History{ZoneBackoff: []replicaset.ZoneBackoff{{Zone: "a", Until: time.Now().Add(time.Hour)}}})
}

// TestMetrics_TableGauges: the gauges count the owners in the tables, per
// kind, an expectations table shared by two reconcilers once, across Metrics
// registered twice with one registry, and forget a reconciler its
// program dropped.
func TestMetrics_TableGauges(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	const exp, zb = "replicakit_expectations_entries", "replicakit_zone_backoff_entries"
	check := func(what string, want map[string]map[string]float64) {
		t.Helper()
		if diff := cmp.Diff(want, tableGauges(t, reg)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", what, diff)
		}
	}
	check("before any reconciler", map[string]map[string]float64{})

	web := tracked(m, "Widget")
	check("a reconciler set up, before its first pass", map[string]map[string]float64{exp: {"Widget": 0}, zb: {"Widget": 0}})

	now := time.Now()
	web.defaults()
	e := web.expectations
	e.bind("ns/a", "uid-a")                         // read by a pass
	e.bind("ns/b", "uid-b")                         // read, and waiting for its writes
	e.expect("ns/b", []string{"b-1"}, nil, now)     // (bound: counted once)
	e.expect("ns/c", nil, []string{"uid-c-1"}, now) // waiting, not bound
	e.noteTaken("ns/d", []string{"d-1"}, now)       // a taken name alone
	e.noteTaken("ns/c", []string{"c-1"}, now)       // (waiting: counted once)
	web.backoff.record("ns/a", replicaset.History{ZoneBackoff: []replicaset.ZoneBackoff{{Zone: "z", Until: now.Add(time.Hour)}}})
	web.backoff.setFailing("ns/b", []string{"uid-b-0"})
	check("one reconciler's tables", map[string]map[string]float64{exp: {"Widget": 4}, zb: {"Widget": 2}})

	m2, err := NewMetrics(reg) // another reconciler's, on the same registry
	if err != nil {
		t.Fatal(err)
	}
	twin := &cmReconciler{Metrics: m2, expectations: e}
	twin.ownerGVK = web.ownerGVK
	twin.trackTables()
	twin.backoff.record("ns/t", replicaset.History{ZoneBackoff: []replicaset.ZoneBackoff{{Zone: "z", Until: now.Add(time.Hour)}}})
	other := tracked(m2, "Gadget")
	other.defaults()
	other.expectations.bind("ns/g", "uid-g")
	check("a second reconciler of the kind, sharing the expectations, and one of another kind",
		map[string]map[string]float64{exp: {"Widget": 4, "Gadget": 1}, zb: {"Widget": 3, "Gadget": 0}})

	web.forget("ns/a")
	web.forget("ns/b")
	web.forget("ns/c")
	web.forget("ns/d")
	twin.forget("ns/t")
	other.forget("ns/g")
	check("every owner deleted", map[string]map[string]float64{exp: {"Widget": 0, "Gadget": 0}, zb: {"Widget": 0, "Gadget": 0}})

	trackedAndDropped(m, "Dropped")
	runtime.GC()
	check("a reconciler dropped", map[string]map[string]float64{exp: {"Widget": 0, "Gadget": 0}, zb: {"Widget": 0, "Gadget": 0}})
	runtime.KeepAlive(web)
	runtime.KeepAlive(twin)
	runtime.KeepAlive(other)
}

// TestMetrics_RemediationsCountHealingOnly: a child failed in its zone,
// replaced by an owner without Spec.Remediation (Spec.ReplaceFailed), is
// no remediation; one replaced by a healing owner is.
func TestMetrics_RemediationsCountHealingOnly(t *testing.T) {
	for _, heals := range []bool{false, true} {
		change := []func(*observation){zoned("a", "b", "c")}
		if heals {
			change = append(change, healing(replicaset.Remediation{}))
		}
		o := observed(3, kids(kid("web-0", inZone("a")), kid("web-1", inZone("b"), failed), kid("web-2", inZone("c"))), change...)
		d := decide(o, ordinal)
		if len(d.plan.Replace) != 1 {
			t.Fatalf("healing %v: replaced %v, want web-1", heals, d.plan.Replace)
		}
		reg := prometheus.NewRegistry()
		m, err := NewMetrics(reg)
		if err != nil {
			t.Fatal(err)
		}
		m.record("Widget", d, succeeded(d), time.Millisecond)
		want := map[bool]float64{false: 0, true: 1}[heals]
		var got float64
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "replicakit_remediations_total" {
				for _, c := range mf.GetMetric() {
					got += c.GetCounter().GetValue()
				}
			}
		}
		if got != want {
			t.Errorf("healing %v: replicakit_remediations_total %v, want %v", heals, got, want)
		}
	}
}
