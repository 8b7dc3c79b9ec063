package vmprovider

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/execute"
)

// Actuator lets execute.Plan apply a replicaset.Plan straight to VMs: it
// creates VMs from Template under the replica's name and deletes them with
// Template.Owner's mark. With Zones it places each VM in its zone
// (execute.ZonedActuator).
type Actuator struct {
	// Provider does the work.
	Provider Provider
	// Template is the spec every new VM gets; its Name is replaced by the
	// replica's name.
	Template Spec
	// Zones maps each zone a plan may name to where its VMs go; a zone's
	// non-empty placement fields override the Template's.
	Zones map[string]Placement
}

var _ execute.ZonedActuator = Actuator{}

// Create creates the VM called name. A template's cloud-init metadata is
// personalized with the name as instance-id and local-hostname, unless it
// gives them (CloudInit.Personalized).
func (a Actuator) Create(ctx context.Context, name string) error {
	s := a.Template
	s.Name = name
	if s.CloudInit != nil {
		ci, err := s.CloudInit.Personalized(name, name)
		if err != nil {
			return fmt.Errorf("VM %q: %w", name, err)
		}
		s.CloudInit = &ci
	}
	_, err := a.Provider.Create(ctx, s)
	return err
}

// CreateIn creates the VM called name in zone: with the zone's placement
// over the Template's, and the zone recorded on the VM (VM.Zone). A zone
// Zones does not hold is an error wrapping ErrInvalidSpec.
func (a Actuator) CreateIn(ctx context.Context, name, zone string) error {
	pl, ok := a.Zones[zone]
	if !ok {
		return fmt.Errorf("VM %q: no placement for zone %q: %w", name, zone, ErrInvalidSpec)
	}
	t := a
	t.Template.Zone = zone
	t.Template.Placement = pl.over(a.Template.Placement)
	return t.Create(ctx, name)
}

// over returns p with base's fields where p's are empty.
func (p Placement) over(base Placement) Placement {
	if p.ResourcePool == "" {
		p.ResourcePool = base.ResourcePool
	}
	if p.Folder == "" {
		p.Folder = base.Folder
	}
	if p.Datastore == "" {
		p.Datastore = base.Datastore
	}
	return p
}

// Delete destroys r's VM.
func (a Actuator) Delete(ctx context.Context, r replicaset.Replica) error {
	return a.Provider.Delete(ctx, r.Name, a.Template.Owner.UID)
}

// Set keeps a number of VMs of one owner in a provider, with no Kubernetes
// object involved: each Scale call is one pass of list, plan, act.
//
// A Set is safe for concurrent use: Scale calls take turns, each listing
// what the one before it left, so calls made at once never overshoot. A Set
// must not be copied after its first Scale.
type Set struct {
	// Provider holds the VMs.
	Provider Provider
	// Template is the spec of every VM; Template.Owner identifies the set.
	Template Spec
	// Policy chooses victims on scale-down.
	Policy replicaset.Ranker
	// Spec holds the planner's options for every pass: MaxPerPass,
	// ReplaceDeleting, MinReady, Seed, and Zones and Rebalance to spread
	// the VMs over failure domains (see replicaset.Spec). Its Desired is
	// ignored; Scale's argument is the count. Its ZoneBackoff is ignored
	// too: the Set keeps the backoff itself (ZoneBackoff below).
	Spec replicaset.Spec
	// Zones maps every zone Spec.Zones lists to where its VMs go
	// (Actuator.Zones); Scale refuses a listed zone without one.
	Zones map[string]Placement
	// ZoneBackoff is how long a zone in which a create failed is avoided
	// by later passes, while they place its VMs in the other zones; zero
	// means DefaultZoneBackoff.
	ZoneBackoff time.Duration
	// Names makes new VM names: naming.Random, or naming.Indexed for
	// ordinal names. A Namer that also has Indexed's Ordinal method gives
	// each VM its ordinal, so deletionpolicy.HighestOrdinal ranks by it.
	// Nil, or a naming.Random without a Source, draws from a source of the
	// Set's own, seeded from the clock at the first Scale.
	Names naming.Namer
	// Options tune the executor.
	Options execute.Options
	// Readiness says when a VM counts as ready (for Spec.MinReady and the
	// plan's available count); empty means ReadyWhenPoweredOn.
	Readiness Readiness

	mu      sync.Mutex
	source  rand.Source
	tracker Tracker
	backoff replicaset.Backoff
}

