package kube_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset/kube"
)

// tableGauge reads gauge family's value for owner kind kind from reg; -1
// when reg has none.
func tableGauge(t *testing.T, reg prometheus.Gatherer, family, kind string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != family {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}

// waitTables waits until the table gauges of Widgets read expectations and
// backoff.
func waitTables(t *testing.T, reg prometheus.Gatherer, what string, expectations, backoff float64) {
	t.Helper()
	var e, b float64
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		e = tableGauge(t, reg, "replicakit_expectations_entries", "Widget")
		b = tableGauge(t, reg, "replicakit_zone_backoff_entries", "Widget")
		return e == expectations && b == backoff, nil
	})
	if err != nil {
		t.Fatalf("%s: expectations entries %v, zone backoff entries %v; want %v, %v", what, e, b, expectations, backoff)
	}
}

// TestReconciler_TableGauges runs two Widgets on the API server, one of
// them with a zone backing off, and deletes them: the table gauges count
// them while they live and drop them once they are gone, so a soak sees
// no table grow with owners deleted long ago. The manager caches the
// test's namespace only: other tests' Widgets stay out of its tables.
func TestReconciler_TableGauges(t *testing.T) {
	e := env.Require(t)
	ns := fmt.Sprintf("t-%d", time.Now().UnixNano())
	createObject(t, e.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	e.StartManager(t, scheme, func(mgr ctrl.Manager) error {
		m, err := kube.NewMetrics(reg)
		if err != nil {
			return err
		}
		r := newWidgetReconciler()
		r.Metrics, r.ZoneBackoff = m, time.Hour
		return r.SetupWithManager(mgr, "widget")
	}, func(o *ctrl.Options) { o.Cache.DefaultNamespaces = map[string]cache.Config{ns: {}} })
	c := e.Client
	waitTables(t, reg, "no Widget yet", 0, 0)

	zoned := widget(ns, "zoned", 2)
	zoned.Object["spec"].(map[string]any)["zones"] = []any{"a", "b"}
	createObject(t, c, zoned)
	plain := widget(ns, "plain", 1)
	createObject(t, c, plain)
	converge(t, c, zoned, 2)
	converge(t, c, plain, 1)
	waitTables(t, reg, "two Widgets", 2, 0)

	var l corev1.ConfigMapList
	if err := c.List(context.Background(), &l, client.InNamespace(ns), client.MatchingLabels{kube.ZoneLabel: "b"}); err != nil || len(l.Items) != 1 {
		t.Fatalf("the child in zone b: %v (%d found)", err, len(l.Items))
	}
	patch := []byte(`{"data":{"phase":"Failed"}}`)
	if err := c.Patch(context.Background(), &l.Items[0], client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, zoned, kube.ConditionZonesBalanced, "False", kube.ReasonZoneFailing)
	waitTables(t, reg, "zone b backing off", 2, 1)

	for _, w := range []client.Object{zoned, plain} {
		if err := c.Delete(context.Background(), w); err != nil {
			t.Fatal(err)
		}
	}
	waitTables(t, reg, "both Widgets deleted", 0, 0)
}
