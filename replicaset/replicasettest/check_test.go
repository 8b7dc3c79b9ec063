package replicasettest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/replicasettest"
)

// TestCheck_PlantedMistakes: each invariant of Check is seen failing on a
// plan with a mistake planted, and a plan without one passes.
func TestCheck_PlantedMistakes(t *testing.T) {
	now := replicasettest.Now()
	rep := func(name, zone string) replicaset.Replica {
		return replicaset.Replica{Name: name, UID: "uid-" + name, Phase: replicaset.PhaseRunning, Ready: true,
			ReadySince: now.Add(-time.Hour), Revision: "v1", Zone: zone}
	}
	a0, a1, a2, b0, p0 := rep("a0", "a"), rep("a1", "a"), rep("a2", "a"), rep("b0", "b"), rep("p0", "a")
	a2.InPlace = replicaset.InPlacePowerCycle
	p0.Protected = true
	in := replicasettest.Input{
		Spec: replicaset.Spec{Desired: 3, Revision: "v2", Zones: []string{"a", "b"}, Unreachable: []string{"b"},
			Strategy:  replicaset.Strategy{MaxUnavailable: replicaset.Count(1), Method: replicaset.UpdateInPlaceIfPossible},
			Lifecycle: &replicaset.Lifecycle{}},
		Replicas: []replicaset.Replica{a0, a1, a2, b0, p0},
		Now:      now,
	}
	ok := replicaset.Plan{Unknown: []replicaset.Replica{b0}}
	with := func(f func(p *replicaset.Plan)) replicaset.Plan {
		p := ok
		f(&p)
		return p
	}
	for _, tc := range []struct {
		name, want string
		plan       replicaset.Plan
	}{
		{"none", "", ok},
		{"a replica not in the input", "identity:", with(func(p *replicaset.Plan) {
			p.Prepare = []replicaset.Replica{{Name: "ghost"}}
		})},
		{"in two lists", "identity:", with(func(p *replicaset.Plan) {
			p.Prepare, p.Restart = []replicaset.Replica{a0}, []replicaset.Replica{a0}
		})},
		{"acted on in an unreachable zone", "unreachable:", with(func(p *replicaset.Plan) { p.Prepare = []replicaset.Replica{b0} })},
		{"a create without its zone", "caps:", with(func(p *replicaset.Plan) { p.Create = 1 })},
		{"a protected replica prepares", "protected:", with(func(p *replicaset.Plan) { p.Prepare = []replicaset.Replica{p0} })},
		{"deleted without preparing", "hooks:", with(func(p *replicaset.Plan) { p.Delete = []replicaset.Replica{a0} })},
		{"updated in place though it cannot be", "in place:", with(func(p *replicaset.Plan) {
			p.Update = []replicaset.Update{{Replica: a0}}
		})},
		{"restarted without remediation", "remediation:", with(func(p *replicaset.Plan) { p.Restart = []replicaset.Replica{a0} })},
		{"below the availability floor", "availability:", with(func(p *replicaset.Plan) {
			p.Prepare = []replicaset.Replica{a0, a1}
			p.PrepareUpdate = []replicaset.Replica{a2}
		})},
		{"below the serving floor", "serving:", with(func(p *replicaset.Plan) {
			p.Prepare = []replicaset.Replica{a0, a1}
			p.PrepareUpdate = []replicaset.Replica{a2}
		})},
		{"over the surge", "surge:", with(func(p *replicaset.Plan) { p.Create, p.CreateZones = 2, []string{"a", "a"} })},
		{"a fallback twice", "fallback:", with(func(p *replicaset.Plan) {
			p.Fallback = []replicaset.Fallback{{Replica: a0, Reason: "x"}, {Replica: a0, Reason: "x"}}
		})},
		{"a fallback without a reason", "fallback:", with(func(p *replicaset.Plan) {
			p.Fallback = []replicaset.Fallback{{Replica: a0}}
		})},
	} {
		t.Run(tc.name, func(t *testing.T) { expectCheck(t, in, tc.plan, tc.want) })
	}
}

