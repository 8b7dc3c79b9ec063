package kube

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the reconciler's Prometheus metrics, labelled by owner kind:
//
//	replicakit_children_created_total{kind}
//	replicakit_children_deleted_total{kind}
//	replicakit_child_operation_failures_total{kind,operation}
//	replicakit_plan_seconds{kind}           (histogram of the time to decide a pass that acted)
type Metrics struct {
	created  *prometheus.CounterVec
	deleted  *prometheus.CounterVec
	failures *prometheus.CounterVec
	plan     *prometheus.HistogramVec
}

// NewMetrics registers the metrics with reg. Metrics already registered
// there (by another reconciler) are shared, not duplicated.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		created: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "replicakit_children_created_total",
			Help: "Children created by replicakit reconcilers."}, []string{"kind"}),
		deleted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "replicakit_children_deleted_total",
			Help: "Children deleted by replicakit reconcilers."}, []string{"kind"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "replicakit_child_operation_failures_total",
			Help: "Failed child creates and deletes."}, []string{"kind", "operation"}),
		plan: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "replicakit_plan_seconds",
			Help: "Time to decide a reconcile pass that acted (its scale plan included).", Buckets: prometheus.ExponentialBuckets(1e-6, 4, 10)}, []string{"kind"}),
	}
	var err error
	m.created, err = register(reg, m.created)
	if err == nil {
		m.deleted, err = register(reg, m.deleted)
	}
	if err == nil {
		m.failures, err = register(reg, m.failures)
	}
	if err == nil {
		m.plan, err = register(reg, m.plan)
	}
	return m, err
}

// register registers c, or returns the collector registered before it.
func register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	err := reg.Register(c)
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(T); ok {
			return existing, nil
		}
	}
	return c, err
}

// record counts one pass's creates, deletes and failures; m may be nil.
func (m *Metrics) record(kind string, d decision, out outcome, took time.Duration) {
	if m == nil || !out.ran {
		return
	}
	m.plan.WithLabelValues(kind).Observe(took.Seconds())
	m.created.WithLabelValues(kind).Add(float64(len(out.acted.Created)))
	m.deleted.WithLabelValues(kind).Add(float64(len(out.acted.Deleted)))
	skipped := set(out.acted.Skipped)
	failedCreates, failedDeletes := 0, 0
	for _, n := range d.create {
		if !skipped[n] {
			failedCreates++
		}
	}
	for _, r := range d.delete {
		if !skipped[r.Name] {
			failedDeletes++
		}
	}
	failedCreates -= len(out.acted.Created)
	failedDeletes -= len(out.acted.Deleted)
	if failedCreates > 0 {
		m.failures.WithLabelValues(kind, "create").Add(float64(failedCreates))
	}
	if failedDeletes > 0 {
		m.failures.WithLabelValues(kind, "delete").Add(float64(failedDeletes))
	}
}
