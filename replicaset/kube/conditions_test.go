package kube

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/replicaset"
)

// pod is one child of the simulated world of TestConditions_HealthyRollout.
type pod struct {
	name, zone, rev string
	ready           bool
}

// TestConditions_HealthyRollout plays healthy rolling updates pass by pass
// (drawn: the desired count, MaxSurge, the partition, the zones, whether
// zone by zone, and when the kubelet makes each new child ready) and checks the conditions of every pass: a
// surge in flight is a rollout, not a fault. Ready is True whenever the
// desired count of children are ready and never says TooManyReplicas;
// ScalingDown is never True and says RolloutSurge while the surge is up;
// ZonesBalanced is never False; no pass claims PerPassCap; and a pass that
// does nothing does not ask to run again at once.
func TestConditions_HealthyRollout(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		desired := rapid.IntRange(1, 6).Draw(t, "desired")
		surge := rapid.IntRange(1, 3).Draw(t, "maxSurge")
		zones := [][]string{nil, {"a", "b"}, {"a", "b", "c"}}[rapid.IntRange(0, 2).Draw(t, "zones")]
		strategy := replicaset.Strategy{MaxSurge: replicaset.Count(surge),
			Partition:  replicaset.Count(rapid.IntRange(0, desired-1).Draw(t, "partition")),
			ZoneByZone: rapid.Bool().Draw(t, "zoneByZone")}
		var world []pod
		for i := range desired {
			p := pod{name: fmt.Sprintf("web-%d", i), rev: "r1", ready: true}
			if len(zones) > 0 {
				p.zone = zones[i%len(zones)]
			}
			world = append(world, p)
		}
		next := desired
		for pass := 0; ; pass++ {
			if pass == 20*desired {
				t.Fatalf("no end after %d passes: %v", pass, world)
			}
			o := observed(desired, worldKids(world), zoned(zones...), func(o *observation) {
				o.spec.Rollout = &strategy
				o.revision = "r2"
			})
			d := decide(o, ordinal)
			v := settle(o, d, succeeded(d))
			checkHealthy(t, pass, world, desired, d, v)
			if done := condition(v.status.Conditions, ConditionRolledOut); done.Status == metav1.ConditionTrue {
				return
			}
			for i, n := range d.create {
				p := pod{name: fmt.Sprintf("web-%d", next+i), rev: "r2"}
				if len(zones) > 0 {
					p.zone = d.plan.CreateZones[i]
				}
				_ = n
				world = append(world, p)
			}
			next += len(d.create)
			for _, r := range d.delete {
				world = slices.DeleteFunc(world, func(p pod) bool { return p.name == r.Name })
			}
			// The kubelet: a child made earlier becomes ready, when it
			// will; when the pass did nothing, one must, or nothing
			// moves.
			var waiting []int
			for i, p := range world {
				if !p.ready {
					waiting = append(waiting, i)
				}
			}
			if len(waiting) == 0 {
				continue
			}
			if d.acts() && !rapid.Bool().Draw(t, "ready now") {
				continue
			}
			world[waiting[rapid.IntRange(0, len(waiting)-1).Draw(t, "which")]].ready = true
		}
	})
}

// worldKids describes the simulated children as read would.
func worldKids(world []pod) []child {
	out := make([]child, len(world))
	for i, p := range world {
		opts := []kidOpt{onRev(p.rev)}
		if p.zone != "" {
			opts = append(opts, inZone(p.zone))
		}
		if !p.ready {
			opts = append(opts, notReady)
		}
		out[i] = kid(p.name, opts...)
	}
	return out
}

// checkHealthy fails t when a pass of a healthy rollout reports a fault.
func checkHealthy(t *rapid.T, pass int, world []pod, desired int, d decision, v verdict) {
	ready := 0
	for _, p := range world {
		if p.ready {
			ready++
		}
	}
	conds := v.status.Conditions
	say := func(format string, args ...any) {
		t.Fatalf("pass %d, children %v: %s\n%s", pass, world, fmt.Sprintf(format, args...), renderConditions(conds))
	}
	if c := condition(conds, ConditionReady); ready >= desired && c.Status != metav1.ConditionTrue || c.Reason == ReasonTooManyReplicas {
		say("Ready is %s %s with %d of %d ready", c.Status, c.Reason, ready, desired)
	}
	if c := condition(conds, ConditionScalingDown); c.Status == metav1.ConditionTrue ||
		len(world) > desired && c.Reason != ReasonRolloutSurge {
		say("ScalingDown is %s %s with %d live for %d", c.Status, c.Reason, len(world), desired)
	}
	if c := condition(conds, ConditionZonesBalanced); c.Type != "" && c.Status != metav1.ConditionTrue {
		say("ZonesBalanced is %s %s", c.Status, c.Reason)
	}
	for _, c := range conds {
		if c.Reason == ReasonPerPassCap {
			say("%s says PerPassCap, with nothing over the cap", c.Type)
		}
	}
	if !d.acts() && v.requeue == soon {
		say("a pass that does nothing asks to run again at once (plan %s)", d.plan)
	}
}

