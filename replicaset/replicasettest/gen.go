package replicasettest

import (
	"fmt"
	"time"

	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/replicaset"
)

// Now returns the fixed time every generated input is planned at; the
// generated times (creation, readiness, health, preparations, backoffs)
// lie around it, before and after.
func Now() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }

// Input is one input of replicaset.Compute: what Check judges a plan
// against.
type Input struct {
	// Spec is what the owner asks for.
	Spec replicaset.Spec
	// Replicas are the replicas observed, in any order.
	Replicas []replicaset.Replica
	// Now is the time of the pass.
	Now time.Time
	// Policy is the deletion policy given to Compute, or nil. With it,
	// Check also states the order inside each tier of a scale-down: the
	// policy's rank (with the Env Compute gives it: Now, Spec.MinReady
	// and Spec.Seed), then name, then UID. It must be the policy the plan
	// was computed with: another one's order reads as a broken "deletion
	// order". Inputs leaves it nil.
	Policy replicaset.Ranker
}

// Inputs generates an Input: a Spec, up to 12 Replicas, and Now; its
// Policy is nil, for the test to set to the policy it plans with.
func Inputs() *rapid.Generator[Input] {
	return rapid.Custom(func(t *rapid.T) Input {
		return Input{Spec: Spec().Draw(t, "spec"), Replicas: Replicas(12).Draw(t, "replicas"), Now: Now()}
	})
}

// zoneNames are the zones replicas are drawn in and the zones a spec may
// list as unreachable: "" (none known), the zones a spec may list, and
// "x", which it never lists.
var zoneNames = []string{"", "a", "b", "c", "x"}

// revisions are the revisions replicas are drawn on: none recorded, and
// three others; a spec wants "", "v2" or "v3".
var revisions = []string{"", "v1", "v2", "v3"}

// moment draws a time within two hours before Now and a quarter of an
// hour after it, or the zero time (unknown) one time in eight.
func moment(t *rapid.T, label string) time.Time {
	if rapid.IntRange(0, 7).Draw(t, label+"Unknown") == 0 {
		return time.Time{}
	}
	return Now().Add(time.Duration(rapid.IntRange(-7200, 900).Draw(t, label)) * time.Second)
}

// past draws a non-zero time within two hours before Now.
func past(t *rapid.T, label string) time.Time {
	return Now().Add(-time.Duration(rapid.IntRange(0, 7200).Draw(t, label)) * time.Second)
}

// chance draws true one time in n.
func chance(t *rapid.T, n int, label string) bool { return rapid.IntRange(1, n).Draw(t, label) == 1 }

// amount draws an unset Amount, a count from 0 to maxCount, or a
// percentage.
func amount(t *rapid.T, maxCount int, label string) replicaset.Amount {
	switch rapid.IntRange(0, 2).Draw(t, label+"Kind") {
	case 1:
		return replicaset.Count(rapid.IntRange(0, maxCount).Draw(t, label+"Count"))
	case 2:
		return replicaset.Percent(rapid.SampledFrom([]int{0, 10, 25, 50, 100}).Draw(t, label+"Percent"))
	}
	return replicaset.Amount{}
}

// isZero reports whether a is set to zero, as a count or a percentage.
func isZero(a replicaset.Amount) bool { return a.IsSet() && (a.String() == "0" || a.String() == "0%") }

// Strategy generates a valid Strategy with every field drawn: a rolling
// update never has MaxSurge and MaxUnavailable both set to zero (an
// OnDelete strategy may).
func Strategy() *rapid.Generator[replicaset.Strategy] {
	return rapid.Custom(func(t *rapid.T) replicaset.Strategy {
		s := replicaset.Strategy{
			MaxSurge:       amount(t, 3, "maxSurge"),
			MaxUnavailable: amount(t, 3, "maxUnavailable"),
			Partition:      amount(t, 4, "partition"),
			Paused:         chance(t, 5, "paused"),
			ZoneByZone:     chance(t, 3, "zoneByZone"),
			Method:         replicaset.UpdateMethod(rapid.IntRange(0, 2).Draw(t, "method")),
		}
		if chance(t, 5, "onDelete") {
			s.Type = replicaset.OnDelete
		}
		if s.Type == replicaset.RollingUpdate && isZero(s.MaxSurge) && isZero(s.MaxUnavailable) {
			s.MaxUnavailable = replicaset.Count(rapid.IntRange(1, 3).Draw(t, "maxUnavailableNotZero"))
		}
		return s
	})
}

