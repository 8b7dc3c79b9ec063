package replicaset_test

import (
	"fmt"
	"time"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/replicaset"
)

// A scale-down with a pre-delete hook: the first pass prepares the replica
// it chose, a pass while the hook holds it waits, and the pass after the
// hook released it deletes it.
func ExampleLifecycle() {
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	set := []replicaset.Replica{
		{Name: "web-a", CreatedAt: start, Phase: replicaset.PhaseRunning, Ready: true},
		{Name: "web-b", CreatedAt: start.Add(time.Minute), Phase: replicaset.PhaseRunning, Ready: true},
	}
	spec := replicaset.Spec{Desired: 1, Lifecycle: &replicaset.Lifecycle{Timeout: 10 * time.Minute}}
	policy := deletionpolicy.Newest{}

	now := start.Add(time.Hour)
	p, _ := replicaset.Compute(spec, set, policy, now)
	fmt.Println(p)
	// The binding records the preparation and the hooks that hold it.
	set[1].Preparing = &replicaset.Preparing{Since: now, Hooks: []string{"drain"}}

	p, _ = replicaset.Compute(spec, set, policy, now.Add(time.Minute))
	fmt.Println(p)
	fmt.Println(p.Holds[0].Reason)
	fmt.Println("look again at", p.Lifecycle.NextCheck.Format(time.Kitchen))

	set[1].Preparing.Hooks = nil // the drainer released it
	p, _ = replicaset.Compute(spec, set, policy, now.Add(2*time.Minute))
	fmt.Println(p)
	// Output:
	// create=0 delete=[] deleting=[] deferred=0 prepare=[web-b]
	// create=0 delete=[] deleting=[] deferred=0 holds=[PreDelete:1]
	// 1 replica waits on pre-delete hooks: web-b on drain until 2026-12-01T10:10:00Z
	// look again at 10:10AM
	// create=0 delete=[web-b] deleting=[] deferred=0
}

// The owner's own deletion: every replica prepares, whatever the desired
// count, and goes once its hooks are done.
func ExampleDrain() {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	set := []replicaset.Replica{
		{Name: "db-0", Phase: replicaset.PhaseRunning, Ready: true,
			Preparing: &replicaset.Preparing{Since: now.Add(-time.Minute)}},
		{Name: "db-1", Phase: replicaset.PhaseRunning, Ready: true,
			Preparing: &replicaset.Preparing{Since: now.Add(-time.Minute), Hooks: []string{"backup"}}},
		{Name: "db-2", Phase: replicaset.PhaseRunning, Ready: true},
		{Name: "db-3", Phase: replicaset.PhasePending},
	}
	spec := replicaset.Spec{Desired: 3, Lifecycle: &replicaset.Lifecycle{}}
	p, _ := replicaset.Drain(spec, set, now)
	fmt.Println(p)
	// Output:
	// create=0 delete=[db-3 db-0] deleting=[] deferred=0 holds=[PreDelete:1] prepare=[db-2]
}