// condition finds the condition of type typ, or the zero Condition.
func condition(conds []metav1.Condition, typ string) metav1.Condition {
	for _, c := range conds {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

func renderConditions(conds []metav1.Condition) string {
	s := ""
	for _, c := range conds {
		s += fmt.Sprintf("  %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	return s
}

// TestConditions_InPlacePowerCycle: a child not ready because the rollout
// power-cycles it in place, within MaxUnavailable, is a rollout, not a
// fault: Ready stays True, saying so. One more not ready than
// MaxUnavailable allows, or one not ready for another reason, is not.
func TestConditions_InPlacePowerCycle(t *testing.T) {
	cycling := []kidOpt{onRev("r1"), notReady, withAnnotation(AnnotationInPlaceRevision, "r2")}
	draining := []kidOpt{onRev("r1"), notReady, withAnnotation(AnnotationPreparing, stamp(testNow)), withAnnotation(AnnotationPreparingUpdate, "r2")}
	for _, tc := range []struct {
		name   string
		kids   []child
		ready  metav1.ConditionStatus
		reason string
	}{
		{"one power-cycling", kids(kid("a", onRev("r1")), kid("b", onRev("r2")), kid("c", cycling...)), metav1.ConditionTrue, ReasonRolloutInPlace},
		{"one draining for a power cycle", kids(kid("a", onRev("r1")), kid("b", onRev("r2")), kid("c", draining...)), metav1.ConditionTrue, ReasonRolloutInPlace},
		{"two, over MaxUnavailable 1", kids(kid("a", onRev("r1")), kid("b", cycling...), kid("c", cycling...)), metav1.ConditionFalse, ReasonReplicasNotReady},
		{"one not ready for another reason", kids(kid("a", onRev("r1")), kid("b", onRev("r2")), kid("c", onRev("r1"), notReady)), metav1.ConditionFalse, ReasonReplicasNotReady},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := observed(3, tc.kids, func(o *observation) {
				o.spec.Rollout = &replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible, MaxUnavailable: replicaset.Count(1)}
				o.revision = "r2"
			})
			d := decide(o, ordinal)
			v := settle(o, d, succeeded(d))
			if c := condition(v.status.Conditions, ConditionReady); c.Status != tc.ready || c.Reason != tc.reason {
				t.Errorf("Ready %s (%s: %s), want %s (%s)", c.Status, c.Reason, c.Message, tc.ready, tc.reason)
			}
		})
	}
}

// TestRolledOut_InPlace: a rollout that changes children in place
// progresses, though MaxUnavailable holds the power cycles still to come,
// and says which children it replaces because they cannot change in
// place, and why.
func TestRolledOut_InPlace(t *testing.T) {
	old := func(name string, kind replicaset.InPlace, blocker string) child {
		c := kid(name, onRev("r1"))
		c.replica.InPlace, c.replica.InPlaceBlocker = kind, blocker
		return c
	}
	for _, tc := range []struct {
		name     string
		strategy replicaset.Strategy
		kids     []child
		reason   string
		says     string
	}{
		{"power cycles within MaxUnavailable", replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible, MaxUnavailable: replicaset.Count(1)},
			kids(old("a", replicaset.InPlacePowerCycle, "memory lowered"), old("b", replicaset.InPlacePowerCycle, "memory lowered"), old("c", replicaset.InPlacePowerCycle, "memory lowered")),
			ReasonRolloutProgressing, "changing 1 in place"},
		{"one replaced, as it cannot change in place", replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible},
			kids(old("a", replicaset.InPlaceLive, ""), old("b", replicaset.InPlaceLive, ""), old("c", replicaset.InPlaceNone, "another template")),
			ReasonRolloutProgressing, "replacing, as they cannot change in place: c (another template)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := observed(3, tc.kids, func(o *observation) {
				o.spec.Rollout = &tc.strategy
				o.revision = "r2"
			})
			d := decide(o, ordinal)
			v := settle(o, d, succeeded(d))
			if c := condition(v.status.Conditions, ConditionRolledOut); c.Reason != tc.reason || !strings.Contains(c.Message, tc.says) {
				t.Errorf("RolledOut %s: %s; want %s, saying %q", c.Reason, c.Message, tc.reason, tc.says)
			}
		})
	}
}