// DefaultZoneBackoff is how long a Set avoids a zone in which a create
// failed, when Set.ZoneBackoff is zero.
const DefaultZoneBackoff = replicaset.DefaultZoneBackoff

// ordinals is what Names offers when it can read a name's ordinal back.
type ordinals interface {
	Ordinal(name string) (int, bool)
}

// Scale makes one pass toward desired VMs at now, and returns the plan it
// carried out and what happened. The error is a listing or planning error,
// or the executor's joined errors.
func (s *Set) Scale(ctx context.Context, desired int, now time.Time) (replicaset.Plan, execute.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	vms, current, err := s.observe(ctx, now)
	if err != nil {
		return replicaset.Plan{}, execute.Result{}, err
	}
	if o, ok := s.Names.(ordinals); ok {
		for i := range current {
			current[i].Ordinal, current[i].HasOrdinal = o.Ordinal(current[i].Name)
		}
	}
	spec := s.Spec
	spec.Desired = desired
	for _, z := range spec.Zones {
		if _, ok := s.Zones[z]; !ok {
			return replicaset.Plan{}, execute.Result{}, fmt.Errorf("zone %q has no placement in Set.Zones: %w", z, ErrInvalidSpec)
		}
	}
	spec.ZoneBackoff = s.backoff.Active(now)
	plan, err := replicaset.Compute(spec, current, s.Policy, now)
	if err != nil {
		return plan, execute.Result{}, err
	}
	existing := make([]string, len(vms))
	for i, vm := range vms {
		existing[i] = vm.Name
	}
	names, err := s.namer(now).Names(plan.Create, existing)
	if err != nil {
		return plan, execute.Result{}, err
	}
	res := execute.Plan(ctx, Actuator{Provider: s.Provider, Template: s.Template, Zones: s.Zones}, plan, names, s.Options)
	s.backoff.Fail(res.FailedZones, now.Add(cmp.Or(s.ZoneBackoff, DefaultZoneBackoff)))
	return plan, res, res.Err
}

// Status lists the Set's VMs and returns their status at now (live,
// ready, and available for Spec.MinReady) under the Set's Readiness, with
// the ready times Scale uses.
func (s *Set) Status(ctx context.Context, now time.Time) (replicaset.Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, current, err := s.observe(ctx, now)
	if err != nil {
		return replicaset.Status{}, err
	}
	return replicaset.Summarize(current, s.Spec.MinReady, now), nil
}

// ZoneStatus lists the Set's VMs and returns their status per zone at now
// (replicaset.SummarizeZones): the zones of Spec.Zones in their order, then
// any other zone a VM is in, such as one no longer listed.
func (s *Set) ZoneStatus(ctx context.Context, now time.Time) ([]replicaset.ZoneStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, current, err := s.observe(ctx, now)
	if err != nil {
		return nil, err
	}
	return replicaset.SummarizeZones(current, s.Spec.Zones, s.Spec.MinReady, now), nil
}

// observe lists the Set's VMs and describes them for the planner. The
// Set's lock is held.
func (s *Set) observe(ctx context.Context, now time.Time) ([]VM, []replicaset.Replica, error) {
	if err := s.Readiness.Validate(); err != nil {
		return nil, nil, err
	}
	vms, err := s.Provider.List(ctx, s.Template.Owner.UID)
	if err != nil {
		return nil, nil, fmt.Errorf("list VMs of %q: %w", s.Template.Owner.UID, err)
	}
	s.tracker.Readiness = s.Readiness
	return vms, s.tracker.Replicas(vms, s.Template.PowerOn, now), nil
}

// namer is Names, with the Set's own source where it needs one.
func (s *Set) namer(now time.Time) naming.Namer {
	own := func() rand.Source {
		if s.source == nil {
			s.source = rand.NewPCG(uint64(now.UnixNano()), uint64(time.Now().UnixNano()))
		}
		return s.source
	}
	switch g := s.Names.(type) {
	case nil:
		return naming.Random{Source: own()}
	case naming.Random:
		if g.Source == nil {
			g.Source = own()
		}
		return g
	}
	return s.Names
}
