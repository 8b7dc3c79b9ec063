package replicaset_test

import (
	"fmt"
	"time"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/replicaset"
)

// Heal a set of 5 whose web-3 has been unhealthy (its guest's heartbeat
// stopped) for 6 minutes, past the 5-minute window: with Restart, it is
// restarted first. Once the restart is recorded and the start-up window
// has passed without its becoming healthy, it is replaced: deleted, and a
// replacement made in the same pass within the surge. Then 3 of the 5 are
// unhealthy at once, more than the storm guard's 40% of 5: none is
// remediated, and the plan says why.
func ExampleCompute_healing() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	started := now.Add(-time.Hour)
	healthy := func(name string) replicaset.Replica {
		return replicaset.Replica{Name: name, Phase: replicaset.PhaseRunning, Ready: true,
			Health: &replicaset.Health{Started: started, Healthy: true}}
	}
	hung := func(name string, since time.Time) replicaset.Replica {
		r := healthy(name)
		r.Ready = false
		r.Health = &replicaset.Health{Started: started, Healthy: true, Unhealthy: true, Since: since, Reason: "HeartbeatRed"}
		return r
	}
	spec := replicaset.Spec{Desired: 5, Remediation: &replicaset.Remediation{Restart: true}}
	set := []replicaset.Replica{healthy("web-1"), healthy("web-2"), hung("web-3", now.Add(-6*time.Minute)), healthy("web-4"), healthy("web-5")}

	plan, _ := replicaset.Compute(spec, set, deletionpolicy.Random{}, now)
	fmt.Println(plan)

	// The caller reset web-3 and recorded it; 10 minutes on, it is still
	// not healthy.
	set[2].Health = &replicaset.Health{Started: now, Restarted: true}
	later := now.Add(10 * time.Minute)
	plan, _ = replicaset.Compute(spec, set, deletionpolicy.Random{}, later)
	fmt.Println(plan)

	// Three at once: a fault outside the replicas.
	storm := []replicaset.Replica{healthy("web-1"), hung("web-2", now.Add(-time.Hour)), hung("web-3", now.Add(-time.Hour)),
		hung("web-4", now.Add(-time.Hour)), healthy("web-5")}
	plan, _ = replicaset.Compute(spec, storm, deletionpolicy.Random{}, now)
	fmt.Println(plan.Holds[0].Reason)
	// Output:
	// create=0 delete=[] deleting=[] deferred=0 restart=[web-3]
	// create=1 delete=[web-3] deleting=[] deferred=0 replace=[web-3]
	// 3 replicas are unhealthy, more than MaxUnhealthy 2: the fault is taken to be outside them, so none is remediated (web-2, web-3, web-4 wait)
}

// A binding keeps a replica's Health pass to pass with Observe: the
// replica starts, passes its check, then fails twice; the unhealthy
// spell runs from the first failure.
func ExampleHealth_Observe() {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	h := replicaset.Health{Started: t0}
	h = h.Observe(true, "", t0.Add(time.Minute))
	h = h.Observe(false, "HeartbeatRed", t0.Add(2*time.Minute))
	h = h.Observe(false, "HeartbeatRed", t0.Add(3*time.Minute))
	fmt.Println(h.Healthy, h.Unhealthy, h.Since.Sub(t0), h.Reason)

	// Restarted to remediate it: started again, judged by the start-up
	// window until it passes.
	h = h.Restart(t0.Add(10 * time.Minute))
	fmt.Println(h.Healthy, h.Unhealthy, h.Restarted, h.Started.Sub(t0))
	// Output:
	// true true 2m0s HeartbeatRed
	// false false true 10m0s
}

// A VM whose clone vCenter refused is a replica that failed in its zone:
// with ReplaceFailed it is replaced while another zone is healthy, and
// its replacement goes where no create is failing; when every zone holds
// a failed replica, they stay, and the plan says why.
func ExampleSpec_replaceFailed() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	spec := replicaset.Spec{Desired: 3, Zones: []string{"a", "b"}, ReplaceFailed: true, ReplaceDeleting: true,
		History: replicaset.History{ZoneBackoff: []replicaset.ZoneBackoff{{Zone: "a", Until: now.Add(time.Minute)}}}}
	set := []replicaset.Replica{
		{Name: "web-1", Zone: "a", Phase: replicaset.PhaseFailed},
		{Name: "web-2", Zone: "b", Phase: replicaset.PhaseRunning, Ready: true},
		{Name: "web-3", Zone: "b", Phase: replicaset.PhaseRunning, Ready: true},
	}
	plan, _ := replicaset.Compute(spec, set, deletionpolicy.Random{}, now)
	fmt.Println(plan)

	set[1].Phase = replicaset.PhaseFailed
	plan, _ = replicaset.Compute(spec, set, deletionpolicy.Random{}, now)
	fmt.Println(len(plan.Replace), "replaced:", plan.Holds[0].Reason)
	// Output:
	// create=1 delete=[web-1] deleting=[] deferred=0 zones=[b] unbalanced=(zones hold a=0 b=3 live replicas: creates avoid a, backing off after failures) replace=[web-1]
	// 0 replaced: web-1, web-2 failed, but every listed zone backs off or holds a failed replica: they stay, to recover where they are
}
