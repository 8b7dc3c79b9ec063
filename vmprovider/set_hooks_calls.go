package vmprovider

import (
	"context"
	"time"
)

// prepare records that vm begins to prepare at now, to leave or, with
// update set, for an in-place update to the Template, and calls PreDelete
// for it with a ctx of base's values, marked as PreparingUpdate says for
// an update; its launch gate stops, and leaving notes it. The Set's lock
// and h.mu are held.
func (s *Set) prepare(vm VM, base context.Context, leaving map[string]bool, update bool, now time.Time) {
	h := &s.hooks
	key := healthKey(vm)
	leaving[key] = true
	h.stopGate(key)
	p := &preparation{name: vm.Name, since: now, update: update, from: vm.Revision}
	h.preparing[key] = p
	if s.Lifecycle.PreDelete == nil {
		return
	}
	if update {
		base = context.WithValue(base, preparingUpdateKey{}, s.resizeTo(TemplateRevision(s.Template), true))
	}
	var cctx context.Context
	cctx, p.cancel = context.WithCancel(base)
	p.held, p.called = true, true
	go s.preDelete(cctx, s.Lifecycle.PreDelete, vm, key, p)
}

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