// TestCheck_PlantedTakeBackAndInPlaceOnly: the take-back rules of "hooks"
// (with a Lifecycle, and once the spec dropped it) and the
// UpdateInPlaceOnly rule of "in place", each seen failing on a
// plan with a mistake planted, and passing without it.
func TestCheck_PlantedTakeBackAndInPlaceOnly(t *testing.T) {
	now := replicasettest.Now()
	rep := func(name, rev string) replicaset.Replica {
		return replicaset.Replica{Name: name, UID: "uid-" + name, Phase: replicaset.PhaseRunning, Ready: true,
			ReadySince: now.Add(-time.Hour), Revision: rev}
	}
	preparing := func(r replicaset.Replica) replicaset.Replica {
		r.Preparing = &replicaset.Preparing{Since: now.Add(-time.Minute), Hooks: []string{"drain"}}
		return r
	}
	x0, x1, x2, x3 := rep("x0", "v1"), rep("x1", "v1"), preparing(rep("x2", "v1")), preparing(rep("x3", "v1"))
	x3.Protected = true
	hooked := replicasettest.Input{Spec: replicaset.Spec{Desired: 4, Lifecycle: &replicaset.Lifecycle{}},
		Replicas: []replicaset.Replica{x0, x1, x2, x3}, Now: now}
	dropped := replicasettest.Input{Spec: replicaset.Spec{Desired: 1}, Replicas: []replicaset.Replica{x2}, Now: now}
	o0, o1 := rep("o0", "v1"), rep("o1", "v1")
	o0.InPlace, o1.InPlace = replicaset.InPlaceLive, replicaset.InPlaceLive
	only := replicasettest.Input{Spec: replicaset.Spec{Desired: 2, Revision: "v2",
		Strategy: replicaset.Strategy{MaxUnavailable: replicaset.Count(1), Method: replicaset.UpdateInPlaceOnly}},
		Replicas: []replicaset.Replica{o0, o1}, Now: now}
	for _, tc := range []struct {
		name, want string
		in         replicasettest.Input
		plan       replicaset.Plan
	}{
		{"both taken back", "", hooked, replicaset.Plan{Cancel: []replicaset.Replica{x2, x3}}},
		{"a Lifecycle dropped, the preparation taken back", "", dropped, replicaset.Plan{Cancel: []replicaset.Replica{x2}}},
		{"a Lifecycle dropped, the preparation left", "hooks:", dropped, replicaset.Plan{}},
		{"a protected replica left preparing", "hooks:", hooked, replicaset.Plan{Cancel: []replicaset.Replica{x2}}},
		{"a keepable replica left preparing below the count", "hooks:", hooked, replicaset.Plan{Cancel: []replicaset.Replica{x3}}},
		{"updated in place", "", only, replicaset.Plan{Update: []replicaset.Update{{Replica: o0}, {Replica: o1}}}},
		{"replaced under UpdateInPlaceOnly", "in place:", only, replicaset.Plan{Delete: []replicaset.Replica{o0}, Create: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) { expectCheck(t, tc.in, tc.plan, tc.want) })
	}
}

