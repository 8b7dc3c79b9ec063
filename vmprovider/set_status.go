package vmprovider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/replicakit/replicakit/replicaset"
)

// Status lists the Set's VMs and returns their status at now (live,
// ready, and available for Spec.MinReady) under the Set's Readiness, with
// the ready times Scale uses. VMs on endpoints that did not answer (and
// VMs whose create those endpoints did not answer) count as live, unknown
// (Unknown) and not ready, and the status comes with the
// *UnreachableError; VMs the platform lists but cannot read
// (VM.Unreachable) count the same, with no error; VMs that share a
// name come with an error wrapping ErrDuplicateName. When the last Scale
// refused to plan, the status comes with its error, wrapping ErrRefused,
// until a Scale carries out a plan again: Scale refuses, and Status says
// why, without planning itself. With Lifecycle, VMs preparing to leave
// count in Preparing (and in Replicas, Ready and Available as they are),
// and VMs whose launch gate has not passed are neither ready nor
// available.
func (s *Set) Status(ctx context.Context, now time.Time) (replicaset.Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, err := s.observe(ctx, now)
	if err != nil {
		return replicaset.Status{}, errors.Join(err, s.refusal())
	}
	return replicaset.Summarize(o.current, s.Spec.MinReady, now), errors.Join(o.err, s.refusal())
}

// ErrRefused means the last Scale of a Set listed the VMs but made no
// plan (see Set.Scale); Status, RolloutStatus and ZoneStatus return an
// error wrapping it and the cause until a Scale carries out a plan again.
var ErrRefused = errors.New("vmprovider: the last Scale made no plan")

// refusal is the error that says the last Scale refused, or nil. The
// Set's lock is held.
func (s *Set) refusal() error {
	if s.refused == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrRefused, s.refused)
}

// RolloutStatus lists the Set's VMs and returns how far the rollout
// toward its Template stands at now, for desired VMs
// (replicaset.SummarizeRollout); without a Rollout every VM counts as
// updated. With endpoints that did not answer, names held twice and a
// refusal of the last Scale, as Status.
func (s *Set) RolloutStatus(ctx context.Context, desired int, now time.Time) (replicaset.RolloutStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, err := s.observe(ctx, now)
	if err != nil {
		return replicaset.RolloutStatus{}, errors.Join(err, s.refusal())
	}
	spec := s.spec(desired, now)
	s.assume(o.current, spec.Revision)
	return replicaset.SummarizeRollout(spec, o.current, now), errors.Join(o.err, s.refusal())
}

// ZoneStatus lists the Set's VMs and returns their status per zone at now
// (replicaset.SummarizeZones): the zones of Spec.Zones in their order, then
// any other zone a VM is in, such as one no longer listed; each says
// whether its endpoint did not answer (Unreachable) and until when creates
// avoid it after a failed one (BackoffUntil). With endpoints
// that did not answer, names held twice and a refusal of the last Scale,
// as Status.
func (s *Set) ZoneStatus(ctx context.Context, now time.Time) ([]replicaset.ZoneStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, err := s.observe(ctx, now)
	if err != nil {
		return nil, errors.Join(err, s.refusal())
	}
	zs := replicaset.SummarizeZones(o.current, s.Spec.Zones, s.Spec.MinReady, now)
	for i := range zs {
		z := &zs[i]
		z.Unreachable = slices.Contains(o.unreachable, z.Zone)
		for _, b := range s.history.ZoneBackoff {
			if b.Zone == z.Zone && now.Before(b.Until) {
				z.BackoffUntil = b.Until
			}
		}
	}
	return zs, errors.Join(o.err, s.refusal())
}

// observe lists the Set's VMs and describes them for the planner. The
// Set's lock is held.
func (s *Set) observe(ctx context.Context, now time.Time) (observed, error) {
	if err := s.Readiness.Validate(); err != nil {
		return observed{}, err
	}
	vms, err := s.Provider.List(ctx, s.Template.Owner.UID)
	var ue *UnreachableError
	if err != nil && !errors.As(err, &ue) {
		return observed{}, fmt.Errorf("list VMs of %q: %w", s.Template.Owner.UID, err)
	}
	vms, firstUnknown := s.remember(vms, ue, now)
	s.tracker.readiness = s.Readiness
	o := observed{vms: vms, current: s.tracker.replicas(vms, s.Template.PowerOn, now)}
	o.unreachable = s.setAside(o.current, vms, firstUnknown, ue)
	s.failingUnready(vms, o.current)
	s.describeLifecycle(vms, o.current)
	if ue != nil {
		o.err = fmt.Errorf("list VMs of %q: %w", s.Template.Owner.UID, ue)
	}
	dups, dupErr := identify(o.vms, o.current)
	o.dups, o.err = dups, errors.Join(o.err, dupErr)
	return o, nil
}

// observed is what one List showed: the VMs (with those of endpoints that
// did not answer, as they last did, and the creates they did not answer),
// their replicas (current[i] for vms[i], with the identities identify
// gives), the zones to plan as unreachable, the names more than one VM
// holds, and the errors that say which endpoints did not answer and which
// names are held twice.
type observed struct {
	vms         []VM
	current     []replicaset.Replica
	unreachable []string
	dups        map[string]bool
	err         error
}
