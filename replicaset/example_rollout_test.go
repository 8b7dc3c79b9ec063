package replicaset_test

import (
	"fmt"
	"time"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/replicaset"
)

// Roll a set over two zones whose replicas on "a1" sit at zone-a=2,
// zone-b=1. Both zones have no replica on "b2" yet, so the tie goes to
// the zone with more replicas left to replace, zone-a: zones keep their
// shares while a rollout runs (the package documentation's Rollouts
// section states the rule).
func ExampleCompute_rolloutZones() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	replica := func(name, rev, zone string) replicaset.Replica {
		return replicaset.Replica{Name: name, Revision: rev, Zone: zone, Phase: replicaset.PhaseRunning, Ready: true}
	}
	spec := replicaset.Spec{Desired: 3, Revision: "b2", Zones: []string{"zone-a", "zone-b"}}
	set := []replicaset.Replica{replica("web-1", "a1", "zone-a"), replica("web-2", "a1", "zone-a"), replica("web-3", "a1", "zone-b")}

	plan, err := replicaset.Compute(spec, set, deletionpolicy.Random{}, now)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(plan.CreateZones)

	// web-4 is up in zone-a and web-2 is gone: zone-a now has a replica
	// on b2 and zone-b none, so the next one goes to zone-b.
	set = []replicaset.Replica{replica("web-1", "a1", "zone-a"), replica("web-3", "a1", "zone-b"), replica("web-4", "b2", "zone-a")}
	plan, err = replicaset.Compute(spec, set, deletionpolicy.Random{}, now)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(plan.CreateZones)
	// Output:
	// [zone-a]
	// [zone-b]
}

// A ZoneByZone rollout replaces the replicas of one zone at a time: here
// zone-a still has replicas on "a1", so the surge replica's excess is
// scaled down there, though zone-b is as full (a scale-down otherwise
// takes the later listed of two zones as full), and the replicas of
// zone-b wait for zone-a.
func ExampleCompute_zoneByZone() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	replica := func(name, rev, zone string) replicaset.Replica {
		return replicaset.Replica{Name: name, Revision: rev, Zone: zone, Phase: replicaset.PhaseRunning, Ready: true}
	}
	spec := replicaset.Spec{Desired: 5, Revision: "b2", Zones: []string{"zone-a", "zone-b"},
		Strategy: replicaset.Strategy{ZoneByZone: true}}
	set := []replicaset.Replica{
		replica("web-1", "a1", "zone-a"), replica("web-2", "a1", "zone-a"), replica("web-5", "b2", "zone-a"),
		replica("web-3", "a1", "zone-b"), replica("web-4", "a1", "zone-b"), replica("web-6", "a1", "zone-b"),
	}
	plan, err := replicaset.Compute(spec, set, deletionpolicy.Random{}, now)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(plan.Delete), plan.Delete[0].Revision, plan.Delete[0].Zone)
	for _, h := range plan.Holds {
		if h.By == replicaset.HoldZoneByZone {
			fmt.Println(h.Reason)
		}
	}
	// Output:
	// 1 a1 zone-a
	// 3 replicas on older revisions in zone-b wait for zone zone-a to be updated first (ZoneByZone)
}

// Replicas on an older revision that run but are not seen available (a
// guest agent late, a blip in what the binding observes) may still serve:
// with MaxUnavailable 0, none is deleted while no replica on the new
// revision is available, as in Cluster API's rolling update.
func ExampleCompute_mayServe() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	replica := func(name, rev string) replicaset.Replica {
		return replicaset.Replica{Name: name, Revision: rev, Phase: replicaset.PhaseRunning, Ready: false}
	}
	spec := replicaset.Spec{Desired: 3, Revision: "b2"} // one surge, none unavailable
	set := []replicaset.Replica{replica("web-1", "a1"), replica("web-2", "a1"), replica("web-3", "a1"), replica("web-4", "b2")}
	plan, err := replicaset.Compute(spec, set, deletionpolicy.Random{}, now)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(plan.Delete), plan.Create)
	// Output:
	// 0 0
}
