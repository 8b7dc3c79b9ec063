package vmprovider

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/replicakit/replicakit/replicaset"
)

// cannotResize is the InPlaceBlocker of a VM whose Provider cannot resize
// it (no Resizer).
const cannotResize = "the provider cannot resize VMs"

// resizeFailure is an in-place update of a VM that failed with an answer
// (the platform refused it), kept so that the next pass does not ask for
// the same update again: the method's fallback applies instead.
type resizeFailure struct {
	revision string // the revision the update was to
	// cycle says a live update was refused as needing the VM off
	// (ErrNeedsPowerCycle): a power cycle may still make it.
	cycle  bool
	reason string // the InPlaceBlocker the VM is reported with
}

// preparingUpdateKey is the key of the Resize a PreDelete's ctx carries
// when its VM prepares for an in-place update (PreparingUpdate).
type preparingUpdateKey struct{}

// PreparingUpdate reports whether ctx, given by a Set to
// Lifecycle.PreDelete, is for a VM that prepares for an in-place update
// that powers it off (replicaset.Plan.PrepareUpdate) rather than to leave,
// and returns the resize the Set then makes: the Template's size, its
// revisions and PowerCycle, as the Template stands when the preparation
// begins (a Template set meanwhile that still changes only the VM's size
// is the one the update makes). Once PreDelete released it, the VM is stopped
// (its guest shut down first), changed and started again with its name,
// instance UUID, disks and addresses, so a drain that takes it out of
// service for good (a DNS record removed, its data handed over) may only
// pause it; LaunchGate is called for it again once it is back. The VM may
// still leave instead: a scale-down that chooses it deletes it once
// PreDelete released it, and a rollback takes it back (PreDelete's ctx
// is cancelled). Any other ctx, such as that of a deletion, gives false.
func PreparingUpdate(ctx context.Context) (to Resize, ok bool) {
	to, ok = ctx.Value(preparingUpdateKey{}).(Resize)
	return to, ok
}

// resizer returns how the Set resizes vm (on its endpoint when the
// Provider is EndpointScoped, else by name) or, when it cannot, why not,
// in a phrase for replicaset.Replica.InPlaceBlocker. Over Endpoints, the
// endpoint's own Provider must be a Resizer.
func (s *Set) resizer(vm VM) (do func(context.Context, Resize) error, blocker string) {
	owner := s.Template.Owner.UID
	if e, ok := s.Provider.(*Endpoints); ok {
		ep := cmp.Or(vm.Endpoint, e.Default)
		if _, ok := e.Providers[ep].(Resizer); !ok {
			return nil, fmt.Sprintf("the provider of endpoint %q cannot resize VMs", ep)
		}
	}
	r, ok := s.Provider.(Resizer)
	if !ok {
		return nil, cannotResize
	}
	if scoped, ok := s.Provider.(EndpointScoped); ok && vm.Endpoint != "" {
		return func(ctx context.Context, to Resize) error {
			return resize(ctx, scoped.On(vm.Endpoint), vm.Name, owner, to)
		}, ""
	}
	return func(ctx context.Context, to Resize) error { return r.Resize(ctx, vm.Name, owner, to) }, ""
}

// recordsBase reports whether the Set records base revisions on its VMs
// (Spec.BaseRevision, and markUnrecorded): when its Provider can resize.
func (s *Set) recordsBase() bool {
	_, r := s.Provider.(Resizer)
	return r
}

// resizeTo is the resize that brings a VM onto the Template, whose
// revision is revision: its size and both revisions. The Set's lock is
// held.
func (s *Set) resizeTo(revision string, powerCycle bool) Resize {
	return Resize{CPUs: s.Template.CPUs, MemoryMiB: s.Template.MemoryMiB, Revision: revision,
		BaseRevision: BaseRevision(s.Template), PowerCycle: powerCycle}
}

