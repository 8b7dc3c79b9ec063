package execute

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/replicakit/replicakit/replicaset"
)

// Actuator performs single operations on the platform that holds one
// replica set's replicas. Both methods must be idempotent: creating a name
// that already exists as this set's replica, or deleting a replica that is
// already gone, succeeds.
type Actuator interface {
	// Create creates a replica with the given name.
	Create(ctx context.Context, name string) error
	// Delete deletes the given replica.
	Delete(ctx context.Context, r replicaset.Replica) error
}

// ZonedActuator is an Actuator that can place a new replica in a zone. Plan
// needs one to carry out a plan with zones (replicaset.Plan.CreateZones).
type ZonedActuator interface {
	Actuator
	// CreateIn creates a replica with the given name in the given zone.
	// Like Create, it must be idempotent.
	CreateIn(ctx context.Context, name, zone string) error
}

// Operation names used in OpError.
const (
	OpCreate = "create"
	OpDelete = "delete"
)

// ErrNameCount means the names (or the plan's zones) given do not match the
// plan's Create count; nothing was done.
var ErrNameCount = errors.New("execute: names do not match the plan")

// ErrNoZones means the plan places creates in zones but the Actuator is
// not a ZonedActuator; nothing was done.
var ErrNoZones = errors.New("execute: the plan has zones but the actuator cannot place by zone")

// OpError records a failed operation on one replica, like os.PathError.
type OpError struct {
	// Op is OpCreate or OpDelete.
	Op string
	// Name is the replica's name.
	Name string
	// Zone is the zone a create was for; empty without zones and for
	// deletes.
	Zone string
	// Err is what the actuator returned.
	Err error
}

// Error returns "op name: err", or "op name in zone z: err" for a
// create in a zone.
func (e *OpError) Error() string {
	if e.Zone != "" {
		return e.Op + " " + e.Name + " in zone " + e.Zone + ": " + e.Err.Error()
	}
	return e.Op + " " + e.Name + ": " + e.Err.Error()
}

// Unwrap returns the actuator's error.
func (e *OpError) Unwrap() error { return e.Err }

// Options tune how a plan is carried out. The zero value is ready to use.
type Options struct {
	// InitialBatch is how many creates may start before any has
	// succeeded; each success lets two more start, so the
	// allowance doubles per round trip like the Kubernetes ReplicaSet
	// controller's batches.
	// Zero means 1, as in Kubernetes.
	InitialBatch int
	// MaxInFlight bounds how many operations run at once. Zero means no
	// bound beyond the slow-start allowance for creates and the plan's
	// length for deletes.
	MaxInFlight int
}

// Result is what carrying out a plan did.
type Result struct {
	// Created lists the names whose create succeeded, in the order given.
	Created []string
	// Deleted lists the names whose delete succeeded, in plan order.
	Deleted []string
	// Skipped lists the names of operations never attempted: creates not
	// started once a create had failed, and anything left when the
	// context ended.
	Skipped []string
	// FailedZones lists, for a plan with zones, the zones in which a
	// create failed, each once, in plan order: what a caller backs off
	// (replicaset.History.After).
	FailedZones []string
	// Err joins every failure, each an *OpError (and the context's error if
	// it ended before everything was started); it is nil when every
	// operation succeeded.
	Err error
}