// TestCheck_PlantedRollout: each rule of "rollout" seen failing on a plan
// with a mistake planted, and a plan without one passing.
func TestCheck_PlantedRollout(t *testing.T) {
	now := replicasettest.Now()
	rep := func(name, rev, zone string) replicaset.Replica {
		return replicaset.Replica{Name: name, UID: "uid-" + name, Phase: replicaset.PhaseRunning, Ready: true,
			ReadySince: now.Add(-time.Hour), Revision: rev, Zone: zone}
	}
	n0, o0, o1 := rep("n0", "v2", "a"), rep("o0", "v1", "a"), rep("o1", "v1", "b")
	spec := replicaset.Spec{Desired: 3, Revision: "v2", Zones: []string{"a", "b"},
		Strategy: replicaset.Strategy{MaxUnavailable: replicaset.Count(1)}}
	in := func(f func(s *replicaset.Spec)) replicasettest.Input {
		s := spec
		f(&s)
		return replicasettest.Input{Spec: s, Replicas: []replicaset.Replica{n0, o0, o1}, Now: now}
	}
	plain := in(func(*replicaset.Spec) {})
	paused := in(func(s *replicaset.Spec) { s.Strategy.Paused = true })
	partitioned := in(func(s *replicaset.Spec) { s.Strategy.Partition = replicaset.Count(2) })
	backoff := in(func(s *replicaset.Spec) {
		s.History.ZoneBackoff = []replicaset.ZoneBackoff{{Zone: "a", Until: now.Add(time.Minute)}}
	})
	zoneByZone := in(func(s *replicaset.Spec) { s.Strategy.ZoneByZone = true })
	held := func(by replicaset.HoldKind) []replicaset.Hold {
		return []replicaset.Hold{{By: by, Waiting: 1, Reason: "o waits"}}
	}
	for _, tc := range []struct {
		name, want string
		in         replicasettest.Input
		plan       replicaset.Plan
	}{
		{"zone by zone, in the zone updated", "", zoneByZone, replicaset.Plan{Delete: []replicaset.Replica{o0}, Holds: held(replicaset.HoldZoneByZone)}},
		{"zone by zone, in a zone updated later", "rollout:", zoneByZone, replicaset.Plan{Delete: []replicaset.Replica{o1}}},
		{"an old replica replaced", "", plain, replicaset.Plan{Delete: []replicaset.Replica{o0}, Create: 1, CreateZones: []string{"a"},
			Holds: held(replicaset.HoldMaxUnavailable)}},
		{"a new replica deleted without a scale-down", "rollout:", plain,
			replicaset.Plan{Delete: []replicaset.Replica{n0}, Create: 1, CreateZones: []string{"a"}}},
		{"replaced while paused", "rollout:", paused, replicaset.Plan{Delete: []replicaset.Replica{o0}}},
		{"below the partition", "rollout:", partitioned, replicaset.Plan{Delete: []replicaset.Replica{o0}}},
		{"replaced in a zone backing off", "rollout:", backoff, replicaset.Plan{Delete: []replicaset.Replica{o0}}},
		{"replaced in a zone that answers", "", backoff, replicaset.Plan{Delete: []replicaset.Replica{o1}, Holds: held(replicaset.HoldZoneBackoff)}},
	} {
		t.Run(tc.name, func(t *testing.T) { expectCheck(t, tc.in, tc.plan, tc.want) })
	}
}

// TestCheck_PlantedReplace: the rules of "holds", "last available" and
// "surge creates" each seen failing on a plan with a mistake planted, and
// a plan without one passing.
func TestCheck_PlantedReplace(t *testing.T) {
	now := replicasettest.Now()
	rep := func(name, rev, zone string) replicaset.Replica {
		return replicaset.Replica{Name: name, UID: "uid-" + name, Phase: replicaset.PhaseRunning, Ready: true,
			ReadySince: now.Add(-time.Hour), Revision: rev, Zone: zone}
	}
	n0, o0, o1, o2 := rep("n0", "v2", "a"), rep("o0", "v1", "a"), rep("o1", "v1", "b"), rep("o2", "v1", "b")
	spec := replicaset.Spec{Desired: 3, Revision: "v2", Zones: []string{"a", "b"},
		Strategy: replicaset.Strategy{MaxUnavailable: replicaset.Count(1)}}
	in := func(desired int, f func(s *replicaset.Spec), rs ...replicaset.Replica) replicasettest.Input {
		s := spec
		s.Desired = desired
		f(&s)
		return replicasettest.Input{Spec: s, Replicas: rs, Now: now}
	}
	plain := in(3, func(*replicaset.Spec) {}, n0, o0, o1)
	scaleDown := in(1, func(*replicaset.Spec) {}, n0, o0, o2)
	surge2 := func(s *replicaset.Spec) { s.Strategy.MaxSurge = replicaset.Count(2) }
	backoff := in(3, func(s *replicaset.Spec) {
		surge2(s)
		s.History.ZoneBackoff = []replicaset.ZoneBackoff{{Zone: "a", Until: now.Add(time.Minute)}}
	}, n0, o0, o1)
	zoneByZone := in(3, func(s *replicaset.Spec) { surge2(s); s.Strategy.ZoneByZone = true }, n0, o0, o1)
	hold := func(by replicaset.HoldKind, n int) replicaset.Hold {
		return replicaset.Hold{By: by, Waiting: n, Reason: "they wait"}
	}
	replaced := func(hs ...replicaset.Hold) replicaset.Plan {
		return replicaset.Plan{Delete: []replicaset.Replica{o0}, Create: 1, CreateZones: []string{"a"}, Holds: hs}
	}
	for _, tc := range []struct {
		name, want string
		in         replicasettest.Input
		plan       replicaset.Plan
	}{
		{"the replica left held", "", plain, replaced(hold(replicaset.HoldMaxUnavailable, 1))},
		{"the replica left not held", "holds:", plain, replaced()},
		{"a hold counts too many", "holds:", plain, replaced(hold(replicaset.HoldMaxUnavailable, 2))},
		{"held by the partition", "holds:", plain, replaced(hold(replicaset.HoldPartition, 1))},
		{"a hold without a reason", "holds:", plain, replaced(replicaset.Hold{By: replicaset.HoldMaxUnavailable, Waiting: 1})},
		{"a scale-down takes the replicas on older revisions", "", scaleDown, replicaset.Plan{Delete: []replicaset.Replica{o0, o2}}},
		{"a scale-down takes the last available new replica", "last available:", scaleDown,
			replicaset.Plan{Delete: []replicaset.Replica{n0, o0}}},
		{"a create in a zone backing off", "caps:", backoff, replicaset.Plan{Create: 1, CreateZones: []string{"a"},
			Holds: []replicaset.Hold{hold(replicaset.HoldZoneBackoff, 1), hold(replicaset.HoldMaxUnavailable, 1)}}},
		{"a surge create for the replica that may be replaced", "", backoff, replicaset.Plan{Create: 1, CreateZones: []string{"b"},
			Holds: []replicaset.Hold{hold(replicaset.HoldZoneBackoff, 1), hold(replicaset.HoldMaxUnavailable, 1)}}},
		{"a surge create for a replica in a zone backing off", "surge creates:", backoff, replicaset.Plan{Create: 2, CreateZones: []string{"b", "b"},
			Holds: []replicaset.Hold{hold(replicaset.HoldZoneBackoff, 1), hold(replicaset.HoldMaxUnavailable, 1)}}},
		{"a surge create for a replica in a zone updated later", "surge creates:", zoneByZone, replicaset.Plan{Create: 2, CreateZones: []string{"a", "b"},
			Holds: []replicaset.Hold{hold(replicaset.HoldZoneByZone, 1), hold(replicaset.HoldMaxUnavailable, 1)}}},
	} {
		t.Run(tc.name, func(t *testing.T) { expectCheck(t, tc.in, tc.plan, tc.want) })
	}
}

