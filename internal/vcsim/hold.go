package vcsim

import (
	"context"
	"sync"
	"sync/atomic"
)

// Held is a hold on one SOAP method's calls (Faults.Hold): each call of
// the method waits at the gate, without holding it, until the hold is
// released or dropped.
type Held struct {
	f      *Faults
	method string

	caught     chan struct{} // closed at the first call held
	caughtOnce sync.Once
	done       chan struct{} // closed when released or dropped
	doneOnce   sync.Once
	dropped    atomic.Bool
	count      atomic.Int64
}

// Hold makes every call of method wait at the gate of a simulator
// serialized by f, without holding the gate (other calls are served
// meanwhile), until the returned hold is released or dropped. A test that
// needs a call in flight at a moment of its own (a clone at the moment a
// partition cuts its vCenter off) makes the moment with it instead of
// racing for it: it holds the method, waits until a call is caught
// (Held.Caught), does what the moment is for, and lets the call go. A
// later Hold of the same method replaces this one for the calls that come
// after it. It is safe to call at any time.
func (f *Faults) Hold(method string) *Held {
	h := &Held{f: f, method: method, caught: make(chan struct{}), done: make(chan struct{})}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.holds == nil {
		f.holds = map[string]*Held{}
	}
	f.holds[method] = h
	return h
}

// HoldTasks makes the task of every call of method (a *_Task method the
// gate defers, Latency.Tasks) run on, once its time is up, until the
// returned hold is released: the call is answered with its task at once,
// as vCenter answers it, and the task stays running. A test that needs a
// task in flight at a moment of its own (a clone still running when its
// caller gives up, a clone slot taken) makes the moment with it. Drop
// ends the held tasks as Release does. It needs a Latency that defers
// method; it is safe to call at any time.
func (f *Faults) HoldTasks(method string) *Held {
	return f.Hold(taskEnd + method)
}

// taskEnd prefixes the method of a hold on the end of its deferred
// tasks (HoldTasks), which no SOAP method name begins with.
const taskEnd = "end of "

// Caught returns a channel that is closed once the hold has caught a call.
func (h *Held) Caught() <-chan struct{} { return h.caught }

// Count returns how many calls the hold has caught so far.
func (h *Held) Count() int64 { return h.count.Load() }

// Release lets the held calls through to be served, one at a time as
// every call is, and ends the hold for later calls.
func (h *Held) Release() { h.end(false) }

// Drop ends the held calls without serving them, closing each one's
// connection with no answer (a request lost in a partition: the
// simulator never sees it), and ends the hold for later calls.
func (h *Held) Drop() { h.end(true) }

func (h *Held) end(drop bool) {
	h.f.mu.Lock()
	if h.f.holds[h.method] == h {
		delete(h.f.holds, h.method)
	}
	h.f.mu.Unlock()
	h.doneOnce.Do(func() {
		h.dropped.Store(drop)
		close(h.done)
	})
}

// wait holds a call of method while a hold is on it, and reports whether
// to serve it: false when the hold was dropped or the caller went away
// while held.
func (f *Faults) wait(ctx context.Context, method string) bool {
	f.mu.Lock()
	h := f.holds[method]
	f.mu.Unlock()
	if h == nil {
		return true
	}
	h.count.Add(1)
	h.caughtOnce.Do(func() { close(h.caught) })
	select {
	case <-h.done:
		return !h.dropped.Load()
	case <-ctx.Done():
		return false
	}
}
