package replicaset_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/internal/replicagen"
	"github.com/replicakit/replicakit/replicaset"
)

// running returns n running, ready replicas a0…, made at now.
func running(n int, now time.Time) []replicaset.Replica {
	rs := make([]replicaset.Replica, n)
	for i := range rs {
		name := string(rune('a'+i)) + "0"
		rs[i] = replicaset.Replica{Name: name, UID: "uid-" + name, CreatedAt: now,
			Phase: replicaset.PhaseRunning, Ready: true, ReadySince: now}
	}
	return rs
}

func TestGate_Cases(t *testing.T) {
	now := replicagen.Now()
	lc := &replicaset.Lifecycle{Timeout: 10 * time.Minute}
	abandon := &replicaset.Lifecycle{Timeout: 10 * time.Minute, Abandon: true}
	prep := func(rs []replicaset.Replica, i int, ago time.Duration, hooks ...string) []replicaset.Replica {
		rs[i].Preparing = &replicaset.Preparing{Since: now.Add(-ago), Hooks: hooks}
		return rs
	}
	for _, tc := range []struct {
		name string
		spec replicaset.Spec
		set  []replicaset.Replica
		want string
	}{
		{"scale-down prepares, deletes nothing",
			replicaset.Spec{Desired: 2, Lifecycle: lc}, running(3, now),
			"create=0 delete=[] deleting=[] deferred=0 prepare=[a0]"},
		{"a hook holds within its timeout",
			replicaset.Spec{Desired: 2, Lifecycle: lc}, prep(running(3, now), 2, 5*time.Minute, "drain"),
			"create=0 delete=[] deleting=[] deferred=0 holds=[PreDelete:1]"},
		{"released: deleted",
			replicaset.Spec{Desired: 2, Lifecycle: lc}, prep(running(3, now), 2, 5*time.Minute),
			"create=0 delete=[c0] deleting=[] deferred=0"},
		{"timed out, Continue: deleted",
			replicaset.Spec{Desired: 2, Lifecycle: lc}, prep(running(3, now), 2, 10*time.Minute, "drain"),
			"create=0 delete=[c0] deleting=[] deferred=0"},
		{"timed out, Abandon: kept and said",
			replicaset.Spec{Desired: 2, Lifecycle: abandon}, prep(running(3, now), 2, time.Hour, "drain"),
			"create=0 delete=[] deleting=[] deferred=0 holds=[HookAbandoned:1]"},
		{"never chosen twice: a preparing replica covers the excess",
			replicaset.Spec{Desired: 1, Lifecycle: lc}, prep(running(3, now), 2, time.Minute, "drain"),
			"create=0 delete=[] deleting=[] deferred=0 holds=[PreDelete:1] prepare=[a0]"},
		{"a scale-up takes back before it creates",
			replicaset.Spec{Desired: 4, Lifecycle: lc}, prep(prep(running(3, now), 2, time.Minute, "drain"), 1, 2*time.Minute, "drain"),
			"create=1 delete=[] deleting=[] deferred=0 cancel=[c0 b0]"},
		{"a clone in flight leaves without preparing",
			replicaset.Spec{Desired: 2, Lifecycle: lc}, func() []replicaset.Replica {
				rs := running(3, now)
				rs[0].Phase, rs[0].Ready = replicaset.PhasePending, false
				return rs
			}(),
			"create=0 delete=[a0] deleting=[] deferred=0"},
		{"a rollout prepares its old replicas, counting them toward the surge",
			replicaset.Spec{Desired: 2, Revision: "B", Lifecycle: lc}, func() []replicaset.Replica {
				rs := prep(running(3, now), 0, time.Minute, "drain")
				rs[0].Revision, rs[1].Revision = "A", "A"
				rs[2].Revision = "B"
				return rs
			}(),
			"create=0 delete=[] deleting=[] deferred=0 holds=[MaxSurge:1 MaxUnavailable:1 PreDelete:1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := checkedCompute(t, tc.spec, tc.set, deletionpolicy.Oldest{}, now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, p.String()); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGate_Status(t *testing.T) {
	now := replicagen.Now()
	lc := &replicaset.Lifecycle{Timeout: 10 * time.Minute}
	rs := running(4, now)
	rs[2].Preparing = &replicaset.Preparing{Since: now.Add(-time.Minute), Hooks: []string{"drain", "lb"}}
	rs[3].Preparing = &replicaset.Preparing{Since: now.Add(-11 * time.Minute), Hooks: []string{"drain"}}
	p, err := checkedCompute(t, replicaset.Spec{Desired: 2, Lifecycle: lc}, rs, deletionpolicy.Oldest{}, now)
	if err != nil {
		t.Fatal(err)
	}
	got := struct {
		Preparing           int
		Waiting, TimedOut   []string
		NextCheck           time.Time
		Reason              string
		Deleted, Terminated int
	}{p.Lifecycle.Preparing, names(p.Lifecycle.Waiting), names(p.Lifecycle.TimedOut), p.Lifecycle.NextCheck,
		p.Holds[0].Reason, len(p.Delete), 0}
	want := got
	want.Preparing, want.Waiting, want.TimedOut = 1, []string{"c0"}, []string{"d0"}
	want.NextCheck = now.Add(9 * time.Minute)
	want.Reason = "1 replica waits on pre-delete hooks: c0 on drain, lb until 2026-11-30T12:09:00Z"
	want.Deleted = 1
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lifecycle status (-want +got):\n%s", diff)
	}
}

// TestGate_LaunchGate checks that a replica whose launch gate is closed
// is neither ready nor available, and that one still gated when its
// start-up window ends is unhealthy, and replaced.
func TestGate_LaunchGate(t *testing.T) {
	now := replicagen.Now()
	rs := running(3, now.Add(-time.Hour))
	rs[0].LaunchGated = true
	if got := replicaset.Summarize(rs, 0, now); got.Ready != 2 || got.Available != 2 {
		t.Errorf("summarize with a gate closed: %+v, want 2 ready and available", got)
	}
	rm := &replicaset.Remediation{StartupWindow: 10 * time.Minute}
	for i := range rs {
		rs[i].Health = &replicaset.Health{Started: now.Add(-time.Hour), Healthy: true}
	}
	spec := replicaset.Spec{Desired: 3, Remediation: rm, Lifecycle: &replicaset.Lifecycle{}}
	p, err := checkedCompute(t, spec, rs, deletionpolicy.Oldest{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(p.Replace); !cmp.Equal(got, []string{"a0"}) || p.Health.Unhealthy != 1 {
		t.Errorf("a gate closed past the start-up window: replace %v, unhealthy %d; want [a0], 1: %v", got, p.Health.Unhealthy, p)
	}
	// Its replacement is a failed one (it never served), so that a gate
	// that never opens backs off and suspends, not a clone loop.
	if h := (replicaset.History{}).After(p, p.Create, nil, 0, now); h.Failures != 1 {
		t.Errorf("replacing a replica whose gate never opened: %d failures recorded, want 1", h.Failures)
	}
	rs[0].Health.Started = now.Add(-5 * time.Minute)
	p, err = checkedCompute(t, spec, rs, deletionpolicy.Oldest{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Replace) != 0 || !p.Health.NextCheck.Equal(now.Add(5*time.Minute)) {
		t.Errorf("a gate closed within the start-up window: replace %v, next check %v; want none, %v", names(p.Replace), p.Health.NextCheck, now.Add(5*time.Minute))
	}
}

// TestGate_CapTrimsTimedOut: deletions over the per-pass cap stay
// preparing, and are not reported as timed out (deleted) yet.
func TestGate_CapTrimsTimedOut(t *testing.T) {
	now := replicagen.Now()
	rs := running(4, now)
	for i := 2; i < 4; i++ {
		rs[i].Preparing = &replicaset.Preparing{Since: now.Add(-time.Hour), Hooks: []string{"drain"}}
	}
	p, err := checkedCompute(t, replicaset.Spec{Desired: 2, MaxPerPass: 1, Lifecycle: &replicaset.Lifecycle{}}, rs, deletionpolicy.Oldest{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if got := [2][]string{names(p.Delete), names(p.Lifecycle.TimedOut)}; !cmp.Equal(got, [2][]string{{"c0"}, {"c0"}}) || p.Deferred != 1 {
		t.Errorf("delete, timed out = %v, deferred %d; want [c0] [c0], 1", got, p.Deferred)
	}
}

func TestGate_Invalid(t *testing.T) {
	now := replicagen.Now()
	rs := running(2, now)
	rs[1].Preparing = &replicaset.Preparing{Hooks: []string{"drain"}}
	_, err := checkedCompute(t, replicaset.Spec{Desired: 2, Lifecycle: &replicaset.Lifecycle{}}, rs, deletionpolicy.Oldest{}, now)
	if !errors.Is(err, replicaset.ErrInvalidReplica) {
		t.Errorf("preparing with no start: %v, want ErrInvalidReplica", err)
	}
	for _, lc := range []replicaset.Lifecycle{{Timeout: -1}} {
		if _, err := checkedCompute(t, replicaset.Spec{Lifecycle: &lc}, nil, deletionpolicy.Oldest{}, now); !errors.Is(err, replicaset.ErrInvalidSpec) {
			t.Errorf("lifecycle %+v: %v, want ErrInvalidSpec", lc, err)
		}
	}
}

// TestDrain checks the owner's deletion against a naive model: every
// replica leaves; one that never ran at once, the others through the gate.
func TestDrain(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		now := replicagen.Now()
		rs := replicagen.Replicas(12).Draw(t, "replicas")
		lc := &replicaset.Lifecycle{Timeout: 10 * time.Minute, Abandon: rapid.Bool().Draw(t, "abandon")}
		for i := range rs {
			rs[i].Preparing = nil
			if !rs[i].Deleting && rapid.Bool().Draw(t, "preparing") {
				var hooks []string
				if rapid.Bool().Draw(t, "held") {
					hooks = []string{"drain"}
				}
				rs[i].Preparing = &replicaset.Preparing{Since: now.Add(-time.Duration(rapid.IntRange(0, 20).Draw(t, "ago")) * time.Minute), Hooks: hooks}
			}
		}
		p, err := replicaset.Drain(replicaset.Spec{Desired: rapid.IntRange(0, 12).Draw(t, "desired"), Lifecycle: lc}, rs, now)
		if err != nil {
			t.Fatal(err)
		}
		var want struct{ del, prep, wait, abandoned, deleting []string }
		for _, r := range rs {
			switch {
			case r.Deleting:
				want.deleting = append(want.deleting, r.Name)
			case r.Preparing == nil && (r.Phase == replicaset.PhasePending || r.Phase == replicaset.PhaseFailed):
				want.del = append(want.del, r.Name)
			case r.Preparing == nil:
				want.prep = append(want.prep, r.Name)
			case len(r.Preparing.Hooks) == 0:
				want.del = append(want.del, r.Name)
			case now.Before(r.Preparing.Since.Add(10 * time.Minute)):
				want.wait = append(want.wait, r.Name)
			case !lc.Abandon:
				want.del = append(want.del, r.Name)
			default:
				want.abandoned = append(want.abandoned, r.Name)
			}
		}
		got := struct{ del, prep, wait, abandoned, deleting []string }{names(p.Delete), names(p.Prepare),
			names(p.Lifecycle.Waiting), names(p.Lifecycle.Abandoned), names(p.Deleting)}
		sortAll := func(ss ...[]string) {
			for _, s := range ss {
				slices.Sort(s)
			}
		}
		sortAll(want.del, want.prep, want.wait, want.abandoned, want.deleting, got.del, got.prep, got.wait, got.abandoned, got.deleting)
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(want), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("drain (-want +got):\n%s\nplan %v", diff, p)
		}
	})
}

// TestLifecycle_Hold checks the rule for one preparation at its edges.
func TestLifecycle_Hold(t *testing.T) {
	now := replicagen.Now()
	for _, tc := range []struct {
		abandon bool
		ago     time.Duration
		hooks   []string
		want    replicaset.HoldKind
	}{
		{false, time.Hour, nil, 0}, // released
		{false, time.Minute, []string{"drain"}, replicaset.HoldPreDelete},
		{false, 10 * time.Minute, []string{"drain"}, 0}, // timed out: the boundary goes
		{true, 10*time.Minute - time.Nanosecond, []string{"drain"}, replicaset.HoldPreDelete},
		{true, time.Hour, []string{"drain"}, replicaset.HoldHookAbandoned},
		{true, time.Hour, nil, 0}, // released after it was abandoned
	} {
		lc := replicaset.Lifecycle{Timeout: 10 * time.Minute, Abandon: tc.abandon}
		since := now.Add(-tc.ago)
		got, until := lc.Hold(replicaset.Preparing{Since: since, Hooks: tc.hooks}, now)
		if got != tc.want || !until.Equal(since.Add(10*time.Minute)) {
			t.Errorf("abandon %v, %v ago, hooks %v: %v until %v, want %v until %v",
				tc.abandon, tc.ago, tc.hooks, got, until, tc.want, since.Add(10*time.Minute))
		}
	}
}

// TestLifecycle_NextCheckOfNewPreparations: a pass whose plan begins
// preparations asks to be looked at again when their hooks time out, as a
// pass with replicas already waiting does; a caller that requeues only at
// NextCheck would otherwise never come back. A nil Lifecycle holds
// nothing.
func TestLifecycle_NextCheckOfNewPreparations(t *testing.T) {
	now := replicagen.Now()
	rs := []replicaset.Replica{
		{Name: "a", UID: "uid-a", Phase: replicaset.PhaseRunning, Ready: true},
		{Name: "b", UID: "uid-b", Phase: replicaset.PhaseRunning, Ready: true},
	}
	lc := &replicaset.Lifecycle{Timeout: 10 * time.Minute}
	p, err := checkedCompute(t, replicaset.Spec{Desired: 1, Lifecycle: lc}, rs, deletionpolicy.Oldest{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Prepare) != 1 || !p.Lifecycle.NextCheck.Equal(now.Add(10*time.Minute)) {
		t.Errorf("plan %v, NextCheck %v; want one replica preparing and NextCheck %v", p, p.Lifecycle.NextCheck, now.Add(10*time.Minute))
	}
	var none *replicaset.Lifecycle
	if by, at := none.Hold(replicaset.Preparing{Since: now, Hooks: []string{"drain"}}, now); by != 0 || !at.IsZero() {
		t.Errorf("a nil Lifecycle: %v until %v, want no hold", by, at)
	}
}
