package vcsim

import (
	"maps"
	"sync"
	"time"
)

// callCount counts SOAP calls by method, and knows the call the gate is
// serving.
type callCount struct {
	mu    sync.Mutex
	calls map[string]int64

	serving string    // the method of the call holding the gate, "" when none
	since   time.Time // when it took the gate
}

// count records a call of method.
func (c *callCount) count(method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]int64{}
	}
	c.calls[method]++
}

// Calls returns how many calls of each SOAP method have been made so far;
// a long poll (WaitForUpdatesEx) counts once however long it waits.
func (c *callCount) Calls() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.calls)
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
