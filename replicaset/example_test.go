package replicaset_test

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/replicaset"
)

// Scale a set of three down to one while one replica is already being
// deleted: it goes first and is not deleted again, so only one more is
// chosen.
func ExampleCompute() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	replicas := []replicaset.Replica{
		{Name: "test-rs-r9slq", CreatedAt: now.Add(-time.Hour)},
		{Name: "test-rs-zmdmm", CreatedAt: now.Add(-2 * time.Hour)},
		{Name: "test-rs-x2bkp", CreatedAt: now.Add(-3 * time.Hour), Deleting: true},
	}
	plan, err := replicaset.Compute(replicaset.Spec{Desired: 1}, replicas, deletionpolicy.Oldest{}, now)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(plan)
	// Output:
	// create=0 delete=[test-rs-zmdmm] deleting=[test-rs-x2bkp] deferred=0
}

// Replicas protected from scale-in are never chosen; the plan says how far
// short of the desired count it stays, and why.
func ExampleCompute_shortfall() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	replicas := []replicaset.Replica{
		{Name: "db-0", Protected: true},
		{Name: "db-1", Protected: true},
	}
	plan, _ := replicaset.Compute(replicaset.Spec{Desired: 1}, replicas, deletionpolicy.Random{Seed: 1}, now)
	fmt.Println(plan.Shortfall.Count)
	fmt.Println(plan.Shortfall.Reason)
	// Output:
	// 1
	// 2 of 2 live replicas are protected from scale-in; remove the protection from 1 of them to reach 1
}

// Spread six replicas over three zones, then scale to four: the creates
// fill the zones in turn, and the scale-down takes one replica from each
// of the two later listed zones, leaving 2/1/1. A zone whose creates fail
// backs off, and the missing replica goes elsewhere meanwhile.
func ExampleCompute_zones() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	spec := replicaset.Spec{Desired: 6, Zones: []string{"cluster-a", "cluster-b", "cluster-c"}}
	up, _ := replicaset.Compute(spec, nil, deletionpolicy.Oldest{}, now)
	fmt.Println(up.CreateZones)

	var replicas []replicaset.Replica
	for i, zone := range up.CreateZones {
		replicas = append(replicas, replicaset.Replica{Name: fmt.Sprintf("web-%d", i), Zone: zone, Phase: replicaset.PhaseRunning})
	}
	spec.Desired = 4
	down, _ := replicaset.Compute(spec, replicas, deletionpolicy.Oldest{}, now)
	fmt.Println(down)

	// Back to six while cluster-b refuses creates.
	left := slices.DeleteFunc(replicas, func(r replicaset.Replica) bool {
		return slices.ContainsFunc(down.Delete, func(v replicaset.Replica) bool { return v.Name == r.Name })
	})
	spec.Desired = 6
	spec.History.ZoneBackoff = []replicaset.ZoneBackoff{{Zone: "cluster-b", Until: now.Add(time.Minute)}}
	again, _ := replicaset.Compute(spec, left, deletionpolicy.Oldest{}, now)
	fmt.Println(again.CreateZones)
	fmt.Println(again.Unbalanced)
	// Output:
	// [cluster-a cluster-b cluster-c cluster-a cluster-b cluster-c]
	// create=0 delete=[web-2 web-1] deleting=[] deferred=0
	// [cluster-c cluster-a]
	// zones hold cluster-a=3 cluster-b=1 cluster-c=2 live replicas: creates avoid cluster-b, backing off after failures
}

// Report a spread set's status per zone: the listed zones in their order,
// then any zone a replica is in although the spec no longer lists it.
func ExampleSummarizeZones() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	replicas := []replicaset.Replica{
		{Name: "web-0", Zone: "cluster-a", Ready: true},
		{Name: "web-1", Zone: "cluster-a"},
		{Name: "web-2", Zone: "cluster-old", Ready: true},
		{Name: "web-3", Zone: "cluster-b", Deleting: true},
	}
	for _, z := range replicaset.SummarizeZones(replicas, []string{"cluster-a", "cluster-b"}, 0, now) {
		fmt.Printf("%s listed=%v replicas=%d ready=%d\n", z.Zone, z.Listed, z.Replicas, z.Ready)
	}
	// Output:
	// cluster-a listed=true replicas=2 ready=1
	// cluster-b listed=true replicas=0 ready=0
	// cluster-old listed=false replicas=1 ready=1
}