// describeInPlace gives each of current (the replicas of vms) on a
// revision other than spec's how it could reach the Template in place
// (replicaset.Replica.InPlace and InPlaceBlocker), under an in-place
// Strategy.Method: InPlaceNone when the Provider cannot resize it, else
// InPlaceFor, overridden by a failed update to spec's revision (InPlaceNone
// with the failure, or, for a live update refused as needing the VM off,
// InPlacePowerCycle). It forgets the failures of VMs no longer listed or
// on spec's revision, of other revisions, and all of them without an
// in-place method. The Set's lock is held.
func (s *Set) describeInPlace(vms []VM, current []replicaset.Replica, spec *replicaset.Spec) {
	if spec.Revision == "" || spec.Strategy.Method == replicaset.UpdateReplace {
		s.resizeFailed = nil
		return
	}
	keep := make(map[string]resizeFailure, len(s.resizeFailed))
	for i := range current {
		r, vm := &current[i], vms[i]
		if r.Revision == spec.Revision || r.Revision == "" {
			continue
		}
		if _, blocker := s.resizer(vm); blocker != "" {
			r.InPlace, r.InPlaceBlocker = replicaset.InPlaceNone, blocker
			continue
		}
		r.InPlace, r.InPlaceBlocker = InPlaceFor(vm, s.Template)
		key := healthKey(vm)
		f, ok := s.resizeFailed[key]
		if !ok || f.revision != spec.Revision {
			continue
		}
		keep[key] = f
		switch {
		case !f.cycle:
			r.InPlace, r.InPlaceBlocker = replicaset.InPlaceNone, f.reason
		case r.InPlace == replicaset.InPlaceLive:
			r.InPlace, r.InPlaceBlocker = replicaset.InPlacePowerCycle, f.reason
		}
	}
	s.resizeFailed = keep
}

// transient reports whether err, from a resize called with ctx, says
// nothing about whether the platform would make the change: ctx ended,
// or the platform did not answer (ErrUnreachable, a network error, a
// connection closed mid-answer). Anything else is an answer.
func transient(ctx context.Context, err error) bool {
	var ne net.Error
	return ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, ErrUnreachable) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.As(err, &ne)
}

// update carries out the pass's in-place updates (replicaset.Plan.Update)
// on the VMs byName maps the planner's names to: each is resized to the
// Template's size with revision and the Template's base revision, by a
// power cycle where the plan says so, at most Options.MaxInFlight at once
// (all at once when zero). A resize that succeeded ends the VM's
// preparation (Lifecycle); a power cycle, made or tried, has the VM pass
// its launch gate again, and one made gives it the start-up window of a
// VM launched anew (Spec.Remediation). A resize the platform refused is
// kept (resizeFailed), so that the next pass reports the VM InPlaceNone,
// or InPlacePowerCycle for a live update it refused as needing the VM
// off; one that got no answer is asked for again by the next pass's plan.
// A VM the Template wants on that the resize found off, or that a failed
// power cycle may have left off, is powered on again. It returns the
// failures, joined. The Set's lock is held.
func (s *Set) update(ctx context.Context, updates []replicaset.Update, byName map[string]VM, revision string, now time.Time) error {
	if len(updates) == 0 {
		return nil
	}
	errs := make([]error, len(updates))
	started := make([]bool, len(updates))
	limit := s.Options.MaxInFlight
	if limit <= 0 || limit > len(updates) {
		limit = len(updates)
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i, u := range updates {
		vm, ok := byName[u.Replica.Name]
		resize, blocker := s.resizer(vm)
		switch {
		case !ok:
			errs[i] = fmt.Errorf("update VM %q in place: it is not listed", u.Replica.Name)
			continue
		case resize == nil:
			errs[i] = fmt.Errorf("update VM %q in place: %s: %w", vm.Name, blocker, ErrInvalidSpec)
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			errs[i] = fmt.Errorf("update VM %q in place: not started: %w", vm.Name, ctx.Err())
			continue
		}
		started[i] = true
		to := s.resizeTo(revision, u.PowerCycle)
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = resize(ctx, to)
		})
	}
	wg.Wait()
	var failed []error
	for i, u := range updates {
		vm, err := byName[u.Replica.Name], errs[i]
		if started[i] && (err == nil && vm.Power != PoweredOn || err != nil && u.PowerCycle) {
			// A resize leaves a VM off as it found it, and a failed power
			// cycle may leave it off: one the Template wants on is
			// started again (a cycle cut short by a restart, a power-on
			// that failed after the change).
			if perr := s.powerOn(ctx, vm); perr != nil {
				failed = append(failed, perr)
			}
		}
		switch {
		case err == nil:
			s.updated(vm, s.resizeTo(revision, u.PowerCycle), now)
			continue
		case !started[i]:
			failed = append(failed, err)
			continue
		case u.PowerCycle:
			s.regate(vm)
		}
		how := "live"
		if u.PowerCycle {
			how = "by a power cycle"
		}
		switch {
		case transient(ctx, err) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrNotOwned) || errors.Is(err, ErrUnreadable):
			// No answer about the change: the next pass plans it again.
		case errors.Is(err, ErrNeedsPowerCycle) && !u.PowerCycle:
			s.resizeFailure(vm, resizeFailure{revision: revision, cycle: true,
				reason: "the platform refused to make the change while the VM runs: " + err.Error()})
		default:
			s.resizeFailure(vm, resizeFailure{revision: revision, reason: "the in-place update failed: " + err.Error()})
		}
		failed = append(failed, fmt.Errorf("update VM %q in place (%s) to revision %s: %w", vm.Name, how, revision, err))
	}
	return errors.Join(failed...)
}

