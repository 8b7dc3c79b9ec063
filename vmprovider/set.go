package vmprovider

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/execute"
)

// Actuator lets execute.Plan apply a replicaset.Plan straight to VMs: it
// creates VMs from Template under the replica's name and deletes them with
// Template.Owner's mark.
type Actuator struct {
	// Provider does the work.
	Provider Provider
	// Template is the spec every new VM gets; its Name is replaced by the
	// replica's name.
	Template Spec
}

var _ execute.Actuator = Actuator{}

// Create creates the VM called name.
func (a Actuator) Create(ctx context.Context, name string) error {
	s := a.Template
	s.Name = name
	_, err := a.Provider.Create(ctx, s)
	return err
}

// Delete destroys r's VM.
func (a Actuator) Delete(ctx context.Context, r replicaset.Replica) error {
	return a.Provider.Delete(ctx, r.Name, a.Template.Owner.UID)
}

// Replicas describes VMs as the planner sees them. A VM that is powered on
// is running and ready since it booted; one that is off or suspended while
// wantOn is pending (it is not yet what was asked for), and otherwise
// running but not ready.
func Replicas(vms []VM, wantOn bool) []replicaset.Replica {
	out := make([]replicaset.Replica, len(vms))
	for i, vm := range vms {
		r := replicaset.Replica{Name: vm.Name, UID: vm.InstanceUUID, CreatedAt: vm.CreatedAt}
		switch {
		case vm.Power == PoweredOn:
			r.Phase, r.Ready, r.ReadySince = replicaset.PhaseRunning, true, vm.BootedAt
		case wantOn:
			r.Phase = replicaset.PhasePending
		default:
			r.Phase = replicaset.PhaseRunning
		}
		out[i] = r
	}
	return out
}

// Set keeps a number of VMs of one owner in a provider, with no Kubernetes
// object involved: each Scale call is one pass of list, plan, act.
type Set struct {
	// Provider holds the VMs.
	Provider Provider
	// Template is the spec of every VM; Template.Owner identifies the set.
	Template Spec
	// Policy chooses victims on scale-down.
	Policy replicaset.Ranker
	// Names makes new VM names; its Base is usually the set's name.
	Names naming.Random
	// Options tune the executor.
	Options execute.Options
}

// Scale makes one pass toward desired VMs at now, and returns the plan it
// carried out and what happened. The error is a listing or planning error,
// or the executor's joined errors.
func (s *Set) Scale(ctx context.Context, desired int, now time.Time) (replicaset.Plan, execute.Result, error) {
	vms, err := s.Provider.List(ctx, s.Template.Owner.UID)
	if err != nil {
		return replicaset.Plan{}, execute.Result{}, fmt.Errorf("list VMs of %q: %w", s.Template.Owner.UID, err)
	}
	current := Replicas(vms, s.Template.PowerOn)
	plan, err := replicaset.Compute(replicaset.Spec{Desired: desired}, current, s.Policy, now)
	if err != nil {
		return plan, execute.Result{}, err
	}
	existing := make([]string, len(vms))
	for i, vm := range vms {
		existing[i] = vm.Name
	}
	g := s.Names
	if g.Source == nil {
		g.Source = rand.NewPCG(uint64(now.UnixNano()), uint64(len(vms)))
	}
	names, err := g.Names(plan.Create, existing)
	if err != nil {
		return plan, execute.Result{}, err
	}
	res := execute.Plan(ctx, Actuator{Provider: s.Provider, Template: s.Template}, plan, names, s.Options)
	return plan, res, res.Err
}
