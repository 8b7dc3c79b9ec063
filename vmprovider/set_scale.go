package vmprovider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/execute"
)

// Scale makes one pass toward desired VMs at now, and returns the plan it
// carried out and what happened. The error is a listing or planning error,
// or the executor's joined errors. When some endpoints of the Provider
// (Endpoints) did not answer, the pass plans around their VMs, which are
// unknown (Plan.Unknown; see "Unreachable endpoints" on Set), and the error
// holds the *UnreachableError as well; when VMs share a name, it holds an
// error wrapping ErrDuplicateName for each such name, and the pass plans
// with each of them as a replica ("Names held twice" on Set).
//
// A Scale that lists the VMs but makes no plan (a zone without a
// placement, a spec or policy the planner refuses, no free name) refuses:
// Status, RolloutStatus and ZoneStatus report its error, wrapping
// ErrRefused, until a later Scale carries out a plan.
//
// With Spec.Remediation, the pass also resets the VMs the plan restarts
// (Plan.Restart) and replaces those it replaces (Plan.Replace, in
// Plan.Delete and Plan.Create); a reset that fails is in the error, and
// its VM is due again next pass ("Self-healing" on Set).
//
// With Lifecycle, the pass calls PreDelete for the VMs that begin to
// prepare to leave (Plan.Prepare) and cancels it for those taken back
// (Plan.Cancel), deletes the VMs whose preparation is over (Plan.Delete),
// and calls LaunchGate for ready VMs whose gate is closed; the error holds
// what the callbacks returned since the last pass, each error wrapping
// ErrHookFailed ("Lifecycle hooks" on Set).
//
// With an in-place Rollout, the pass also resizes the VMs the plan
// updates in place (Plan.Update), after its creates and deletes, and,
// with Lifecycle, calls PreDelete for those that begin to prepare for a
// power cycle (Plan.PrepareUpdate); a resize that failed is in the error
// ("In-place updates" on Set).
func (s *Set) Scale(ctx context.Context, desired int, now time.Time) (replicaset.Plan, execute.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, err := s.observe(ctx, now)
	if err != nil {
		return replicaset.Plan{}, execute.Result{}, err
	}
	o.err = errors.Join(o.err, s.hookErrors(o.vms))
	vms, current := o.vms, o.current
	if o, ok := s.Names.(ordinals); ok {
		for i := range current {
			current[i].Ordinal, current[i].HasOrdinal = o.Ordinal(vms[i].Name)
		}
	}
	spec := s.spec(desired, now)
	spec.Unreachable = o.unreachable
	for _, z := range spec.Zones {
		if _, ok := s.Zones[z]; !ok {
			err := fmt.Errorf("zone %q has no placement in Set.Zones: %w", z, ErrInvalidSpec)
			s.refused = err
			return replicaset.Plan{}, execute.Result{}, errors.Join(err, o.err)
		}
	}
	if err := s.remediationErr(); err != nil {
		s.refused = err
		return replicaset.Plan{}, execute.Result{}, errors.Join(err, o.err)
	}
	markErr := s.markUnrecorded(ctx, vms, current, spec.Revision, o.unreachable)
	s.assume(current, spec.Revision)
	s.describeInPlace(vms, current, &spec)
	s.observeHealth(vms, current, now)
	plan, err := replicaset.Compute(spec, current, s.Policy, now)
	if err != nil {
		s.refused = err
		return plan, execute.Result{}, errors.Join(err, markErr, o.err)
	}
	existing := make([]string, len(vms), len(vms)+len(s.lost))
	for i, vm := range vms {
		existing[i] = vm.Name
	}
	for _, l := range s.lost {
		if !slices.Contains(existing, l.vm.Name) {
			existing = append(existing, l.vm.Name)
		}
	}
	names, err := s.namer(now).Names(plan.Create, existing)
	if err != nil {
		s.refused = err
		return plan, execute.Result{}, errors.Join(err, markErr, o.err)
	}
	s.refused = nil
	tmpl := s.Template
	tmpl.Revision = spec.Revision
	if spec.Revision != "" && s.recordsBase() {
		tmpl.BaseRevision = BaseRevision(s.Template)
	}
	rec := &recorder{Provider: s.Provider}
	rec.scoped, _ = s.Provider.(EndpointScoped)
	act := setActuator{actuator: actuator{provider: rec, template: tmpl, zones: s.Zones}, rec: rec, vms: make(map[string]VM, len(vms)), dups: o.dups}
	for i := range current {
		act.vms[current[i].Name] = vms[i]
	}
	s.runHooks(ctx, plan, vms, current, act.vms, now)
	restartErr := s.restart(ctx, plan.Restart, act.vms, o.dups, now)
	res := execute.Plan(ctx, act, plan, names, s.Options)
	updateErr := s.update(ctx, plan.Update, act.vms, spec.Revision, now)
	s.made(rec, now)
	s.history = s.history.After(s.carried(plan, res.Deleted), len(res.Created), res.FailedZones, s.ZoneBackoff, now)
	return plan, res, errors.Join(res.Err, updateErr, restartErr, markErr, o.err)
}

// spec is the planner's spec for a pass toward desired VMs at now. The
// Set's lock is held.
func (s *Set) spec(desired int, now time.Time) replicaset.Spec {
	spec := s.Spec
	spec.Desired = desired
	spec.Revision, spec.Strategy = "", replicaset.Strategy{}
	spec.Lifecycle = s.Lifecycle.planner()
	if spec.Remediation != nil {
		if rev := TemplateRevision(s.Template); rev != s.heal.revision {
			s.history.Failures, s.history.Last = 0, time.Time{}
			s.heal.revision = rev
		}
	}
	spec.History = s.history
	if s.Rollout != nil {
		spec.Revision, spec.Strategy = TemplateRevision(s.Template), *s.Rollout
	}
	return spec
}