// expectCheck fails t unless Check finds plan a violation of want (an
// invariant's name and colon), or none when want is empty.
func expectCheck(t *testing.T, in replicasettest.Input, plan replicaset.Plan, want string) {
	t.Helper()
	err := replicasettest.Check(in, plan)
	switch {
	case want == "" && err != nil:
		t.Errorf("Check(%v) = %v, want nil", plan, err)
	case want != "" && (err == nil || !strings.Contains("\n"+err.Error(), "\n"+want)):
		t.Errorf("Check(%v) = %v, want a violation of %q", plan, err, want)
	}
}

// TestCheck_PlantedCounting: the rule of "counting" seen failing on plans
// with a mistake planted (too many creates, every replica deleted, a
// replica deleted in a pass that also creates, a preparation taken back
// beyond the count), and plans without one passing.
func TestCheck_PlantedCounting(t *testing.T) {
	now := replicasettest.Now()
	rep := func(name string) replicaset.Replica {
		return replicaset.Replica{Name: name, UID: "uid-" + name, Phase: replicaset.PhaseRunning, Ready: true,
			ReadySince: now.Add(-time.Hour)}
	}
	a, b, c := rep("a"), rep("b"), rep("c")
	gone := rep("gone")
	gone.Deleting = true
	prep := rep("prep")
	prep.Preparing = &replicaset.Preparing{Since: now.Add(-time.Minute), Hooks: []string{"drain"}}
	in := func(desired int, f func(s *replicaset.Spec), rs ...replicaset.Replica) replicasettest.Input {
		s := replicaset.Spec{Desired: desired}
		f(&s)
		return replicasettest.Input{Spec: s, Replicas: rs, Now: now}
	}
	none := func(*replicaset.Spec) {}
	capped := func(s *replicaset.Spec) { s.MaxPerPass = 1 }
	hooks := func(s *replicaset.Spec) { s.Lifecycle = &replicaset.Lifecycle{} }
	replaceDeleting := func(s *replicaset.Spec) { s.ReplaceDeleting = true }
	held := replicaset.Plan{Create: 50, Holds: []replicaset.Hold{{By: replicaset.HoldMaxSurge, Waiting: 1, Reason: "x"}}}
	for _, tc := range []struct {
		name, want string
		in         replicasettest.Input
		plan       replicaset.Plan
	}{
		{"settled", "", in(3, none, a, b, c), replicaset.Plan{}},
		{"a scale-up", "", in(5, none, a, b, c), replicaset.Plan{Create: 2}},
		{"a scale-up short of the count", "counting:", in(5, none, a, b, c), replicaset.Plan{Create: 1}},
		{"a scale-up capped", "", in(5, capped, a, b, c), replicaset.Plan{Create: 1, Deferred: 1}},
		{"a scale-up deferred under the cap", "caps:", in(5, none, a, b, c), replicaset.Plan{Create: 1, Deferred: 1}},
		{"a create dropped under the cap", "caps:", in(5, capped, a, b, c), replicaset.Plan{Deferred: 1}},
		{"fifty creates", "counting:", in(3, none, a, b, c), replicaset.Plan{Create: 50}},
		{"fifty creates, held", "counting:", in(3, none, a, b, c), held},
		{"a replica being deleted counts", "", in(3, none, a, b, gone), replicaset.Plan{Deleting: []replicaset.Replica{gone}}},
		{"a replica being deleted replaced early", "counting:", in(3, none, a, b, gone),
			replicaset.Plan{Create: 1, Deleting: []replicaset.Replica{gone}}},
		{"a replica being deleted replaced, ReplaceDeleting", "", in(3, replaceDeleting, a, b, gone),
			replicaset.Plan{Create: 1, Deleting: []replicaset.Replica{gone}}},
		{"a scale-down", "", in(1, none, a, b, c), replicaset.Plan{Delete: []replicaset.Replica{a, b}}},
		{"every replica deleted", "counting:", in(1, none, a, b, c), replicaset.Plan{Delete: []replicaset.Replica{a, b, c}}},
		{"every replica deleted, a shortfall", "counting:", in(1, none, a, b, c),
			replicaset.Plan{Delete: []replicaset.Replica{a, b, c}, Shortfall: replicaset.Shortfall{Count: 1, Reason: "x"}}},
		{"a delete and a create", "counting:", in(3, none, a, b, c), replicaset.Plan{Create: 1, Delete: []replicaset.Replica{a}}},
		{"a preparation taken back", "", in(4, hooks, a, b, c, prep), replicaset.Plan{Cancel: []replicaset.Replica{prep}}},
		{"a preparation taken back beyond the count", "counting:", in(3, hooks, a, b, c, prep),
			replicaset.Plan{Cancel: []replicaset.Replica{prep}}},
		{"a preparation left, counted", "", in(3, hooks, a, b, c, prep), replicaset.Plan{}},
	} {
		t.Run(tc.name, func(t *testing.T) { expectCheck(t, tc.in, tc.plan, tc.want) })
	}
}

