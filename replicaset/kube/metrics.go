package kube

import (
	"errors"
	"maps"
	"slices"
	"sync"
	"time"
	"weak"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the reconciler's Prometheus metrics, labelled by owner kind:
//
//	replicakit_children_created_total{kind}
//	replicakit_children_deleted_total{kind}
//	replicakit_child_operation_failures_total{kind,operation}
//	replicakit_plan_seconds{kind}           (histogram of the time to decide a pass that acted)
//	replicakit_expectations_entries{kind}   (gauge: owners the expectations remember anything of)
//	replicakit_zone_backoff_entries{kind}   (gauge: owners in the zone backoff table)
//	replicakit_remediations_total{kind,action}  (children restarted or replaced to heal them: action restart or replace)
//
// The two gauges are the sizes of tables the reconcilers using the
// Metrics keep in memory, counted at each scrape: an owner enters them
// when a pass reads it (its expectations remember its UID) or one of its
// creates fails (in a zone, or at all: History.CreatesFailing), and
// leaves them when a pass finds it deleted.
// With a steady set of owners they stay steady.
type Metrics struct {
	created  *prometheus.CounterVec
	deleted  *prometheus.CounterVec
	failures *prometheus.CounterVec
	plan     *prometheus.HistogramVec
	tables   *tableSizes
	healed   *prometheus.CounterVec
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
		healed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "replicakit_remediations_total",
			Help: "Children restarted or replaced to heal them (Spec.Remediation), by action: restart or replace."}, []string{"kind", "action"}),
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
	if err == nil {
		m.healed, err = register(reg, m.healed)
	}
	if err == nil {
		m.tables, err = register(reg, newTableSizes())
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
	if m == nil {
		return
	}
	m.recordHealing(kind, d, out)
	if !out.ran {
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

// recordHealing counts one pass's remediations. Storms are not counted:
// a pass may read its owner's history before its last write of it shows,
// and count one storm twice; the owner's RemediationAllowed condition
// (TooManyUnhealthy) says when one holds.
func (m *Metrics) recordHealing(kind string, d decision, out outcome) {
	if n := len(out.restarted); n > 0 {
		m.healed.WithLabelValues(kind, "restart").Add(float64(n))
	}
	replaced := 0
	for _, r := range d.plan.Replace {
		if len(d.replaced) > 0 {
			break // failed in their zones, without Remediation: not healing
		}
		if slices.Contains(out.acted.Deleted, r.Name) {
			replaced++
		}
	}
	if replaced > 0 {
		m.healed.WithLabelValues(kind, "replace").Add(float64(replaced))
	}
}

// tableSizes is the collector of the table gauges. It reads each
// reconciler's tables through a weak pointer, so that Metrics registered
// for good (with controller-runtime's registry) keep no reconciler alive
// that its program dropped, nor the manager and cache it holds.
type tableSizes struct {
	expectations, backoff *prometheus.Desc

	mu      sync.Mutex
	sources map[any]tableSource // by weak pointer to the reconciler
}

// tableSource reads one reconciler's tables; ok is false once the
// reconciler is gone.
type tableSource struct {
	kind   string
	tables func() (e *expectations, b *zoneBackoffs, ok bool)
}

func newTableSizes() *tableSizes {
	return &tableSizes{
		expectations: prometheus.NewDesc("replicakit_expectations_entries",
			"Owners whose expectations, names found taken or UID replicakit reconcilers remember.", []string{"kind"}, nil),
		backoff: prometheus.NewDesc("replicakit_zone_backoff_entries",
			"Owners in replicakit reconcilers' zone backoff tables.", []string{"kind"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (t *tableSizes) Describe(ch chan<- *prometheus.Desc) {
	ch <- t.expectations
	ch <- t.backoff
}

// Collect implements prometheus.Collector: per owner kind, the entries of
// the distinct tables of its reconcilers, each read under its lock.
func (t *tableSizes) Collect(ch chan<- prometheus.Metric) {
	t.mu.Lock()
	sources := maps.Clone(t.sources)
	t.mu.Unlock()
	type tables struct {
		e map[*expectations]struct{}
		b map[*zoneBackoffs]struct{}
	}
	byKind := map[string]tables{}
	for key, s := range sources {
		e, b, ok := s.tables()
		if !ok {
			t.mu.Lock()
			delete(t.sources, key)
			t.mu.Unlock()
			continue
		}
		k, seen := byKind[s.kind]
		if !seen {
			k = tables{e: map[*expectations]struct{}{}, b: map[*zoneBackoffs]struct{}{}}
			byKind[s.kind] = k
		}
		k.e[e], k.b[b] = struct{}{}, struct{}{}
	}
	for kind, k := range byKind {
		ne, nb := 0, 0
		for e := range k.e {
			ne += e.entries()
		}
		for b := range k.b {
			nb += b.entries()
		}
		ch <- prometheus.MustNewConstMetric(t.expectations, prometheus.GaugeValue, float64(ne), kind)
		ch <- prometheus.MustNewConstMetric(t.backoff, prometheus.GaugeValue, float64(nb), kind)
	}
}

// trackTables has r's Metrics count r's tables under r's owner kind for
// as long as r lives. Called again, it replaces what it did.
func (r *Reconciler[O, C]) trackTables() {
	if r.Metrics == nil || r.Metrics.tables == nil {
		return
	}
	t, self := r.Metrics.tables, weak.Make(r)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sources == nil {
		t.sources = map[any]tableSource{}
	}
	t.sources[self] = tableSource{kind: r.ownerGVK.Kind, tables: func() (*expectations, *zoneBackoffs, bool) {
		r := self.Value()
		if r == nil {
			return nil, nil, false
		}
		r.defaults() // expectations is filled in once, by the first pass or scrape
		return r.expectations, &r.backoff, true
	}}
}
