package replicaset_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/internal/replicagen"
	"github.com/replicakit/replicakit/replicaset"
)

// onA returns n running, ready replicas on revision "A" whose change to
// another revision is of the given kind.
func onA(n int, kind replicaset.InPlace, blocker string) []replicaset.Replica {
	rs := make([]replicaset.Replica, n)
	for i := range rs {
		name := fmt.Sprintf("web-%d", i)
		rs[i] = replicaset.Replica{Name: name, UID: "uid-" + name, Phase: replicaset.PhaseRunning, Ready: true,
			Revision: "A", InPlace: kind, InPlaceBlocker: blocker}
	}
	return rs
}

func TestInPlace_Plans(t *testing.T) {
	now := replicagen.Now()
	mixed := append(onA(2, replicaset.InPlaceLive, ""), onA(4, replicaset.InPlaceNone, "another template")[2:]...)
	for _, tc := range []struct {
		name     string
		strategy replicaset.Strategy
		current  []replicaset.Replica
		maxPass  int
		want     string
		reason   string // a hold's reason must contain it
	}{{
		name:     "a hot-add rollout changes every replica where it runs",
		strategy: replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible},
		current:  onA(5, replicaset.InPlaceLive, ""),
		want:     "create=0 delete=[] deleting=[] deferred=0 update=[web-0 web-1 web-2 web-3 web-4]",
	}, {
		name:     "Replace replaces, whatever the replicas could take",
		strategy: replicaset.Strategy{},
		current:  onA(3, replicaset.InPlaceLive, ""),
		want:     "create=1 delete=[] deleting=[] deferred=0 holds=[MaxSurge:2 MaxUnavailable:3]",
	}, {
		name:     "a power cycle within MaxUnavailable",
		strategy: replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible, MaxUnavailable: replicaset.Count(1)},
		current:  onA(3, replicaset.InPlacePowerCycle, "memory lowered"),
		want:     "create=0 delete=[] deleting=[] deferred=0 holds=[MaxUnavailable:2] update=[web-0~]",
		reason:   "2 replicas wait to be updated in place",
	}, {
		name:     "a power cycle MaxUnavailable 0 forbids falls back to a surge replacement",
		strategy: replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible},
		current:  onA(3, replicaset.InPlacePowerCycle, "memory lowered"),
		want:     "create=1 delete=[] deleting=[] deferred=0 holds=[MaxSurge:2 MaxUnavailable:3] fallback=[web-0 web-1 web-2]",
		reason:   "",
	}, {
		name:     "InPlaceOnly holds a power cycle MaxUnavailable 0 forbids, and says why",
		strategy: replicaset.Strategy{Method: replicaset.UpdateInPlaceOnly},
		current:  onA(2, replicaset.InPlacePowerCycle, "CPUs lowered from 4 to 2"),
		want:     "create=0 delete=[] deleting=[] deferred=0 holds=[InPlaceOnly:2]",
		reason:   "web-0 (CPUs lowered from 4 to 2, and MaxUnavailable 0 lets no replica be unavailable for a power cycle)",
	}, {
		name:     "InPlaceOnly updates what it can and holds the rest",
		strategy: replicaset.Strategy{Method: replicaset.UpdateInPlaceOnly},
		current:  mixed,
		want:     "create=0 delete=[] deleting=[] deferred=0 holds=[InPlaceOnly:2] update=[web-0 web-1]",
		reason:   "web-2 (another template); web-3 (another template)",
	}, {
		name:     "InPlaceIfPossible replaces what it cannot update",
		strategy: replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible},
		current:  mixed,
		want:     "create=1 delete=[] deleting=[] deferred=0 holds=[MaxSurge:1 MaxUnavailable:2] update=[web-0 web-1] fallback=[web-2 web-3]",
	}, {
		name:     "the partition keeps replicas on their revision",
		strategy: replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible, Partition: replicaset.Count(3)},
		current:  onA(5, replicaset.InPlaceLive, ""),
		want:     "create=0 delete=[] deleting=[] deferred=0 holds=[Partition:3] update=[web-0 web-1]",
	}, {
		name:     "the per-pass cap",
		strategy: replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible},
		current:  onA(5, replicaset.InPlaceLive, ""),
		maxPass:  2,
		want:     "create=0 delete=[] deleting=[] deferred=3 holds=[MaxPerPass:3] update=[web-0 web-1]",
	}, {
		name:     "paused: nothing changes",
		strategy: replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible, Paused: true},
		current:  onA(2, replicaset.InPlaceLive, ""),
		want:     "create=0 delete=[] deleting=[] deferred=0 holds=[Paused:2]",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			spec := replicaset.Spec{Desired: len(tc.current), Revision: "B", Strategy: tc.strategy, MaxPerPass: tc.maxPass}
			p, err := checkedCompute(t, spec, tc.current, deletionpolicy.Oldest{}, now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, p.String()); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if tc.reason != "" && !holdSays(p, tc.reason) {
				t.Errorf("no hold says %q: %+v", tc.reason, p.Holds)
			}
		})
	}
}

func holdSays(p replicaset.Plan, s string) bool {
	for _, h := range p.Holds {
		if strings.Contains(h.Reason, s) {
			return true
		}
	}
	return false
}