// TestCheck_PlantedDeletionOrder: the rule of "deletion order" seen
// failing on scale-downs that take a replica while one ranked earlier by
// the tiers stays, and passing on those that keep to them.
func TestCheck_PlantedDeletionOrder(t *testing.T) {
	now := replicasettest.Now()
	rep := func(name, zone string) replicaset.Replica {
		return replicaset.Replica{Name: name, UID: "uid-" + name, Phase: replicaset.PhaseRunning, Ready: true,
			ReadySince: now.Add(-time.Hour), Zone: zone}
	}
	a, b, c := rep("a", ""), rep("b", ""), rep("c", "")
	a.MarkedForDeletion = true
	pending, down := rep("pending", ""), rep("down", "")
	pending.Phase, pending.Ready = replicaset.PhasePending, false
	down.Ready = false
	za0, za1, zb0, zb1, zx := rep("za0", "a"), rep("za1", "a"), rep("zb0", "b"), rep("zb1", "b"), rep("zx", "x")
	zb1.Ready = false
	protectedMarked := a
	protectedMarked.Protected = true
	unlisted := func(r replicaset.Replica) replicaset.Replica { r.Zone = "x"; return r }
	// The policy (the newest first) ranks newest and newZb before the
	// rest, which tie, and go by name.
	newest, newZb := rep("newest", ""), rep("newZb", "b")
	newest.CreatedAt, newZb.CreatedAt = now, now
	ranked := func(in replicasettest.Input) replicasettest.Input { in.Policy = newestFirst{}; return in }
	in := func(desired int, zones []string, rs ...replicaset.Replica) replicasettest.Input {
		return replicasettest.Input{Spec: replicaset.Spec{Desired: desired, Zones: zones}, Replicas: rs, Now: now}
	}
	del := func(rs ...replicaset.Replica) replicaset.Plan { return replicaset.Plan{Delete: rs} }
	ab := []string{"a", "b"}
	for _, tc := range []struct {
		name, want string
		in         replicasettest.Input
		plan       replicaset.Plan
	}{
		{"the marked replica first", "", in(2, nil, a, b, c), del(a)},
		{"another before the marked replica", "deletion order:", in(2, nil, a, b, c), del(c)},
		{"a protected marked replica stays", "", in(2, nil, protectedMarked, b, c),
			replicaset.Plan{Delete: []replicaset.Replica{c}}},
		{"a broken replica first", "", in(2, nil, pending, b, c), del(pending)},
		{"an available replica before a broken one", "deletion order:", in(2, nil, pending, b, c), del(b)},
		{"a replica not available first", "", in(2, nil, down, b, c), del(down)},
		{"an available replica before one not available", "deletion order:", in(2, nil, down, b, c), del(b)},
		{"a replica in no listed zone first", "", in(4, ab, za0, za1, zb0, zb1, zx), del(zx)},
		{"a listed zone before no listed zone", "deletion order:", in(4, ab, za0, za1, zb0, zb1, zx), del(za0)},
		{"not available first inside its zone", "", in(3, ab, za0, za1, zb0, zb1), del(zb1)},
		{"an available replica before one not available in its zone", "deletion order:", in(3, ab, za0, za1, zb0, zb1), del(zb0)},
		{"not available compares only inside a zone", "", in(3, ab, za0, za1, zb0, zb1), del(za0)},
		{"broken first in no listed zone", "", in(3, ab, za0, zb0, unlisted(pending), zx), del(unlisted(pending))},
		{"an available replica before a broken one in no listed zone", "deletion order:", in(3, ab, za0, zb0, unlisted(pending), zx), del(zx)},
		{"the policy's order inside a tier", "", ranked(in(2, nil, b, c, newest)), del(newest)},
		{"against the policy's order inside a tier", "deletion order:", ranked(in(2, nil, b, c, newest)), del(b)},
		{"by name on a tie", "deletion order:", ranked(in(1, nil, b, c)), del(c)},
		{"the policy's order compares only inside a zone", "", ranked(in(3, ab, za0, za1, zb0, newZb)), del(za0)},
		{"against the policy's order inside a zone", "deletion order:", ranked(in(2, ab, za0, zb0, newZb)), del(zb0)},
		{"listed in the order", "", ranked(in(1, nil, down, b, newest)), del(down, newest)},
		{"listed against the tiers", "deletion order:", in(1, nil, down, b, newest), del(newest, down)},
		{"listed against the policy's order", "deletion order:", ranked(in(1, nil, down, b, newest)), del(down, b)},
		{"listed against the policy's order, same replicas", "deletion order:", ranked(in(0, nil, b, newest)), del(b, newest)},
	} {
		t.Run(tc.name, func(t *testing.T) { expectCheck(t, tc.in, tc.plan, tc.want) })
	}
}

