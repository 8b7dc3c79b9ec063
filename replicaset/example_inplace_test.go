package replicaset_test

import (
	"fmt"
	"time"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/replicaset"
)

// A rollout from revision "4gib" to "8gib" in place, if possible: two VMs
// have memory hot-add on and take it live, one has it off and is
// power-cycled within MaxUnavailable, and one was cloned from another
// template and is replaced.
func ExampleUpdateMethod() {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	vm := func(name string, kind replicaset.InPlace, blocker string) replicaset.Replica {
		return replicaset.Replica{Name: name, CreatedAt: now.Add(-time.Hour), Phase: replicaset.PhaseRunning,
			Ready: true, Revision: "4gib", InPlace: kind, InPlaceBlocker: blocker}
	}
	set := []replicaset.Replica{
		vm("web-0", replicaset.InPlaceLive, ""),
		vm("web-1", replicaset.InPlaceLive, ""),
		vm("web-2", replicaset.InPlacePowerCycle, "memory raised from 4096 to 8192 MiB with hot-add off"),
		vm("web-3", replicaset.InPlaceNone, "another template VM"),
	}
	spec := replicaset.Spec{Desired: 4, Revision: "8gib", Strategy: replicaset.Strategy{
		Method:         replicaset.UpdateInPlaceIfPossible,
		MaxUnavailable: replicaset.Count(1),
	}}
	p, _ := replicaset.Compute(spec, set, deletionpolicy.Oldest{}, now)
	fmt.Println(p)
	for _, u := range p.Update {
		fmt.Printf("%s power cycle: %v\n", u.Replica.Name, u.PowerCycle)
	}
	for _, f := range p.Fallback {
		fmt.Printf("%s replaced: %s\n", f.Replica.Name, f.Reason)
	}

	// In place only: what cannot change in place waits, and says why.
	spec.Strategy.Method = replicaset.UpdateInPlaceOnly
	p, _ = replicaset.Compute(spec, set[3:], deletionpolicy.Oldest{}, now)
	fmt.Println(p.Holds[0].Reason)
	// Output:
	// create=1 delete=[] deleting=[] deferred=0 holds=[MaxUnavailable:1] update=[web-0 web-1 web-2~] fallback=[web-3]
	// web-0 power cycle: false
	// web-1 power cycle: false
	// web-2 power cycle: true
	// web-3 replaced: another template VM
	// 1 replica on an older revision cannot be updated in place, and the update method InPlaceOnly replaces none: web-3 (another template VM)
}