// Show a set's spread on one line, as a printer column or a log would.
func ExampleSpread() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	replicas := []replicaset.Replica{
		{Name: "web-0", Zone: "zone-a"}, {Name: "web-1", Zone: "zone-a"},
		{Name: "web-2", Zone: "zone-b"}, {Name: "web-3"},
	}
	fmt.Println(replicaset.Spread(replicaset.SummarizeZones(replicas, []string{"zone-a", "zone-b", "zone-c"}, 0, now)))
	// Output: zone-a=2 zone-b=1 zone-c=0 ?=1
}

// Report status.
func ExampleSummarize() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	replicas := []replicaset.Replica{
		{Name: "a", Ready: true, ReadySince: now.Add(-time.Minute)},
		{Name: "b", Ready: true, ReadySince: now.Add(-5 * time.Second)},
		{Name: "c"},
		{Name: "d", Deleting: true},
	}
	minReady := 30 * time.Second
	fmt.Printf("%+v\n", replicaset.Summarize(replicas, minReady, now))
	// Output:
	// {Replicas:3 Ready:2 Available:1 Terminating:1 Preparing:0 Unknown:0}
}

// A spec from user input is checked before planning: every problem is
// reported at once, and each wraps ErrInvalidSpec.
func ExampleSpec_Validate() {
	spec := replicaset.Spec{Desired: -1, Zones: []string{"zone-a", "zone-a"}}
	err := spec.Validate()
	fmt.Println(errors.Is(err, replicaset.ErrInvalidSpec))
	fmt.Println(err)
	// Output:
	// true
	// desired replicas -1 is negative: replicaset: invalid spec
	// zone "zone-a" is listed twice: replicaset: invalid spec
}

// A replica counts as available once it has been ready for the spec's
// minimum time; the boundary is inclusive.
func ExampleReplica_Available() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	r := replicaset.Replica{Name: "web-0", Ready: true, ReadySince: now.Add(-20 * time.Second)}
	fmt.Println(r.Available(30*time.Second, now))
	fmt.Println(r.Available(30*time.Second, now.Add(10*time.Second)))
	fmt.Println(r.Available(0, now))
	// Output:
	// false
	// true
	// true
}

// A controller stops acting when the plan is empty: the set has converged.
func ExamplePlan_IsZero() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	replicas := []replicaset.Replica{{Name: "web-0"}, {Name: "web-1"}}
	for _, desired := range []int{3, 2} {
		plan, err := replicaset.Compute(replicaset.Spec{Desired: desired}, replicas, deletionpolicy.Oldest{}, now)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(desired, plan.IsZero(), plan)
	}
	// Output:
	// 3 false create=1 delete=[] deleting=[] deferred=0
	// 2 true create=0 delete=[] deleting=[] deferred=0
}

// Roll a set of three from revision "a1" to "b2" under the default
// strategy (one surge replica, none unavailable), pass by pass: a
// replacement is created first, and a replica on "a1" goes only once it is
// available. Plan.Holds says what waits and why.
func ExampleCompute_rollout() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	replica := func(name, rev string, ready bool) replicaset.Replica {
		return replicaset.Replica{Name: name, Revision: rev, Phase: replicaset.PhaseRunning, Ready: ready}
	}
	spec := replicaset.Spec{Desired: 3, Revision: "b2"}
	set := []replicaset.Replica{replica("web-a", "a1", true), replica("web-b", "a1", true), replica("web-c", "a1", true)}

	plan, err := replicaset.Compute(spec, set, deletionpolicy.Random{}, now)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(plan)

	// The binding created web-d on b2; once it is ready, one replica on
	// a1 may go.
	set = append(set, replica("web-d", "b2", true))
	plan, err = replicaset.Compute(spec, set, deletionpolicy.Random{}, now)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(plan.Delete), plan.Delete[0].Revision)
	for _, h := range plan.Holds {
		fmt.Println(h.By, h.Waiting)
	}
	// Output:
	// create=1 delete=[] deleting=[] deferred=0 holds=[MaxSurge:2 MaxUnavailable:3]
	// 1 a1
	// MaxSurge 2
	// MaxUnavailable 2
}

