package soakstat

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Kind is what a series counts; it chooses the series' unit and its
// default Tolerance.
type Kind int

// The kinds of series.
const (
	// Memory is bytes of memory: a process's resident set, its Go heap.
	Memory Kind = iota
	// Goroutines counts a process's goroutines.
	Goroutines
	// FileDescriptors counts a process's open file descriptors.
	FileDescriptors
	// Entries counts things a process keeps: objects in its informer
	// caches, owners in its expectations and zone backoff tables.
	Entries
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case Memory:
		return "memory"
	case Goroutines:
		return "goroutines"
	case FileDescriptors:
		return "file descriptors"
	case Entries:
		return "entries"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Unit is the unit in which tables and charts show the kind's values:
// MiB for memory, none for counts.
func (k Kind) Unit() string {
	if k == Memory {
		return "MiB"
	}
	return "count"
}

// mib is a mebibyte.
const mib = 1 << 20

// display converts a value of kind k to its Unit.
func (k Kind) display(v float64) float64 {
	if k == Memory {
		return v / mib
	}
	return v
}

// Point is one sample of a series; V is NaN when the sample could not be
// taken.
type Point struct {
	T time.Time
	V float64
}

// Series is one quantity of one process over a run.
type Series struct {
	// Process names the process, such as "manager-0".
	Process string
	// Name names the quantity, such as "rss" or "cache_objects/virtualmachines".
	Name string
	// Kind is what it counts.
	Kind Kind
	// Points are the samples in the order taken.
	Points []Point
}

// Quantity is a value read from a process's metrics: a family's samples
// summed, or, with By set, summed per value of the label By, one series
// each, named Name + "/" + value.
type Quantity struct {
	// Name names the series.
	Name string
	// Family is the Prometheus metric family.
	Family string
	// By, when set, is a label whose values get a series each.
	By string
	// Kind is what the quantity counts.
	Kind Kind
}

// The metric families the soak reads. The Go runtime's are exposed by
// controller-runtime's registry (its Go collector, with every runtime
// metric); the binding and the example operator add the others.
const (
	// FamilyHeapInuse is the bytes in the Go heap's spans in use: live
	// objects and garbage not yet collected.
	FamilyHeapInuse = "go_memstats_heap_inuse_bytes"
	// FamilyHeapLive is the bytes of heap objects the last garbage
	// collection found live: the heap without the collector's sawtooth.
	FamilyHeapLive = "go_gc_heap_live_bytes"
	// FamilyGoroutines is the number of goroutines.
	FamilyGoroutines = "go_goroutines"
	// FamilyExpectations is the binding's count of owners its
	// expectations remember, by owner kind.
	FamilyExpectations = "replicakit_expectations_entries"
	// FamilyZoneBackoff is the binding's count of owners in its zone
	// backoff table, by owner kind.
	FamilyZoneBackoff = "replicakit_zone_backoff_entries"
	// FamilyCacheObjects is vmset-manager's count of objects in its
	// informer caches, by resource.
	FamilyCacheObjects = "vmset_cache_objects"
)

// DefaultQuantities are what Sampler.Sample reads from a manager's
// metrics when Sampler.Quantities is nil.
var DefaultQuantities = []Quantity{
	{Name: "heap_inuse", Family: FamilyHeapInuse, Kind: Memory},
	{Name: "heap_live", Family: FamilyHeapLive, Kind: Memory},
	{Name: "goroutines", Family: FamilyGoroutines, Kind: Goroutines},
	{Name: "expectations", Family: FamilyExpectations, Kind: Entries},
	{Name: "zone_backoff", Family: FamilyZoneBackoff, Kind: Entries},
	{Name: "cache_objects", Family: FamilyCacheObjects, By: "resource", Kind: Entries},
}

// Target is one process to sample.
type Target struct {
	// Process names it in the series.
	Process string
	// PID is its process ID, for /proc; zero skips rss and fds.
	PID int
	// MetricsURL is its Prometheus endpoint; empty skips the quantities.
	MetricsURL string
}

// Sampler keeps the series of a run, per process and quantity, in the
// order first sampled. Its zero value is ready to use; it is safe for
// concurrent use, so several processes may be sampled at once.
type Sampler struct {
	// Client scrapes the metrics; nil means a client with a 10-second
	// timeout.
	Client *http.Client
	// Quantities are read from each target's metrics; nil means
	// DefaultQuantities.
	Quantities []Quantity

	mu     sync.Mutex
	series []*Series
	index  map[[2]string]*Series // by process and name
}

// defaultClient scrapes when Sampler.Client is nil.
var defaultClient = &http.Client{Timeout: 10 * time.Second}

// Add appends the value v at time at to the series of process and name,
// which it starts, of kind k, when it is the first.
func (s *Sampler) Add(process, name string, k Kind, at time.Time, v float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := [2]string{process, name}
	sr := s.index[key]
	if sr == nil {
		if s.index == nil {
			s.index = map[[2]string]*Series{}
		}
		sr = &Series{Process: process, Name: name, Kind: k}
		s.index[key] = sr
		s.series = append(s.series, sr)
	}
	sr.Points = append(sr.Points, Point{T: at, V: v})
}

// Sample takes one sample of t at time at: "rss" and "fds" from /proc,
// and each quantity from its metrics. What cannot be read is recorded as
// NaN (a quantity by label records nothing, having no label values to
// record under), and the errors are returned joined; the run goes on.
func (s *Sampler) Sample(ctx context.Context, t Target, at time.Time) error {
	var errs []error
	if t.PID != 0 {
		rss, fds, err := ReadProc(t.PID)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t.Process, err))
			s.Add(t.Process, "rss", Memory, at, math.NaN())
			s.Add(t.Process, "fds", FileDescriptors, at, math.NaN())
		} else {
			s.Add(t.Process, "rss", Memory, at, float64(rss))
			s.Add(t.Process, "fds", FileDescriptors, at, float64(fds))
		}
	}
	if t.MetricsURL == "" {
		return errors.Join(errs...)
	}
	qs := s.Quantities
	if qs == nil {
		qs = DefaultQuantities
	}
	c := s.Client
	if c == nil {
		c = defaultClient
	}
	e, err := Scrape(ctx, c, t.MetricsURL)
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", t.Process, err))
		e = &Exposition{}
	}
	for _, q := range qs {
		if q.By == "" {
			v, ok := e.Sum(q.Family)
			if !ok && err == nil {
				errs = append(errs, fmt.Errorf("%s: %s exposes no %s", t.Process, t.MetricsURL, q.Family))
			}
			s.Add(t.Process, q.Name, q.Kind, at, v)
			continue
		}
		by := e.SumBy(q.Family, q.By)
		for _, label := range sortedKeys(by) {
			s.Add(t.Process, q.Name+"/"+label, q.Kind, at, by[label])
		}
	}
	return errors.Join(errs...)
}

// Series returns a copy of the series, in the order first sampled.
func (s *Sampler) Series() []Series {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Series, len(s.series))
	for i, sr := range s.series {
		out[i] = *sr
		out[i].Points = slices.Clone(sr.Points)
	}
	return out
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
