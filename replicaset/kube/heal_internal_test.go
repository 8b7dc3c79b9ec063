package kube

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/replicaset"
)

// TestHealth_RoundTrip: AnnotationHealth reads back every field the
// binding keeps, to the nanosecond; Skip and Now are annotations of their own.
func TestHealth_RoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		at := func(label string) time.Time {
			if !rapid.Bool().Draw(t, label+"Set") {
				return time.Time{}
			}
			return time.Unix(rapid.Int64Range(0, 1<<33).Draw(t, label), rapid.Int64Range(0, 999_999_999).Draw(t, label+"Ns")).UTC()
		}
		h := replicaset.Health{Unhealthy: rapid.Bool().Draw(t, "unhealthy"), Healthy: rapid.Bool().Draw(t, "healthy"),
			Restarted: rapid.Bool().Draw(t, "restarted"), HealthyBefore: rapid.Bool().Draw(t, "healthyBefore"),
			Since: at("since"), Started: at("started"), Reason: rapid.String().Draw(t, "reason")}
		got, ok := decodeHealth(encodeHealth(h))
		if !ok {
			t.Fatalf("%q does not read back", encodeHealth(h))
		}
		if diff := cmp.Diff(h, got); diff != "" {
			t.Fatalf("read back (-want +got):\n%s", diff)
		}
	})
}

// TestHeal_WritesOnlyChanges follows one child through passes: seen
// pending (its health written, failing, started at its creation, a
// minute ago), then running (healthy), then again unchanged (no write), then
// unhealthy (a spell starts), then still unhealthy later (no write: Since
// stays).
func TestHeal_WritesOnlyChanges(t *testing.T) {
	c := kid("web-0", notReady)
	c.obj.SetCreationTimestamp(metav1.NewTime(testNow.Add(-time.Minute)))
	created := c.obj.GetCreationTimestamp().Time.UTC().Format(time.RFC3339)
	steps := []struct {
		desc  string
		phase replicaset.Phase
		check healthCheck
		after time.Duration
		want  string // the annotation written, "" for none
	}{
		{"pending", replicaset.PhasePending, healthCheck{checked: true, reason: reasonNotReady, started: true}, 0,
			`{"started":"` + created + `","unhealthy":true,"reason":"NotReady"}`},
		{"running and ready", replicaset.PhaseRunning, healthCheck{checked: true, ok: true, started: true}, time.Minute,
			`{"started":"` + created + `","healthy":true}`},
		{"the same", replicaset.PhaseRunning, healthCheck{checked: true, ok: true, started: true}, 2 * time.Minute, ""},
		{"unhealthy", replicaset.PhaseRunning, healthCheck{checked: true, reason: "HeartbeatRed", started: true}, 3 * time.Minute,
			`{"started":"` + created + `","healthy":true,"unhealthy":true,"since":"2026-12-01T12:03:00Z","reason":"HeartbeatRed"}`},
		{"still unhealthy", replicaset.PhaseRunning, healthCheck{checked: true, reason: "HeartbeatRed", started: true}, 4 * time.Minute, ""},
	}
	for _, s := range steps {
		c.replica.Phase, c.check = s.phase, s.check
		o := observed(1, kids(c), healing(replicaset.Remediation{}), func(o *observation) { o.now = testNow.Add(s.after) })
		d := decide(o, ordinal)
		var got string
		for _, u := range d.update {
			got = u.to.GetAnnotations()[AnnotationHealth]
			c.obj = u.to // as the next pass reads it
		}
		if got != s.want {
			t.Errorf("%s: wrote %q, want %q", s.desc, got, s.want)
		}
	}
}

