package vmprovider

import (
	"context"
)

// preDelete calls fn for vm, whose preparation p is kept at key, and
// records what it returned, unless the Set stopped it meanwhile.
func (s *Set) preDelete(ctx context.Context, fn func(context.Context, VM) error, vm VM, key string, p *preparation) {
	err := fn(ctx, vm)
	h := &s.hooks
	h.mu.Lock()
	defer h.mu.Unlock()
	if p.stopped || h.preparing[key] != p {
		return
	}
	if err != nil {
		p.err = err
		return
	}
	p.held = false
}

// launchGate calls fn for vm, whose gate g is kept at key, and records
// what it returned, unless the Set stopped it meanwhile.
func (s *Set) launchGate(ctx context.Context, fn func(context.Context, VM) error, vm VM, key string, g *gate) {
	err := fn(ctx, vm)
	h := &s.hooks
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gates[key] != g {
		return
	}
	g.running = false
	g.cancel()
	if err != nil {
		g.err = err
		return
	}
	g.passed = true
}