// powerOn powers vm on when the Template asks for VMs that run (a VM
// already on is left alone).
func (s *Set) powerOn(ctx context.Context, vm VM) error {
	if !s.Template.PowerOn {
		return nil
	}
	if err := s.Provider.SetPower(ctx, vm.Name, s.Template.Owner.UID, PoweredOn); err != nil {
		return fmt.Errorf("power VM %q on after its in-place update: %w", vm.Name, err)
	}
	return nil
}

// resizeFailure keeps f for vm. The Set's lock is held.
func (s *Set) resizeFailure(vm VM, f resizeFailure) {
	if s.resizeFailed == nil {
		s.resizeFailed = map[string]resizeFailure{}
	}
	s.resizeFailed[healthKey(vm)] = f
}

// updated records that vm was resized to to: its preparation (Lifecycle)
// is over; after a power cycle it passes its launch gate again and its
// Health starts anew at now, as a VM launched anew, keeping what it was
// before (HealthyBefore, Restarted, Skip); and what its endpoint is known
// to hold describes it. The Set's lock is held.
func (s *Set) updated(vm VM, to Resize, now time.Time) {
	key := healthKey(vm)
	delete(s.resizeFailed, key)
	if s.Lifecycle != nil {
		h := &s.hooks
		h.mu.Lock()
		if p := h.preparing[key]; p != nil {
			p.stop()
			delete(h.preparing, key)
		}
		h.mu.Unlock()
	}
	if to.PowerCycle {
		s.regate(vm)
		if hl, ok := s.heal.health[key]; ok {
			s.heal.health[key] = replicaset.Health{Started: now, HealthyBefore: hl.Healthy || hl.HealthyBefore,
				Restarted: hl.Restarted, Skip: hl.Skip}
		}
	}
	l := s.seen[vm.Endpoint]
	for i := range l {
		if l[i].Name == vm.Name {
			l[i].CPUs, l[i].MemoryMiB = cmp.Or(to.CPUs, l[i].CPUs), cmp.Or(to.MemoryMiB, l[i].MemoryMiB)
			l[i].Revision, l[i].BaseRevision = to.Revision, to.BaseRevision
		}
	}
}

// regate has vm pass its launch gate again (Lifecycle.LaunchGate), as a
// VM launched anew: a power cycle was made, or may have been. The Set's
// lock is held.
func (s *Set) regate(vm VM) {
	if s.Lifecycle == nil {
		return
	}
	h := &s.hooks
	h.mu.Lock()
	defer h.mu.Unlock()
	key := healthKey(vm)
	h.stopGate(key)
	delete(h.gates, key)
}

// hooksForUpdates carries out the lifecycle side of plan's in-place
// updates, before they are made: the VMs that begin to prepare for a power
// cycle (Plan.PrepareUpdate) prepare, with PreDelete told so
// (PreparingUpdate), and the VMs about to be power-cycled (Plan.Update)
// have their PreDelete's ctx cancelled, if it still runs (it timed out
// without Abandon), and their launch gate stopped; leaving notes both.
// The Set's lock and the hooks' are held.
func (s *Set) hooksForUpdates(plan replicaset.Plan, byName map[string]VM, base context.Context, leaving map[string]bool, now time.Time) {
	h := &s.hooks
	for _, r := range plan.PrepareUpdate {
		s.prepare(byName[r.Name], base, leaving, true, now)
	}
	for _, u := range plan.Update {
		if !u.PowerCycle {
			continue
		}
		key := healthKey(byName[u.Replica.Name])
		leaving[key] = true
		if p := h.preparing[key]; p != nil {
			p.stop()
		}
		h.stopGate(key)
	}
}