// Resolve a strategy for a desired count: percentages of MaxSurge round
// up and of MaxUnavailable down, as in a Kubernetes Deployment.
func ExampleStrategy_Limits() {
	s := replicaset.Strategy{MaxSurge: replicaset.Percent(25), MaxUnavailable: replicaset.Percent(25)}
	fmt.Printf("%+v\n", s.Limits(10))
	fmt.Printf("%+v\n", replicaset.Strategy{}.Limits(10)) // the defaults
	// Output:
	// {Surge:3 Unavailable:2 Partition:0}
	// {Surge:1 Unavailable:0 Partition:0}
}

// Read a strategy's amounts as they appear in a manifest.
func ExampleParseAmount() {
	for _, s := range []string{"2", "25%", "-1"} {
		a, err := replicaset.ParseAmount(s)
		fmt.Println(a, err)
	}
	// Output:
	// 2 <nil>
	// 25% <nil>
	//  amount "-1" is neither a count ("3") nor a percentage ("25%") of zero or more
}

// Report a rollout's progress: two of three replicas are on the wanted
// revision, one of them not yet ready.
func ExampleSummarizeRollout() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	set := []replicaset.Replica{
		{Name: "web-a", Revision: "a1", Ready: true},
		{Name: "web-b", Revision: "b2", Ready: true},
		{Name: "web-c", Revision: "b2"},
	}
	fmt.Printf("%+v\n", replicaset.SummarizeRollout(replicaset.Spec{Desired: 3, Revision: "b2"}, set, now))
	// Output:
	// {Updated:2 UpdatedReady:1 UpdatedAvailable:1 Old:1 Complete:false Current:a1}
}

// A revision names a template: replicas made from it record it, and the
// spec asks for the revision of the template in force.
func ExampleHashRevision() {
	spec := replicaset.Spec{Desired: 2, Revision: replicaset.HashRevision([]byte(`{"image":"web-v2"}`))}
	fmt.Println(spec.Revision, replicaset.HashRevision([]byte(`{"image":"web-v2"}`)) == spec.Revision)
	// Output: 87rrv6w2zg true
}

// Six replicas over two vCenters' zones, and vcenter-b stops answering:
// its three replicas are unknown, not gone. Nothing is deleted or made in
// it; one replica (MaxSurge, 1 by default) stands in for them in
// vcenter-a. When vcenter-b answers again, the stand-in is the excess of an
// ordinary scale-down, taken from the fuller zone (the newest there, by
// the policy).
func ExampleCompute_unreachable() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	spec := replicaset.Spec{Desired: 6, Zones: []string{"vcenter-a", "vcenter-b"}}
	var replicas []replicaset.Replica
	for i := range 6 {
		replicas = append(replicas, replicaset.Replica{Name: fmt.Sprintf("web-%d", i), Zone: spec.Zones[i%2],
			CreatedAt: now.Add(-time.Hour), Phase: replicaset.PhaseRunning, Ready: true})
	}
	spec.Unreachable = []string{"vcenter-b"}
	cut, _ := replicaset.Compute(spec, replicas, deletionpolicy.Newest{}, now)
	fmt.Println(cut)

	replicas = append(replicas, replicaset.Replica{Name: "web-6", Zone: cut.CreateZones[0], CreatedAt: now, Phase: replicaset.PhaseRunning, Ready: true})
	spec.Unreachable = nil
	back, _ := replicaset.Compute(spec, replicas, deletionpolicy.Newest{}, now)
	fmt.Println(back)
	// Output:
	// create=1 delete=[] deleting=[] deferred=0 zones=[vcenter-a] unknown=[web-1 web-3 web-5]
	// create=0 delete=[web-6] deleting=[] deferred=0
}
