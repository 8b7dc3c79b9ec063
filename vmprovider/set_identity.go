package vmprovider

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
)

// identify gives the planner's replicas distinct identities, current[i]
// standing for vms[i], since the planner refuses a repeated name or UID
// (replicaset.ErrInvalidReplica) while the world can hold both. VMs that
// share a name (on two endpoints, left by a partition or made by a person)
// are, for the planner only, named by name and endpoint ("web-3@east"),
// and every copy is marked for deletion, so that a scale-down takes its
// excess from them first, by the usual order among them; a repeated UID
// gets a "#n" suffix. It returns the repeated names and an error for each,
// wrapping ErrDuplicateName, joined.
func identify(vms []VM, current []replicaset.Replica) (dups map[string]bool, err error) {
	count := make(map[string]int, len(vms))
	taken := make(map[string]bool, len(vms))
	for _, vm := range vms {
		count[vm.Name]++
		taken[vm.Name] = true
	}
	for i := range current {
		name := vms[i].Name
		if count[name] < 2 && name != "" {
			continue
		}
		if name != "" {
			if dups == nil {
				dups = map[string]bool{}
			}
			dups[name] = true
			current[i].MarkedForDeletion = true
		}
		q := name + "@" + vms[i].Endpoint
		for k := 2; taken[q]; k++ {
			q = fmt.Sprintf("%s@%s#%d", name, vms[i].Endpoint, k)
		}
		taken[q] = true
		current[i].Name = q
	}
	uids := make(map[string]bool, len(current))
	for i := range current {
		u := current[i].UID
		if u == "" {
			continue
		}
		q := u
		for k := 2; uids[q]; k++ {
			q = fmt.Sprintf("%s#%d", u, k)
		}
		uids[q] = true
		current[i].UID = q
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(dups)) {
		var at []string
		for _, vm := range vms {
			if vm.Name == name {
				at = append(at, cmp.Or(vm.Endpoint, "(default)"))
			}
		}
		errs = append(errs, fmt.Errorf("VM name %q is held by %d VMs, on endpoints %s: each counts as a replica, and a scale-down removes them first, each on its own endpoint: %w",
			name, len(at), strings.Join(at, ", "), ErrDuplicateName))
	}
	return dups, errors.Join(errs...)
}

// setActuator is the actuator of one pass of a Set: it deletes the very VM
// each of the planner's replicas stands for, on that VM's endpoint.
type setActuator struct {
	actuator
	rec  *recorder
	vms  map[string]VM   // by the planner's name (identify)
	dups map[string]bool // names more than one VM holds
}

// Delete destroys the VM r stands for: on its endpoint when the Provider
// is EndpointScoped, else by name, which for a name more than one VM
// holds is refused rather than risk the other copy.
func (a setActuator) Delete(ctx context.Context, r replicaset.Replica) error {
	vm, ok := a.vms[r.Name]
	if !ok {
		vm = VM{Name: r.Name}
	}
	if a.rec.scoped == nil && a.dups[vm.Name] {
		return fmt.Errorf("VM %q on endpoint %q: the Provider cannot delete by endpoint (EndpointScoped), so neither copy is removed: %w", vm.Name, vm.Endpoint, ErrDuplicateName)
	}
	return a.rec.deleteVM(ctx, vm, a.template.Owner.UID)
}

// ordinals is what Names offers when it can read a name's ordinal back.
type ordinals interface {
	Ordinal(name string) (int, bool)
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