// TestHeal_StartClock: a child's start-up window runs from its creation
// without a Starter, whatever its phase; with one, from the time it
// gives, or from the first pass that sees it started when it gives none
// (its creation, for a child never seen before); never while it says not
// started; and never from a time after now.
func TestHeal_StartClock(t *testing.T) {
	later := testNow.Add(10 * time.Minute)
	clone := testNow.Add(-20 * time.Minute)
	for _, tt := range []struct {
		desc  string
		check healthCheck
		seen  bool // the child has an AnnotationHealth already
		want  time.Time
	}{
		{"no Starter, pending", healthCheck{checked: true, started: true, at: testNow.Add(-time.Hour)}, false, testNow.Add(-time.Hour)},
		{"a Starter's time", healthCheck{checked: true, started: true, at: clone}, true, clone},
		{"started, no time, seen", healthCheck{checked: true, started: true}, true, testNow},
		{"started, no time, first seen", healthCheck{checked: true, started: true}, false, testNow.Add(-time.Hour)},
		{"not started", healthCheck{checked: true}, true, time.Time{}},
		{"a time to come", healthCheck{checked: true, started: true, at: later}, false, testNow},
	} {
		c := kid("web-0", notReady)
		c.replica.Phase, c.check = replicaset.PhasePending, tt.check
		if tt.seen {
			c.obj.SetAnnotations(map[string]string{AnnotationHealth: `{"unhealthy":true,"reason":"NotCreated"}`})
		}
		h, _ := healthOf(c, testNow)
		if !h.Started.Equal(tt.want) {
			t.Errorf("%s: started %v, want %v", tt.desc, h.Started, tt.want)
		}
	}
}

// TestRestartLog: a restart holds the owner's passes until the cache
// shows it in the child's health, the child goes, or the TTL passes.
func TestRestartLog(t *testing.T) {
	var l restartLog
	c := kid("web-0", kept(sickFor(time.Minute)))
	l.record("ns/web", []restart{{from: c.obj}}, testNow)
	if !l.unseen("ns/web", objects(kids(c)), testNow.Add(time.Second), time.Minute) {
		t.Error("a restart the cache does not show yet does not hold the pass")
	}
	if l.unseen("ns/other", objects(kids(c)), testNow, time.Minute) {
		t.Error("another owner's pass is held")
	}
	shown := kid("web-0", kept(sickFor(time.Minute).Restart(testNow.Add(300*time.Millisecond))))
	if l.unseen("ns/web", objects(kids(shown)), testNow.Add(time.Second), time.Minute) {
		t.Error("a restart the cache shows (to the second) still holds the pass")
	}
	l.record("ns/web", []restart{{from: c.obj}}, testNow)
	if l.unseen("ns/web", nil, testNow.Add(time.Second), time.Minute) {
		t.Error("a restart of a child gone holds the pass")
	}
	l.record("ns/web", []restart{{from: c.obj}}, testNow)
	if l.unseen("ns/web", objects(kids(c)), testNow.Add(2*time.Minute), time.Minute) {
		t.Error("a restart older than the TTL holds the pass")
	}
}

// TestStamp_Exact: a time kept in an annotation reads back as it was, so
// that a window measured from it ends neither early nor late; one written
// to the second, as earlier releases did, reads back too.
func TestStamp_Exact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		at := time.Unix(rapid.Int64Range(1, 1<<33).Draw(t, "s"), rapid.Int64Range(0, 999_999_999).Draw(t, "ns")).UTC()
		if back := unstamp(stamp(at)); !back.Equal(at) {
			t.Fatalf("%v reads back as %v", at, back)
		}
		old := at.Truncate(time.Second)
		if back := unstamp(old.Format(time.RFC3339)); !back.Equal(old) {
			t.Fatalf("%v written to the second reads back as %v", old, back)
		}
	})
}