// TestCheck_PlantedSurgeComing: "surge creates" counts the surge replicas
// still coming up from earlier passes against the replicas left to
// replace (in their zone, with zones), seen failing when a pass makes a
// surge replica for a replica one is already coming for.
func TestCheck_PlantedSurgeComing(t *testing.T) {
	now := replicasettest.Now()
	rep := func(name, rev, zone string) replicaset.Replica {
		return replicaset.Replica{Name: name, UID: "uid-" + name, Phase: replicaset.PhaseRunning, Ready: true,
			ReadySince: now.Add(-time.Hour), Revision: rev, Zone: zone}
	}
	n0, o0, o1 := rep("n0", "v2", "a"), rep("o0", "v1", "a"), rep("o1", "v1", "b")
	n0.Ready = false // a surge replica made in an earlier pass, coming up
	in := func(zones []string, rs ...replicaset.Replica) replicasettest.Input {
		return replicasettest.Input{Spec: replicaset.Spec{Desired: 2, Revision: "v2", Zones: zones,
			Strategy: replicaset.Strategy{MaxSurge: replicaset.Count(2)}}, Replicas: rs, Now: now}
	}
	unzoned := func(r replicaset.Replica) replicaset.Replica { r.Zone = ""; return r }
	flat := in(nil, unzoned(n0), unzoned(o0), unzoned(o1))
	zoned := in([]string{"a", "b"}, n0, o0, o1)
	waits := []replicaset.Hold{{By: replicaset.HoldMaxUnavailable, Waiting: 2, Reason: "they wait"}}
	for _, tc := range []struct {
		name, want string
		in         replicasettest.Input
		plan       replicaset.Plan
	}{
		{"one more for the replica nothing comes for", "", flat, replicaset.Plan{Create: 1, Holds: waits}},
		{"one for each replica, one already coming", "surge creates:", flat, replicaset.Plan{Create: 2, Holds: waits}},
		{"zoned: one for the zone nothing comes for", "", zoned, replicaset.Plan{Create: 1, CreateZones: []string{"b"}, Holds: waits}},
		{"zoned: one for each zone, one already coming", "surge creates:", zoned,
			replicaset.Plan{Create: 2, CreateZones: []string{"a", "b"}, Holds: waits}},
	} {
		t.Run(tc.name, func(t *testing.T) { expectCheck(t, tc.in, tc.plan, tc.want) })
	}
}

