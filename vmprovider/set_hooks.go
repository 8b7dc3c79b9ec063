package vmprovider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/replicakit/replicakit/replicaset"
)

// Lifecycle gives a Set lifecycle hooks as Go callbacks (Set.Lifecycle),
// for programs that keep VMs without Kubernetes: a VM chosen to leave
// prepares first, and is deleted only once PreDelete released it or its
// timeout passed; a new VM counts as ready only once LaunchGate let it.
// The planner's rules are replicaset's (its Lifecycle hooks section);
// this type says what the Set does around them.
//
// # Pre-delete
//
// A VM that a pass chooses to delete, by any rule (a scale-down,
// Scale(0), a rollout, remediation, rebalancing), is not deleted but
// prepares to leave (replicaset.Plan.Prepare): the Set records since when
// (the pass's now) and calls PreDelete for it once, in a goroutine of its
// own, so Scale never waits on it. PreDelete returning nil releases the
// VM: the next Scale deletes it. Until then the VM stays, counted as
// leaving: no later pass chooses it again, none counts it as available
// toward a rollout's bounds, and Status counts it in Preparing (and in
// Ready and Available as its readiness says, for it may still serve while
// it drains). The plan's holds name the hook that holds it "PreDelete"
// (replicaset.HoldPreDelete), and Plan.Lifecycle.NextCheck says when the
// first timeout falls: call Scale then.
//
// Timeout runs from the pass that chose the VM, and is measured by the
// passes' times (Scale's now), not by a timer: the first pass at or after
// it deletes the VM anyway, and cancels the ctx PreDelete was given
// first; with Abandon it keeps the VM, held
// (replicaset.HoldHookAbandoned), until PreDelete returns nil, and
// leaves the ctx as it is, for a drain that is slow but not dead may still
// finish. A scale-up meanwhile takes the VM back (Plan.Cancel), before it
// creates any: the Set forgets the preparation and cancels PreDelete's
// ctx. So the ctx is cancelled when the VM is taken back, when its
// timeout passes without Abandon, when a pass finds the VM gone
// (deleted by someone else) and when a pass finds Set.Lifecycle nil; the
// Set has nothing else to stop, and a program that exits leaves the
// callbacks where they are (a restarted program calls them again,
// below). PreDelete must honour ctx, and must be safe to call for several
// VMs at once. The ctx carries the values of the ctx of the Scale that
// called it, not its cancellation.
//
// An error from PreDelete leaves the VM held until its timeout, when
// Abandon decides: PreDelete is not called again for it. The error
// is reported once, in the error of the next Scale, wrapping
// ErrHookFailed; what PreDelete returns after its ctx was cancelled is
// not reported. A nil PreDelete releases every VM at once: it prepares in
// one pass and is deleted by the next.
//
// A VM that never ran (powered off while the Template powers VMs on: a
// clone the platform has not started) is deleted without preparing, as
// replicaset states: nothing runs on it to drain.
//
// # Launch gate
//
// With LaunchGate, every VM is launch-gated until LaunchGate returned nil
// for it: neither ready nor available, whatever its Readiness says, and,
// with Spec.Remediation, unhealthy once its start-up window passes
// (replicaset.Replica.LaunchGated). The first Scale that finds a VM ready
// (by the Set's Readiness and health check), not preparing to leave and
// on an endpoint that answers, calls LaunchGate for it in a goroutine of
// its own; a VM the Set creates is so gated from the pass after the one
// that made it. An error leaves the VM gated, and is reported once, in
// the error of the next Scale, wrapping ErrHookFailed; that Scale calls
// LaunchGate again. The gate's ctx is cancelled when the VM begins to
// prepare to leave, when a pass finds it gone and when a pass finds
// Set.Lifecycle nil.
// A VM taken back after PreDelete was called for it passes the gate again
// (LaunchGate is called anew): PreDelete may have undone what the gate
// did, such as its place in a load balancer. LaunchGate must be safe to
// call again for a VM (a restarted program calls it for every VM).
//
// # In-place updates
//
// Under a Set.Rollout that updates in place, a VM whose update needs a
// power cycle prepares first too (replicaset.Plan.PrepareUpdate):
// PreDelete is called for it as above, with a ctx for which
// PreparingUpdate reports true and the resize to come, so that it drains
// the VM without taking it out of service for good. Once PreDelete
// released it (or its timeout passed without Abandon; Abandon holds
// it as above), the next Scale stops, changes and starts the VM, ends its
// preparation, and has it pass LaunchGate again; the update may be to a
// Template set since, if that too changes only the VM's size. Timeout,
// errors and ctx are as for a deletion; a rollback, a pause or a change
// that no longer fits takes the VM back (its ctx cancelled), and a
// scale-down may delete it instead, once released. A live update calls
// no callback. Any power cycle, drained or not, has the VM pass
// LaunchGate again, as does a preparation whose VM shows its update made
// (by a pass whose answer was lost).
//
// # Restarts
//
// The Set keeps the preparations and the gates passed in memory, by VM
// (its endpoint and instance UUID), and forgets each once the VM is gone.
// A restarted program (or a new Set) starts with none: its first pass
// chooses the VMs to leave anew (not necessarily the same ones), calls
// PreDelete for them again, and runs their timeouts from that pass; VMs
// whose PreDelete ran before and that are not chosen again stay. So no VM
// is deleted earlier than its hooks asked, only later. Every VM is
// launch-gated again until LaunchGate, called again, returns nil for it:
// a VM whose gate had not passed does not count as ready too early, and
// one that stayed after its PreDelete ran is let in again.
type Lifecycle struct {
	// PreDelete is called once for each VM as it begins to prepare to
	// leave; it returns nil to release the VM, which the next Scale then
	// deletes. Nil releases every VM at once.
	PreDelete func(ctx context.Context, vm VM) error
	// LaunchGate, when set, is called for each VM once it is ready; until
	// it has returned nil, the VM is launch-gated: not ready, not
	// available.
	LaunchGate func(ctx context.Context, vm VM) error
	// Lifecycle holds how long PreDelete may hold a VM, from the pass that
	// chose it (Timeout; zero means replicaset.DefaultHookTimeout, and it
	// must not be negative), and what its timeout means: the VM is
	// deleted anyway, or, with Abandon, kept until PreDelete releases it
	// or a scale-up takes it back.
	replicaset.Lifecycle
}

