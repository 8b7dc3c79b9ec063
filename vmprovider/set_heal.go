package vmprovider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/replicakit/replicakit/replicaset"
)

// healState is what a Set keeps for self-healing (Spec.Remediation)
// between passes, in memory, beside the set's History: each VM's Health,
// and when the last pass that healed ran.
type healState struct {
	health map[string]replicaset.Health // by healthKey
	last   time.Time
	// revision is the Template's revision (TemplateRevision) the
	// History's failures were counted under: a Template of another
	// revision clears them, so that a mended template heals again.
	revision string
}

// healthKey is the key a Set keeps vm's Health under: the replica UID
// the Set gives it (its endpoint and instance UUID), else its name.
func healthKey(vm VM) string {
	switch {
	case vm.Endpoint != "" && vm.InstanceUUID != "":
		return vm.Endpoint + "/" + vm.InstanceUUID
	case vm.InstanceUUID != "":
		return vm.InstanceUUID
	}
	return vm.Name
}

// observeHealth gives each of current, the replicas of vms, its Health at
// now, when Spec.Remediation is set (without it, the Set forgets what it
// kept): what the Set kept of the VM, started when first seen, and
// updated with the Readiness's CheckHealth. A VM first seen starts at its
// boot when vCenter reports one since the Set's previous healing pass (a
// VM that pass made), else at now: a VM that booted before the Set's
// first pass, or while its endpoint did not answer (a create whose answer
// was lost), gets its whole start-up window from now. A VM whose
// endpoint did not answer (replicaset.PhaseUnknown) gets no Health, as
// nothing is known of it, and no window runs for it meanwhile (see
// replicaset.Health.Unseen). It forgets the VMs no longer listed. The Set's lock is
// held.
func (s *Set) observeHealth(vms []VM, current []replicaset.Replica, now time.Time) {
	if s.Spec.Remediation == nil {
		s.heal = healState{}
		return
	}
	next := make(map[string]replicaset.Health, len(vms))
	for i := range current {
		vm, r := vms[i], &current[i]
		key := healthKey(vm)
		h := s.heal.health[key]
		if r.Phase == replicaset.PhaseUnknown {
			next[key] = h.Unseen(now)
			continue
		}
		if h.Started.IsZero() {
			h.Started = now
			if !vm.BootedAt.IsZero() && !s.heal.last.IsZero() && !vm.BootedAt.Before(s.heal.last) {
				h.Started = vm.BootedAt
			}
		}
		ok, reason := s.Readiness.CheckHealth(vm, s.Template.PowerOn)
		h = h.Observe(ok, reason, now)
		next[key] = h
		r.Health = &h
	}
	s.heal.health, s.heal.last = next, now
}

// failingUnready makes the replicas in current whose VMs (in vms) fail
// the health check not ready, when Spec.Remediation is set: a hung guest
// is not ready, whatever its power state says (under ReadyWhenPoweredOn),
// and the planner judges a VM that has not yet been healthy by its
// readiness. Scale, Status, RolloutStatus and ZoneStatus so agree. The
// Set's lock is held.
func (s *Set) failingUnready(vms []VM, current []replicaset.Replica) {
	if s.Spec.Remediation == nil {
		return
	}
	for i := range current {
		if r := &current[i]; r.Ready {
			if ok, _ := s.Readiness.CheckHealth(vms[i], s.Template.PowerOn); !ok {
				r.Ready, r.ReadySince = false, time.Time{}
			}
		}
	}
}