// Plan carries out p against a: it creates len(names) replicas with the given
// names (which must number p.Create) and deletes p.Delete. It carries out
// nothing else of p: a caller with Spec.Lifecycle (or that records
// Replica.Preparing), Remediation or an in-place Strategy.Method carries
// out p.Prepare, p.Cancel, p.Restart,
// p.Update and p.PrepareUpdate itself (vmprovider.Set and the kube
// binding do). When p places
// creates in zones, a must be a ZonedActuator: names[i] is created in
// p.CreateZones[i], and Result.FailedZones lists the zones whose creates
// failed.
//
// Creates start in order under a slow-start allowance: InitialBatch may
// start at once, and each success lets two more start, so that by the time
// k creates have succeeded at most InitialBatch+2k have started: the bound
// of the Kubernetes ReplicaSet controller's batches,
// without their barrier, since a slow create does not hold back the next
// ones. Once a create has returned a failure no further create starts
// (those already in flight finish, and their successes may have let more
// start before the failure came back), so a platform that refuses
// everything costs one call, not p.Create calls. Deletes are
// started in plan order and all attempted, since each removes excess on its
// own. When ctx ends, nothing more is started. Every failure is reported in
// Result.Err.
func Plan(ctx context.Context, a Actuator, p replicaset.Plan, names []string, opts Options) Result {
	if len(names) != p.Create {
		return Result{Err: fmt.Errorf("plan creates %d replicas, %d names given: %w", p.Create, len(names), ErrNameCount)}
	}
	create := func(ctx context.Context, i int) error { return a.Create(ctx, names[i]) }
	if len(p.CreateZones) > 0 {
		if len(p.CreateZones) != p.Create {
			return Result{Err: fmt.Errorf("plan creates %d replicas in %d zones: %w", p.Create, len(p.CreateZones), ErrNameCount)}
		}
		za, ok := a.(ZonedActuator)
		if !ok {
			return Result{Err: fmt.Errorf("%T: %w", a, ErrNoZones)}
		}
		create = func(ctx context.Context, i int) error { return za.CreateIn(ctx, names[i], p.CreateZones[i]) }
	}
	var res Result
	var errs []error
	res.record(ctx, &errs, OpCreate, names, p.CreateZones, slowStart(ctx, len(names), opts.InitialBatch, opts.MaxInFlight, create))

	victims := make([]string, len(p.Delete))
	for i := range p.Delete {
		victims[i] = p.Delete[i].Name
	}
	res.record(ctx, &errs, OpDelete, victims, nil, run(ctx, p.Delete, opts.MaxInFlight, a.Delete))

	if err := ctx.Err(); err != nil && len(res.Skipped) > 0 {
		errs = append(errs, err)
	}
	res.Err = errors.Join(errs...)
	return res
}

// errNotStarted marks an operation not started: ctx had ended, or (for
// creates) one had failed.
var errNotStarted = errors.New("not started")

// record files the outcome of one operation per name (in zones, when not
// nil), appending failures to errs. A create that failed because ctx ended
// says nothing about its zone.
func (r *Result) record(ctx context.Context, errs *[]error, op string, names, zones []string, outcomes []error) {
	for i, err := range outcomes {
		zone := ""
		if zones != nil {
			zone = zones[i]
		}
		switch {
		case err == nil && op == OpCreate:
			r.Created = append(r.Created, names[i])
		case err == nil:
			r.Deleted = append(r.Deleted, names[i])
		case errors.Is(err, errNotStarted):
			r.Skipped = append(r.Skipped, names[i])
		default:
			*errs = append(*errs, &OpError{Op: op, Name: names[i], Zone: zone, Err: err})
			if zone != "" && !slices.Contains(r.FailedZones, zone) && (ctx.Err() == nil || !errors.Is(err, ctx.Err())) {
				r.FailedZones = append(r.FailedZones, zone)
			}
		}
	}
}

// run calls op for every item, at most limit at once (no limit when limit
// is zero), starting them in order, and returns each call's error by index.
// Items not started because ctx ended get errNotStarted.
func run[T any](ctx context.Context, items []T, limit int, op func(context.Context, T) error) []error {
	errs := make([]error, len(items))
	if limit <= 0 || limit > len(items) {
		limit = len(items)
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i, it := range items {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			errs[i] = errNotStarted
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = op(ctx, it)
		})
	}
	wg.Wait()
	return errs
}

// allowance is how many creates may have been started once succeeded of
// them have succeeded: initial (1 when initial < 1) plus two per success.
// It is the bound of the Kubernetes ReplicaSet controller's batches, which
// start at initial and double, each once every create before it has
// succeeded (1, 2, 4, 8, …): after three successes at most seven creates
// have started. It lets creates start one by one as successes arrive
// rather than batch by batch.
func allowance(initial, succeeded int) int {
	return max(initial, 1) + 2*succeeded
}

// slowStart calls op for the n indices in order, starting one only while
// fewer than allowance(initial, successes so far) have
// started; after the first failure, or once ctx has ended, it starts
// nothing more, and those indices get errNotStarted. At most limit calls
// are in flight at once (no bound when limit is zero). It returns each
// index's outcome once every call it started has returned.
func slowStart(ctx context.Context, n, initial, limit int, op func(context.Context, int) error) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = errNotStarted
	}
	type outcome struct {
		i   int
		err error
	}
	done := make(chan outcome)
	started, inFlight, succeeded, failed := 0, 0, 0, false
	for {
		for !failed && started < n && started < allowance(initial, succeeded) &&
			(limit <= 0 || inFlight < limit) && ctx.Err() == nil {
			i := started
			started++
			inFlight++
			go func() { done <- outcome{i, op(ctx, i)} }()
		}
		if inFlight == 0 {
			return errs
		}
		o := <-done
		inFlight--
		errs[o.i] = o.err
		if o.err != nil {
			failed = true
		} else {
			succeeded++
		}
	}
}
