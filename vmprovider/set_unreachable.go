package vmprovider

import (
	"context"
	"slices"
	"sync"

	"github.com/replicakit/replicakit/replicaset"
)

// unknownZonePrefix begins the zone a Set gives, for planning, an unknown
// VM that records none: the planner sets aside replicas by zone
// (replicaset.Spec.Unreachable), and no zone name has a space.
const unknownZonePrefix = "unreachable endpoint "

// remember keeps, by endpoint, the VMs of every endpoint that answered
// this List, and returns vms with, for each endpoint ue names, the VMs it
// held when it last answered: those are unknown, not gone. The Set's lock
// is held.
func (s *Set) remember(vms []VM, ue *UnreachableError) (all []VM, unknown map[string]bool) {
	if s.seen == nil {
		s.seen = map[string][]VM{}
	}
	down := func(ep string) bool { return ue != nil && slices.Contains(ue.Endpoints, ep) }
	fresh := map[string][]VM{}
	for _, vm := range vms {
		fresh[vm.Endpoint] = append(fresh[vm.Endpoint], vm)
	}
	for ep := range s.seen {
		if !down(ep) {
			delete(s.seen, ep)
		}
	}
	for ep, l := range fresh {
		s.seen[ep] = l
	}
	if ue == nil {
		return vms, nil
	}
	all = slices.Clone(vms)
	unknown = map[string]bool{}
	for _, ep := range ue.Endpoints {
		for _, vm := range s.seen[ep] {
			if !slices.ContainsFunc(vms, func(v VM) bool { return v.Name == vm.Name }) {
				all = append(all, vm)
				unknown[vm.Name] = true
			}
		}
	}
	return all, unknown
}

// setAside marks the replicas of unknown VMs as the planner should see
// them: not ready (whether they run is unknown), and in a zone, a
// synthetic one for a VM that records none. It returns the zones to plan
// as unreachable: every listed zone whose placement's endpoint ue names,
// and every zone an unknown VM is in.
func (s *Set) setAside(current []replicaset.Replica, unknown map[string]bool, ue *UnreachableError) []string {
	if ue == nil {
		return nil
	}
	var zones []string
	add := func(z string) {
		if !slices.Contains(zones, z) {
			zones = append(zones, z)
		}
	}
	for _, z := range s.Spec.Zones {
		if pl, ok := s.Zones[z]; ok && ue.Unreachable(pl.Endpoint) {
			add(z)
		}
	}
	for i := range current {
		r := &current[i]
		if !unknown[r.Name] {
			continue
		}
		r.Phase, r.Ready = replicaset.PhaseUnknown, false
		if r.Zone == "" {
			r.Zone = unknownZonePrefix + s.endpointOf(r.Name, ue)
		}
		add(r.Zone)
	}
	return zones
}

// endpointOf returns the unreachable endpoint that last held the VM called
// name. The Set's lock is held.
func (s *Set) endpointOf(name string, ue *UnreachableError) string {
	for _, ep := range ue.Endpoints {
		if slices.ContainsFunc(s.seen[ep], func(vm VM) bool { return vm.Name == name }) {
			return ep
		}
	}
	return ""
}

// recorder is the Provider of one pass's executor: it notes each VM a
// create made and each a delete destroyed, so that what an endpoint holds
// when it stops answering right after is known.
type recorder struct {
	Provider
	mu   sync.Mutex
	vms  []VM
	gone []string
}

// Delete implements Provider, noting the VM destroyed.
func (r *recorder) Delete(ctx context.Context, name, owner string) error {
	err := r.Provider.Delete(ctx, name, owner)
	if err == nil {
		r.mu.Lock()
		r.gone = append(r.gone, name)
		r.mu.Unlock()
	}
	return err
}

// Create implements Provider, noting the VM made.
func (r *recorder) Create(ctx context.Context, spec Spec) (VM, error) {
	vm, err := r.Provider.Create(ctx, spec)
	if err == nil {
		r.mu.Lock()
		r.vms = append(r.vms, vm)
		r.mu.Unlock()
	}
	return vm, err
}

// made adds the VMs a pass created to what their endpoints are known to
// hold, and drops those it destroyed. The Set's lock is held.
func (s *Set) made(rec *recorder) {
	for ep, l := range s.seen {
		s.seen[ep] = slices.DeleteFunc(l, func(vm VM) bool { return slices.Contains(rec.gone, vm.Name) })
	}
	for _, vm := range rec.vms {
		if s.seen == nil {
			s.seen = map[string][]VM{}
		}
		if !slices.ContainsFunc(s.seen[vm.Endpoint], func(v VM) bool { return v.Name == vm.Name }) {
			s.seen[vm.Endpoint] = append(s.seen[vm.Endpoint], vm)
		}
	}
}