// TestInput_String: an Input renders its amounts as they are read and
// its pointers by value, for rapid's failure output.
func TestInput_String(t *testing.T) {
	now := replicasettest.Now()
	in := replicasettest.Input{
		Spec: replicaset.Spec{Desired: 4, Strategy: replicaset.Strategy{MaxSurge: replicaset.Percent(25), MaxUnavailable: replicaset.Count(3)},
			Lifecycle: &replicaset.Lifecycle{Timeout: time.Minute}, Remediation: &replicaset.Remediation{MaxFailures: 7}},
		Replicas: []replicaset.Replica{{Name: "a", Preparing: &replicaset.Preparing{Hooks: []string{"drain"}},
			Health: &replicaset.Health{Reason: "probe"}}},
		Now: now,
	}
	s := fmt.Sprintf("%#v", in)
	for _, want := range []string{"MaxSurge:25%", "MaxUnavailable:3", "Timeout:1m0s", "MaxFailures:7", "Hooks:[drain]", "Reason:probe"} {
		if !strings.Contains(s, want) {
			t.Errorf("%%#v of the input lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "0x") || s != in.String() {
		t.Errorf("%%#v of the input shows a pointer, or differs from String:\n%s\n%s", s, in.String())
	}
}

// TestCheck_LastAvailableWaitingInPlace: a replica waiting for its
// in-place update counts on the wanted revision, serving (the package
// documentation's In-place updates), so a scale-down may take the last
// available replica made on it; one that cannot change in place does not.
func TestCheck_LastAvailableWaitingInPlace(t *testing.T) {
	now := replicasettest.Now()
	rep := func(name, rev string, k replicaset.InPlace) replicaset.Replica {
		return replicaset.Replica{Name: name, UID: "uid-" + name, Phase: replicaset.PhaseRunning, Ready: true,
			ReadySince: now.Add(-time.Hour), Revision: rev, InPlace: k}
	}
	n0, o0 := rep("n0", "v2", replicaset.InPlaceNone), rep("o0", "v1", replicaset.InPlacePowerCycle)
	in := func(o1 replicaset.Replica) replicasettest.Input {
		return replicasettest.Input{Spec: replicaset.Spec{Desired: 2, Revision: "v2", MaxPerPass: 1,
			Strategy: replicaset.Strategy{MaxUnavailable: replicaset.Count(1), Method: replicaset.UpdateInPlaceIfPossible}},
			Replicas: []replicaset.Replica{n0, o0, o1}, Now: now}
	}
	plan := replicaset.Plan{Delete: []replicaset.Replica{n0}, Update: []replicaset.Update{{Replica: o0, PowerCycle: true}}, Deferred: 1}
	expectCheck(t, in(rep("o1", "v1", replicaset.InPlacePowerCycle)), plan, "")
	expectCheck(t, in(rep("o1", "v1", replicaset.InPlaceNone)), plan, "last available:")
}

// newestFirst is a deletion policy for the planted tests: the latest
// created first.
type newestFirst struct{}

func (newestFirst) Rank(r replicaset.Replica, _ replicaset.Env) replicaset.Rank {
	return replicaset.Rank{-r.CreatedAt.Unix()}
}