// TestInPlace_HotAddNeverUnavailable rolls 20 replicas that take their
// change live, pass after pass, and checks that no replica is created,
// deleted or made unavailable, and that the rollout takes one pass.
func TestInPlace_HotAddNeverUnavailable(t *testing.T) {
	rs := onA(20, replicaset.InPlaceLive, "")
	spec := replicaset.Spec{Desired: 20, Revision: "B", Strategy: replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible}}
	p, err := checkedCompute(t, spec, rs, deletionpolicy.Oldest{}, replicagen.Now())
	if err != nil {
		t.Fatal(err)
	}
	if p.Create != 0 || len(p.Delete) != 0 || len(p.Update) != 20 {
		t.Fatalf("plan %v: want 20 live updates, nothing created or deleted", p)
	}
	for _, u := range p.Update {
		if u.PowerCycle {
			t.Errorf("%s is power-cycled", u.Replica.Name)
		}
	}
	for i := range rs {
		rs[i].Revision = "B"
	}
	if p, err = checkedCompute(t, spec, rs, deletionpolicy.Oldest{}, replicagen.Now()); err != nil || !p.IsZero() {
		t.Fatalf("after the updates: %v, %v; want a zero plan", p, err)
	}
}

// TestInPlace_Gate checks a power cycle with hooks: prepared first, made
// once the hooks released it, and taken back when the set rolls back.
func TestInPlace_Gate(t *testing.T) {
	now := replicagen.Now()
	spec := replicaset.Spec{Desired: 2, Revision: "B", Lifecycle: &replicaset.Lifecycle{Timeout: time.Hour},
		Strategy: replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible, MaxUnavailable: replicaset.Count(1)}}
	rs := onA(2, replicaset.InPlacePowerCycle, "memory lowered")
	p, err := checkedCompute(t, spec, rs, deletionpolicy.Oldest{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.String(), "create=0 delete=[] deleting=[] deferred=0 holds=[MaxUnavailable:1] prepare-update=[web-0]"; got != want {
		t.Fatalf("first pass: %s, want %s", got, want)
	}
	rs[0].Preparing = &replicaset.Preparing{Since: now, Hooks: []string{"drain"}, Update: true}
	if p, _ = checkedCompute(t, spec, rs, deletionpolicy.Oldest{}, now.Add(time.Minute)); len(p.Update) != 0 ||
		!holdSays(p, "web-0 on drain until") {
		t.Fatalf("hooks hold web-0, yet: %v %+v", p, p.Holds)
	}
	rs[0].Preparing.Hooks = nil
	if p, _ = checkedCompute(t, spec, rs, deletionpolicy.Oldest{}, now.Add(2*time.Minute)); len(p.Update) != 1 ||
		p.Update[0].Replica.Name != "web-0" || !p.Update[0].PowerCycle {
		t.Fatalf("released, web-0 is not power-cycled: %v", p)
	}
	rs[0].Preparing.Hooks = []string{"drain"}
	rolledBack := spec
	rolledBack.Revision = "A" // rolled back while web-0 prepares
	if p, _ = checkedCompute(t, rolledBack, rs, deletionpolicy.Oldest{}, now.Add(3*time.Minute)); len(p.Cancel) != 1 ||
		p.Cancel[0].Name != "web-0" || len(p.Update)+len(p.Delete) != 0 {
		t.Fatalf("rolled back, web-0 is not taken back: %v", p)
	}
	// Replace now: the rules would replace web-0 within MaxUnavailable 1,
	// but its hooks were told it comes back: it is taken back first, and
	// prepares again, to leave, on a later pass.
	replace := spec
	replace.Strategy.Method = replicaset.UpdateReplace
	p, _ = checkedCompute(t, replace, rs, deletionpolicy.Oldest{}, now.Add(3*time.Minute))
	if len(p.Cancel) != 1 || p.Cancel[0].Name != "web-0" || slices.ContainsFunc(p.Delete, func(r replicaset.Replica) bool { return r.Name == "web-0" }) {
		t.Fatalf("method Replace while web-0 drains for an update: %v; want it taken back, not deleted", p)
	}
	rs[0].Preparing = nil
	if p, _ = checkedCompute(t, replace, rs, deletionpolicy.Oldest{}, now.Add(4*time.Minute)); len(p.Prepare) != 1 {
		t.Fatalf("the pass after: %v; want a replica prepared to leave", p)
	}
}

// TestInPlace_UpdateCapTimedOut: power cycles whose hooks timed out, over
// the per-pass cap, stay preparing: only the one updated is reported as
// timed out, and a hold says the other waits for the next pass (found in
// review).
func TestInPlace_UpdateCapTimedOut(t *testing.T) {
	now := replicagen.Now()
	rs := onA(3, replicaset.InPlacePowerCycle, "memory lowered")
	for i := range rs[:2] {
		rs[i].Preparing = &replicaset.Preparing{Since: now.Add(-time.Hour), Hooks: []string{"drain"}, Update: true}
	}
	spec := replicaset.Spec{Desired: 3, Revision: "B", MaxPerPass: 1, Lifecycle: &replicaset.Lifecycle{Timeout: time.Minute},
		Strategy: replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible, MaxUnavailable: replicaset.Count(2)}}
	p, err := checkedCompute(t, spec, rs, deletionpolicy.Oldest{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Update) != 1 || len(p.Lifecycle.TimedOut) != 1 || p.Lifecycle.TimedOut[0].Name != p.Update[0].Replica.Name {
		t.Errorf("plan %v, timed out %v: want one update, and it alone timed out", p, names(p.Lifecycle.TimedOut))
	}
	// The other drained replica is a power cycle under way, deferred by
	// the cap: still preparing, and no hold counts it as a replica on an
	// older revision waiting (that counted it twice, issue 42).
	if p.Deferred != 1 || p.Lifecycle.Preparing != 1 || slices.ContainsFunc(p.Holds, func(h replicaset.Hold) bool { return h.By == replicaset.HoldMaxPerPass }) {
		t.Errorf("plan %v, preparing %d: want 1 deferred, still preparing, and no MaxPerPass hold", p, p.Lifecycle.Preparing)
	}
}