// ErrHookFailed means a lifecycle callback of a Set (Lifecycle.PreDelete
// or Lifecycle.LaunchGate) returned an error; Scale reports each such
// error once, wrapping it and the callback's error.
var ErrHookFailed = errors.New("vmprovider: a lifecycle hook failed")

// preDeleteHook is the name the planner's view gives PreDelete while it
// holds a VM (replicaset.Preparing.Hooks), as the holds show it.
const preDeleteHook = "PreDelete"

// planner returns the planner's Lifecycle for l; nil for nil.
func (l *Lifecycle) planner() *replicaset.Lifecycle {
	if l == nil {
		return nil
	}
	return &l.Lifecycle
}

// hookState is what a Set keeps of its lifecycle hooks (Set.Lifecycle)
// between passes, in memory, by healthKey. Its own lock guards it, for
// the callbacks' goroutines write their results into it while Scale may
// hold the Set's.
type hookState struct {
	mu        sync.Mutex
	preparing map[string]*preparation
	gates     map[string]*gate
}

// preparation is a VM's preparation to leave.
type preparation struct {
	name  string    // the VM's name, for errors
	since time.Time // the pass that chose it
	held  bool      // PreDelete has not yet returned nil
	// update says it prepares for an in-place update that powers the VM
	// off (replicaset.Plan.PrepareUpdate), not to leave, from revision
	// from: once the VM records another, the update was made.
	update bool
	from   string
	// called reports that PreDelete was called for it (a nil PreDelete
	// releases at once, and undoes nothing a gate did).
	called bool
	err    error // what PreDelete returned, not yet reported
	cancel context.CancelFunc
	// stopped reports that the Set cancelled PreDelete's ctx: what it
	// returns no longer matters.
	stopped bool
}

// gate is a VM's launch gate.
type gate struct {
	name    string
	passed  bool
	running bool
	err     error // what LaunchGate returned, not yet reported
	cancel  context.CancelFunc
}

// stop cancels p's callback, whose result is then dropped.
func (p *preparation) stop() {
	if p.cancel != nil {
		p.cancel()
	}
	p.stopped = true
}

// stopGate cancels the launch gate of the VM at key, if it runs; what it
// returns is then dropped, and a later pass may call it again. h.mu is
// held.
func (h *hookState) stopGate(key string) {
	if g := h.gates[key]; g != nil && g.running {
		g.cancel()
		h.gates[key] = &gate{name: g.name}
	}
}

// describeLifecycle gives each of current, the replicas of vms, what the
// Set keeps of its lifecycle: Preparing while it prepares to leave (with
// PreDelete among its hooks until it released it), and LaunchGated until
// its launch gate passed. The Set's lock is held.
func (s *Set) describeLifecycle(vms []VM, current []replicaset.Replica) {
	lc := s.Lifecycle
	if lc == nil {
		return
	}
	h := &s.hooks
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range current {
		key := healthKey(vms[i])
		if p := h.preparing[key]; p != nil && p.update && vms[i].Revision != p.from {
			// Its update shows (made by a pass whose answer was lost): it
			// is over, and the VM passes its launch gate again.
			p.stop()
			delete(h.preparing, key)
			h.stopGate(key)
			delete(h.gates, key)
		}
		if p := h.preparing[key]; p != nil {
			current[i].Preparing = &replicaset.Preparing{Since: p.since, Update: p.update}
			if p.held {
				current[i].Preparing.Hooks = []string{preDeleteHook}
			}
		}
		if lc.LaunchGate != nil {
			g := h.gates[key]
			current[i].LaunchGated = g == nil || !g.passed
		}
	}
}

