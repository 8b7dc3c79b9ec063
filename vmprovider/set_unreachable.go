package vmprovider

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/replicakit/replicakit/replicaset"
)

// unknownZonePrefix begins the zone a Set gives, for planning, an unknown
// VM that records none: the planner sets aside replicas by zone
// (replicaset.Spec.Unreachable), and no zone name has a space.
const unknownZonePrefix = "unreachable endpoint "

// lostCreate is a create that got no answer, and when it was asked for.
type lostCreate struct {
	vm VM
	at time.Time
}

// remember keeps, by endpoint, the VMs of every endpoint that answered
// this List, and returns vms followed by the unknown VMs, from
// firstUnknown on: for each endpoint ue names, the VMs it held when it
// last answered, and then the VMs whose create was not answered (lost)
// while their endpoint does not answer either. A lost create is forgotten
// once its endpoint answers a List that shows the VM, or answers at now,
// LostNameHold or more after the create; until then its name stays
// taken (Scale's namer gets it). The Set's lock is held.
func (s *Set) remember(vms []VM, ue *UnreachableError, now time.Time) (all []VM, firstUnknown int) {
	if s.seen == nil {
		s.seen = map[string][]VM{}
	}
	fresh := map[string][]VM{}
	for _, vm := range vms {
		fresh[vm.Endpoint] = append(fresh[vm.Endpoint], vm)
	}
	for ep := range s.seen {
		if answered(ep, ue) {
			delete(s.seen, ep)
		}
	}
	for ep, l := range fresh {
		s.seen[ep] = l
	}
	hold := cmp.Or(s.LostNameHold, DefaultLostNameHold)
	s.lost = slices.DeleteFunc(s.lost, func(l lostCreate) bool {
		if !answered(l.vm.Endpoint, ue) {
			return false
		}
		shown := slices.ContainsFunc(vms, func(v VM) bool {
			return v.Name == l.vm.Name && (l.vm.Endpoint == "" || v.Endpoint == l.vm.Endpoint)
		})
		return shown || !now.Before(l.at.Add(hold))
	})
	if ue == nil {
		return vms, len(vms)
	}
	all = slices.Clone(vms)
	for _, ep := range ue.Endpoints {
		all = append(all, s.seen[ep]...)
	}
	for _, l := range s.lost {
		vm := l.vm
		if answered(vm.Endpoint, ue) {
			continue // no VM yet: its name is held, it is not counted
		}
		if vm.Endpoint == "" {
			vm.Endpoint = ue.def
		}
		if !slices.ContainsFunc(s.seen[vm.Endpoint], func(v VM) bool { return v.Name == vm.Name }) {
			all = append(all, vm)
		}
	}
	return all, len(vms)
}

// answered reports whether endpoint (as a Placement names it: empty for
// the default) answered the List that ue comes from (nil: every endpoint
// answered). An empty endpoint with no default may be any: it counts as
// answered only when every endpoint did.
func answered(endpoint string, ue *UnreachableError) bool {
	if ue == nil {
		return true
	}
	endpoint = cmp.Or(endpoint, ue.def)
	return endpoint != "" && !slices.Contains(ue.Endpoints, endpoint)
}

// setAside marks the replicas of the unknown VMs, current[firstUnknown:],
// as the planner should see them: unreachable, not ready (whether they
// run is unknown), and in a zone, a synthetic one for a VM that records
// none (ZoneStatus reports it as unreachable). It
// returns the zones to plan as unreachable: every listed zone whose
// placement's endpoint ue names, and every zone an unknown VM is in.
func (s *Set) setAside(current []replicaset.Replica, vms []VM, firstUnknown int, ue *UnreachableError) []string {
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
	for i := firstUnknown; i < len(current); i++ {
		r := &current[i]
		r.Phase, r.Ready, r.Unreachable = replicaset.PhaseUnknown, false, true
		if r.Zone == "" {
			r.Zone = unknownZonePrefix + vms[i].Endpoint
		}
		add(r.Zone)
	}
	return zones
}

// recorder is the Provider of one pass's executor: it notes each VM a
// create made, each create that got no answer, and each VM a delete
// destroyed, so that what an endpoint holds, or may hold, when it stops
// answering right after is known.
type recorder struct {
	Provider
	scoped EndpointScoped // the Set's Provider, when it is one
	mu     sync.Mutex
	vms    []VM
	lost   []VM // creates that failed without saying no VM was made
	gone   []VM // Name, and Endpoint when deleted there
}

// Create implements Provider, noting the VM made, or the VM that may have
// been made when the create fails with anything but an answer that it
// made none (an invalid spec, a placement not in the inventory, a name a
// VM of another owner holds).
func (r *recorder) Create(ctx context.Context, spec Spec) (VM, error) {
	vm, err := r.Provider.Create(ctx, spec)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err == nil:
		r.vms = append(r.vms, vm)
	case !errors.Is(err, ErrInvalidSpec) && !errors.Is(err, ErrNotOwned):
		r.lost = append(r.lost, VM{Name: spec.Name, Owner: spec.Owner.UID, OwnerName: spec.Owner.Name,
			Zone: spec.Zone, Revision: spec.Revision, BaseRevision: spec.BaseRevision, Endpoint: spec.Placement.Endpoint})
	}
	return vm, err
}

// deleteVM destroys vm: on its endpoint when the Provider is
// EndpointScoped, else by name; it notes the VM destroyed. A delete the
// provider answers is under way (ErrDeleting) is done as far as the pass
// goes: the VM is listed as Deleting until it is gone.
func (r *recorder) deleteVM(ctx context.Context, vm VM, owner string) error {
	var err error
	if r.scoped != nil && vm.Endpoint != "" {
		err = r.scoped.On(vm.Endpoint).Delete(ctx, vm.Name, owner)
	} else {
		err = r.Provider.Delete(ctx, vm.Name, owner)
	}
	if errors.Is(err, ErrDeleting) {
		// Under way, and the provider finishes it: the VM is listed as
		// Deleting (VM.Deleting) until it is gone.
		return nil
	}
	if err == nil {
		r.mu.Lock()
		r.gone = append(r.gone, VM{Name: vm.Name, Endpoint: vm.Endpoint})
		r.mu.Unlock()
	}
	return err
}

// made adds the VMs a pass created to what their endpoints are known to
// hold, drops those it destroyed, and remembers the creates that got no
// answer. The Set's lock is held.
func (s *Set) made(rec *recorder, now time.Time) {
	for _, g := range rec.gone {
		for ep, l := range s.seen {
			if g.Endpoint == "" || g.Endpoint == ep {
				s.seen[ep] = slices.DeleteFunc(l, func(vm VM) bool { return vm.Name == g.Name })
			}
		}
	}
	for _, vm := range rec.vms {
		if s.seen == nil {
			s.seen = map[string][]VM{}
		}
		if !slices.ContainsFunc(s.seen[vm.Endpoint], func(v VM) bool { return v.Name == vm.Name }) {
			s.seen[vm.Endpoint] = append(s.seen[vm.Endpoint], vm)
		}
	}
	for _, vm := range rec.lost {
		i := slices.IndexFunc(s.lost, func(l lostCreate) bool { return l.vm.Name == vm.Name && l.vm.Endpoint == vm.Endpoint })
		if i < 0 {
			s.lost = append(s.lost, lostCreate{vm: vm, at: now})
			continue
		}
		s.lost[i].at = now // asked for again: the hold runs from the last ask
	}
}