// remediationErr says why the Set cannot heal as Spec.Remediation asks,
// or nil: restarting VMs first (Restart) needs a Provider that can reset
// them, every endpoint's for Endpoints. The error wraps ErrInvalidSpec.
func (s *Set) remediationErr() error {
	rm := s.Spec.Remediation
	if rm == nil || !rm.Restart {
		return nil
	}
	if e, ok := s.Provider.(*Endpoints); ok {
		for _, name := range slices.Sorted(maps.Keys(e.Providers)) {
			if _, ok := e.Providers[name].(Resetter); !ok {
				return fmt.Errorf("Spec.Remediation restarts VMs first (Restart), but the Provider of endpoint %q cannot reset VMs (vmprovider.Resetter): %w", name, ErrInvalidSpec)
			}
		}
		return nil
	}
	if _, r := s.Provider.(Resetter); !r {
		return fmt.Errorf("Spec.Remediation restarts VMs first (Restart), but the Provider cannot reset VMs (vmprovider.Resetter): implement Reset or turn Restart off: %w", ErrInvalidSpec)
	}
	return nil
}

// restart resets the VMs of restart (a plan's Restart; vms maps the
// planner's names to the VMs, dups holds the names more than one VM
// holds), each on its endpoint when the Provider is EndpointScoped (as
// Endpoints is), else by name, which for a name held twice is refused.
// Each reset that succeeded is recorded in the VM's Health
// (replicaset.Health.Restart at now). It returns the resets that failed,
// joined: those VMs stay as they were, due again. The Set's lock is
// held.
func (s *Set) restart(ctx context.Context, restart []replicaset.Replica, vms map[string]VM, dups map[string]bool, now time.Time) error {
	if len(restart) == 0 {
		return nil
	}
	on, _ := s.Provider.(EndpointScoped)
	by, _ := s.Provider.(Resetter)
	owner := s.Template.Owner.UID
	var errs []error
	for _, r := range restart {
		vm, ok := vms[r.Name]
		if !ok || r.Phase == replicaset.PhaseUnknown || vm.Creating {
			// The planner restarts no unknown VM; never reset one. A VM
			// still being made has nothing to reset: replaced, it is
			// cancelled.
			continue
		}
		var err error
		switch {
		case on != nil && vm.Endpoint != "":
			err = reset(ctx, on.On(vm.Endpoint), vm.Name, owner)
		case dups[vm.Name]:
			err = fmt.Errorf("the Provider cannot reset by endpoint (EndpointScoped), so neither copy is reset: %w", ErrDuplicateName)
		case by != nil:
			err = by.Reset(ctx, vm.Name, owner)
		default:
			err = fmt.Errorf("the Provider cannot reset VMs (vmprovider.Resetter): %w", ErrInvalidSpec)
		}
		if err != nil {
			reason := ""
			if r.Health != nil {
				reason = r.Health.Reason
			}
			errs = append(errs, fmt.Errorf("reset VM %q on endpoint %q to remediate it (%s): %w", vm.Name, vm.Endpoint, reason, err))
			continue
		}
		key := healthKey(vm)
		s.heal.health[key] = s.heal.health[key].Restart(now)
	}
	return errors.Join(errs...)
}

// carried returns plan as carried out at now, for the set's History
// (replicaset.History.After): its Replace holds only the replacements
// made, those whose delete succeeded (deleted, the executor's
// Result.Deleted), and, with a Lifecycle, those that began to prepare
// (Plan.Prepare, which the Set records itself: the VM is replaced from
// then on, and is in no later pass's Replace). A replacement whose delete
// failed is no failure: its VM stays, due again. Without Remediation no
// replacement counts. The Set's lock is held.
func (s *Set) carried(plan replicaset.Plan, deleted []string) replicaset.Plan {
	done := plan
	done.Replace = slices.DeleteFunc(slices.Clone(plan.Replace), func(r replicaset.Replica) bool {
		prepared := slices.ContainsFunc(plan.Prepare, func(p replicaset.Replica) bool { return p.Name == r.Name })
		// Not carried out; or of an older template, which says nothing of
		// the Template now.
		return s.Spec.Remediation == nil || !slices.Contains(deleted, r.Name) && !prepared ||
			r.Revision != "" && r.Revision != s.heal.revision
	})
	return done
}
