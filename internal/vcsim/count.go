package vcsim

import (
	"maps"
	"regexp"
	"sync"
	"time"
)

// Counts is what a serialized simulator's gate has counted: the SOAP
// calls that reached it, by method, the tasks they started, and the calls
// that served a watch. A snapshot (Faults.Counts) is a copy; two
// snapshots' difference (Minus) is what happened between them.
type Counts struct {
	// Calls is how many calls of each method reached the gate, served or
	// failed; a long poll (WaitForUpdatesEx) counts once however long it
	// waits.
	Calls map[string]int64
	// Tasks is how many tasks the calls of each method started: calls
	// answered with a Task (the *_Task methods that did not fail).
	Tasks map[string]int64
	// Watch is how many of Calls served a watch: the calls on a property
	// collector whose filter watches a view (a ContainerView or a
	// ListView), which is how a watch of VMs sees them change, rather
	// than a wait on one task. They are its CreateFilter and every
	// WaitForUpdatesEx, CancelWaitForUpdates and DestroyPropertyCollector
	// on it. The watch's set-up before its filter (CreatePropertyCollector,
	// CreateContainerView, CreateListView) and its views' and filter's
	// destruction are counted in Calls only: the gate cannot tell them
	// from the same calls made for other ends.
	Watch map[string]int64
	// Ended is how many of the tasks the gate defers (Latency) have
	// ended, by method: run to their end, or cancelled (CancelTask).
	Ended map[string]int64
}

// Minus returns c less before, method by method, leaving out methods
// that did not change.
func (c Counts) Minus(before Counts) Counts {
	return Counts{Calls: minus(c.Calls, before.Calls), Tasks: minus(c.Tasks, before.Tasks), Watch: minus(c.Watch, before.Watch),
		Ended: minus(c.Ended, before.Ended)}
}

func minus(after, before map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for m, n := range after {
		if d := n - before[m]; d != 0 {
			out[m] = d
		}
	}
	return out
}

// Sum returns the total of the counts in m.
func Sum(m map[string]int64) int64 {
	var n int64
	for _, k := range m {
		n += k
	}
	return n
}

// callCount counts SOAP calls by method, and knows the call the gate is
// serving.
type callCount struct {
	mu      sync.Mutex
	calls   map[string]int64
	tasks   map[string]int64
	watch   map[string]int64
	ended   map[string]int64
	watches map[string]bool // property collectors whose filter watches a view

	serving string    // the method of the call holding the gate, "" when none
	since   time.Time // when it took the gate
}

// collectorMethods are the methods on a property collector that count as
// its watch's when its filter watches a view.
var collectorMethods = map[string]bool{
	"CreateFilter": true, "WaitForUpdatesEx": true, "WaitForUpdates": true, "CheckForUpdates": true,
	"CancelWaitForUpdates": true, "DestroyPropertyCollector": true,
}

// viewFilter finds a CreateFilter whose spec starts from a view.
var viewFilter = regexp.MustCompile(`<obj type="(?:ContainerView|ListView)">`)

// count records a call of method with the request body, and whether it
// served a watch.
func (c *callCount) count(method string, body []byte) {
	this, onCollector := "", collectorMethods[method]
	if onCollector {
		if m := thisRef.FindSubmatch(body); m != nil {
			this = string(m[2])
		}
	}
	watches := method == "CreateFilter" && viewFilter.Match(body)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls, c.tasks, c.watch, c.watches = map[string]int64{}, map[string]int64{}, map[string]int64{}, map[string]bool{}
	}
	c.calls[method]++
	if !onCollector {
		return
	}
	if watches {
		c.watches[this] = true
	}
	if c.watches[this] {
		c.watch[method]++
	}
	if method == "DestroyPropertyCollector" {
		delete(c.watches, this)
	}
}

// countTasks records that a call of method started n tasks.
func (c *callCount) countTasks(method string, n int) {
	if n == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tasks == nil {
		c.tasks = map[string]int64{}
	}
	c.tasks[method] += int64(n)
}

// Calls returns how many calls of each SOAP method have been made so far;
// a long poll (WaitForUpdatesEx) counts once however long it waits.
func (c *callCount) Calls() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.calls)
}

// Counts returns a snapshot of the calls, tasks and watch calls counted so
// far; it is safe to call at any time.
func (c *callCount) Counts() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Counts{Calls: cloneOrEmpty(c.calls), Tasks: cloneOrEmpty(c.tasks), Watch: cloneOrEmpty(c.watch), Ended: cloneOrEmpty(c.ended)}
}

// taskEnded counts a deferred task of method that ended.
func (c *callCount) taskEnded(method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended == nil {
		c.ended = map[string]int64{}
	}
	c.ended[method]++
}

func cloneOrEmpty(m map[string]int64) map[string]int64 {
	if m == nil {
		return map[string]int64{}
	}
	return maps.Clone(m)
}

// took records that a call of method took the gate, or, with "", that
// the gate is free.
func (c *callCount) took(method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.serving, c.since = method, time.Now()
}

// Serving returns the method of the call the gate is serving (the tasks it
// started included) and for how long, or "" when it serves none: a test
// whose read of the simulator waits too long can say what holds the
// gate.
func (c *callCount) Serving() (method string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.serving == "" {
		return "", 0
	}
	return c.serving, time.Since(c.since)
}