// Spec generates a valid Spec with every field drawn independently: small
// desired counts and caps (0 meaning the default), zones listed or not,
// backing off or not, reachable or not (Spec.Unreachable lists zones of
// Spec.Zones and others), a revision or none, any Strategy, and
// Remediation and Lifecycle nil or with every field drawn.
func Spec() *rapid.Generator[replicaset.Spec] {
	return rapid.Custom(func(t *rapid.T) replicaset.Spec {
		s := replicaset.Spec{
			Desired:         rapid.IntRange(0, 8).Draw(t, "desired"),
			MaxPerPass:      rapid.IntRange(0, 4).Draw(t, "maxPerPass"),
			ReplaceDeleting: rapid.Bool().Draw(t, "replaceDeleting"),
			MinReady:        rapid.SampledFrom([]time.Duration{0, 30 * time.Second, 10 * time.Minute}).Draw(t, "minReady"),
			Seed:            rapid.Uint64().Draw(t, "seed"),
			Rebalance:       rapid.Bool().Draw(t, "rebalance"),
			Revision:        rapid.SampledFrom([]string{"", "v2", "v3"}).Draw(t, "revision"),
			Strategy:        Strategy().Draw(t, "strategy"),
			ReplaceFailed:   rapid.Bool().Draw(t, "replaceFailed"),
		}
		all := rapid.Permutation([]string{"a", "b", "c"}).Draw(t, "zoneOrder")
		s.Zones = all[:rapid.IntRange(0, 3).Draw(t, "zoneCount")]
		for _, z := range zoneNames[1:] {
			if chance(t, 4, "backoff") {
				s.History.ZoneBackoff = append(s.History.ZoneBackoff, replicaset.ZoneBackoff{Zone: z, Until: moment(t, "backoffUntil")})
			}
			if chance(t, 4, "unreachable") {
				s.Unreachable = append(s.Unreachable, z)
			}
		}
		if rapid.Bool().Draw(t, "remediation") {
			s.Remediation = &replicaset.Remediation{
				StartupWindow:   rapid.SampledFrom([]time.Duration{0, 5 * time.Minute, time.Hour}).Draw(t, "startupWindow"),
				UnhealthyWindow: rapid.SampledFrom([]time.Duration{0, time.Minute, 30 * time.Minute}).Draw(t, "unhealthyWindow"),
				Restart:         rapid.Bool().Draw(t, "restart"),
				MaxUnhealthy:    amount(t, 4, "maxUnhealthy"),
				MaxInFlight:     amount(t, 3, "maxInFlight"),
				Backoff:         rapid.SampledFrom([]time.Duration{0, 30 * time.Second, 10 * time.Minute}).Draw(t, "remediationBackoff"),
				MaxFailures:     rapid.IntRange(0, 4).Draw(t, "maxFailures"),
			}
		}
		if rapid.Bool().Draw(t, "lifecycle") {
			s.Lifecycle = &replicaset.Lifecycle{
				Timeout: rapid.SampledFrom([]time.Duration{0, time.Minute, 10 * time.Minute, 3 * time.Hour}).Draw(t, "hookTimeout"),
				Abandon: rapid.Bool().Draw(t, "hookAbandon"),
			}
		}
		s.History.Failures = rapid.IntRange(0, 4).Draw(t, "failures")
		s.History.Last = moment(t, "lastFailure")
		s.History.Storming = chance(t, 4, "storming")
		s.History.Storm = moment(t, "storm")
		s.History.CreatesFailing = chance(t, 4, "createsFailing")
		return s
	})
}

