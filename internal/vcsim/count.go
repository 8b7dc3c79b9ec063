package vcsim

import (
	"maps"
	"sync"
)

// callCount counts SOAP calls by method.
type callCount struct {
	mu    sync.Mutex
	calls map[string]int64
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