// hookErrors returns the errors the callbacks returned since the last
// pass (each once, wrapping ErrHookFailed), and forgets the VMs no longer
// in vms, cancelling their callbacks; without a Lifecycle it forgets
// everything. The Set's lock is held.
func (s *Set) hookErrors(vms []VM) error {
	h := &s.hooks
	h.mu.Lock()
	defer h.mu.Unlock()
	lc := s.Lifecycle
	if lc == nil {
		for _, p := range h.preparing {
			p.stop()
		}
		for key := range h.gates {
			h.stopGate(key)
		}
		h.preparing, h.gates = nil, nil
		return nil
	}
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(h.preparing)) {
		if p := h.preparing[key]; p.err != nil {
			_, deadline := lc.Hold(replicaset.Preparing{Since: p.since}, p.since)
			then := "Continue"
			if lc.Abandon {
				then = "Abandon"
			}
			errs = append(errs, fmt.Errorf("PreDelete of VM %q returned an error, so the VM stays held until its timeout at %s (then %s): %w: %w",
				p.name, deadline.UTC().Format(time.RFC3339), then, ErrHookFailed, p.err))
			p.err = nil
		}
	}
	for _, key := range slices.Sorted(maps.Keys(h.gates)) {
		if g := h.gates[key]; g.err != nil {
			errs = append(errs, fmt.Errorf("LaunchGate of VM %q returned an error, so the VM stays launch-gated and the next Scale calls it again: %w: %w",
				g.name, ErrHookFailed, g.err))
			g.err = nil
		}
	}
	listed := make(map[string]bool, len(vms))
	for _, vm := range vms {
		listed[healthKey(vm)] = true
	}
	for key, p := range h.preparing {
		if !listed[key] {
			p.stop()
			delete(h.preparing, key)
		}
	}
	for key := range h.gates {
		if !listed[key] {
			h.stopGate(key)
			delete(h.gates, key)
		}
	}
	return errors.Join(errs...)
}

// runHooks carries out the lifecycle side of plan, planned at now for
// current (the replicas of vms; byName maps the planner's names to the
// VMs), before its deletes: it forgets the preparations the plan takes
// back and cancels their PreDelete, cancels the callbacks of the VMs it
// deletes, records the preparations it begins and calls PreDelete for
// each, and calls LaunchGate for the ready VMs whose gate is still
// closed. ctx gives the callbacks' contexts their values. The Set's lock
// is held.
func (s *Set) runHooks(ctx context.Context, plan replicaset.Plan, vms []VM, current []replicaset.Replica, byName map[string]VM, now time.Time) {
	lc := s.Lifecycle
	if lc == nil {
		return
	}
	h := &s.hooks
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.preparing == nil {
		h.preparing, h.gates = map[string]*preparation{}, map[string]*gate{}
	}
	base := context.WithoutCancel(ctx)
	for _, r := range plan.Cancel {
		key := healthKey(byName[r.Name])
		if p := h.preparing[key]; p != nil {
			p.stop()
			delete(h.preparing, key)
			if p.called {
				h.stopGate(key)
				delete(h.gates, key) // it passes the gate again
				// ...and is judged by its start-up window from now, as
				// a VM launched anew: not by the one it began with.
				if hl, ok := s.heal.health[key]; ok && !hl.Started.IsZero() {
					hl.Started = now
					s.heal.health[key] = hl
				}
			}
		}
	}
	leaving := map[string]bool{}
	for _, r := range plan.Delete {
		key := healthKey(byName[r.Name])
		leaving[key] = true
		if p := h.preparing[key]; p != nil {
			p.stop()
		}
		h.stopGate(key)
	}
	for _, r := range plan.Prepare {
		s.prepare(byName[r.Name], base, leaving, false, now)
	}
	s.hooksForUpdates(plan, byName, base, leaving, now)
	if lc.LaunchGate == nil {
		return
	}
	for i := range current {
		r, vm := &current[i], vms[i]
		key := healthKey(vm)
		if !r.LaunchGated || !r.Ready || r.Phase != replicaset.PhaseRunning || r.Preparing != nil || leaving[key] {
			continue
		}
		g := h.gates[key]
		if g == nil {
			g = &gate{name: vm.Name}
			h.gates[key] = g
		}
		if g.running || g.passed {
			continue
		}
		var cctx context.Context
		cctx, g.cancel = context.WithCancel(base)
		g.running = true
		go s.launchGate(cctx, lc.LaunchGate, vm, key, g)
	}
}