// TestHistory_ClearedOnAnotherRevision: failures counted under one
// template revision suspend remediation under it, but not under another
// (a template mended, or one rolled back to): the pass on the new
// revision plans with them cleared and writes the history so.
func TestHistory_ClearedOnAnotherRevision(t *testing.T) {
	for _, tt := range []struct {
		recorded  string
		suspended bool
	}{{"B", true}, {"A", false}} {
		suspended := encodeHistory(replicaset.History{Failures: 3, Last: testNow.Add(-time.Minute)}, tt.recorded)
		o := observed(3, kids(kid("web-0", kept(healthyFor(time.Hour)), onRev("B")), kid("web-1", kept(healthyFor(time.Hour)), onRev("B")),
			kid("web-2", kept(sickFor(10*time.Minute)), sick("HeartbeatRed"), onRev("B"))),
			healing(replicaset.Remediation{}), rolling("B"),
			func(o *observation) {
				o.owner.SetAnnotations(map[string]string{AnnotationRemediationHistory: suspended})
			})
		d := decide(o, ordinal)
		if d.plan.Health.Suspended != tt.suspended {
			t.Errorf("failures counted under %s, the template at B: suspended %v, want %v (%v)", tt.recorded, d.plan.Health.Suspended, tt.suspended, d.plan)
		}
		if !tt.suspended && (!d.historyChanged || d.history.Failures != 0 || len(d.plan.Replace) != 1) {
			t.Errorf("failures counted under %s, the template at B: history %+v (changed %v), replaced %v; want cleared and written, web-2 replaced",
				tt.recorded, d.history, d.historyChanged, d.plan.Replace)
		}
	}
}

// TestHistory_OlderTemplateIsNoFailure: a child on an older template that
// never became healthy, replaced, is no failure of the template now.
func TestHistory_OlderTemplateIsNoFailure(t *testing.T) {
	never := replicaset.Health{Started: testNow.Add(-time.Hour)}
	for _, rev := range []string{"A", "B"} {
		o := observed(3, kids(kid("web-0", kept(healthyFor(time.Hour)), onRev("B")), kid("web-1", kept(healthyFor(time.Hour)), onRev("B")),
			kid("web-2", kept(never), sick("NoAddress"), onRev(rev))),
			healing(replicaset.Remediation{}), rolling("B"))
		d := decide(o, ordinal)
		if len(d.plan.Replace) != 1 {
			t.Fatalf("web-2 on %s, never healthy: replaced %v, want it", rev, d.plan.Replace)
		}
		if want := map[string]int{"A": 0, "B": 1}[rev]; d.history.Failures != want {
			t.Errorf("web-2 on %s, never healthy, replaced under B: %d failures, want %d", rev, d.history.Failures, want)
		}
	}
}

// TestStormMessage: the storm guard's message (after the counts, which
// say how many are unhealthy) says the limit as a number and how it came
// from a percentage, rounding and floor included, and the field as the
// owner's API spells it.
func TestStormMessage(t *testing.T) {
	for _, tt := range []struct {
		max   replicaset.Amount
		field string
		want  string
	}{
		{replicaset.Amount{}, "", "more than the 2 spec.remediation.maxUnhealthy allows (40% of 5 is 2, its default), so the fault is taken to be outside the children and none is remediated"},
		{replicaset.Percent(20), "spec.healing.maxSick", "more than the 1 spec.healing.maxSick allows (20% of 5 is 1), so the fault is taken to be outside the children and none is remediated"},
		{replicaset.Count(1), "", "more than the 1 spec.remediation.maxUnhealthy allows, so the fault is taken to be outside the children and none is remediated"},
		{replicaset.Percent(10), "", "more than the 1 spec.remediation.maxUnhealthy allows (10% of 5, rounded down, is 0, and at least 1), so the fault is taken to be outside the children and none is remediated"},
	} {
		s := Spec{Replicas: 5, Remediation: &replicaset.Remediation{MaxUnhealthy: tt.max}, MaxUnhealthyField: tt.field}
		o := observed(5, kids(kid("a", notReady), kid("b", notReady), kid("c", notReady), kid("d"), kid("e")), func(o *observation) { o.spec = s })
		d := decide(o, ordinal)
		if !d.plan.Health.Storm {
			t.Fatalf("max %v: no storm: %+v", tt.max, d.plan.Health)
		}
		if got := stormMessage(s, d.plan.Health); got != tt.want {
			t.Errorf("max %v, field %q:\n got %q\nwant %q", tt.max, tt.field, got, tt.want)
		}
	}
}