// Replicas generates up to max replicas with distinct names and UIDs
// (some UIDs empty), in every state at once (see Replica). One set in four
// has replicas the platform cannot read (Replica.Unreachable), each of its
// replicas one time in three: a set with none is the common case, and
// such replicas hold Spec.Rebalance back.
func Replicas(max int) *rapid.Generator[[]replicaset.Replica] {
	return rapid.Custom(func(t *rapid.T) []replicaset.Replica {
		n := rapid.IntRange(0, max).Draw(t, "count")
		ids := rapid.SliceOfNDistinct(rapid.IntRange(0, 3*max+3), n, n, rapid.ID[int]).Draw(t, "ids")
		unreadable := chance(t, 4, "unreadable")
		rs := make([]replicaset.Replica, n)
		for i, id := range ids {
			rs[i] = replica(t, id)
			rs[i].Unreachable = unreadable && chance(t, 3, "unreachable")
		}
		return rs
	})
}

// Replica generates one replica named after id, with every field drawn:
// when it was created, deleting, marked, protected, a deletion cost of
// −1, 0 or 1, an ordinal (id) or none, each Phase, ready or not and
// since when, launch gated or not, on no revision, an older one or a
// wanted one, in a zone listed, unlisted, unreachable or none, with a
// Health (nil,
// healthy, unhealthy after being healthy with its Since, never healthy
// with its Started, restarted, opted out, asked for), a Preparing (nil,
// or since a time before Now with zero to two hooks, for an update or
// not), and each InPlace kind with or without a blocker.
func Replica(id int) *rapid.Generator[replicaset.Replica] {
	return rapid.Custom(func(t *rapid.T) replicaset.Replica { return replica(t, id) })
}

func replica(t *rapid.T, id int) replicaset.Replica {
	name := fmt.Sprintf("r%d", id)
	r := replicaset.Replica{
		Name:              name,
		CreatedAt:         moment(t, "created"),
		Deleting:          chance(t, 6, "deleting"),
		MarkedForDeletion: chance(t, 6, "marked"),
		Protected:         chance(t, 6, "protected"),
		DeletionCost:      int64(rapid.IntRange(-1, 1).Draw(t, "cost")),
		Phase:             replicaset.Phase(rapid.IntRange(0, 3).Draw(t, "phase")),
		Ready:             rapid.Bool().Draw(t, "ready"),
		LaunchGated:       chance(t, 6, "launchGated"),
		ReadySince:        moment(t, "readySince"),
		Zone:              rapid.SampledFrom(zoneNames).Draw(t, "zone"),
		Revision:          rapid.SampledFrom(revisions).Draw(t, "replicaRevision"),
		InPlace:           replicaset.InPlace(rapid.IntRange(0, 2).Draw(t, "inPlace")),
	}
	if !chance(t, 8, "noUID") {
		r.UID = "uid-" + name
	}
	if rapid.Bool().Draw(t, "hasOrdinal") {
		r.HasOrdinal, r.Ordinal = true, id
	}
	if rapid.Bool().Draw(t, "blocked") {
		r.InPlaceBlocker = rapid.SampledFrom([]string{"memory lowered", "another template"}).Draw(t, "blocker")
	}
	r.Health = health(t)
	if chance(t, 3, "preparing") {
		r.Preparing = &replicaset.Preparing{Since: past(t, "preparingSince"), Update: rapid.Bool().Draw(t, "forUpdate")}
		for _, h := range []string{"drain", "lb"} {
			if rapid.Bool().Draw(t, "hook") {
				r.Preparing.Hooks = append(r.Preparing.Hooks, h)
			}
		}
	}
	return r
}

// health draws a replica's Health: nil, healthy, unhealthy after being
// healthy, or never healthy since it started; each with its times and
// flags.
func health(t *rapid.T) *replicaset.Health {
	var h replicaset.Health
	switch rapid.IntRange(0, 3).Draw(t, "health") {
	case 0:
		return nil
	case 1:
		h = replicaset.Health{Healthy: true, Started: moment(t, "started")}
	case 2:
		h = replicaset.Health{Healthy: true, Unhealthy: true, Since: moment(t, "unhealthySince"),
			Started: moment(t, "started"), Reason: "HeartbeatRed"}
	case 3:
		h = replicaset.Health{Unhealthy: rapid.Bool().Draw(t, "failsNow"), Started: moment(t, "started"), Reason: "NoHeartbeat"}
	}
	h.Restarted = chance(t, 5, "restarted")
	h.HealthyBefore = chance(t, 4, "healthyBefore")
	h.Skip = chance(t, 6, "skip")
	h.RemediateNow = chance(t, 8, "asked")
	return &h
}
