package replicaset_test

import (
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/internal/replicagen"
	"github.com/replicakit/replicakit/replicaset"
)

// healthGen draws a replica's health near replicagen.Now, nil one time in
// four.
func healthGen(t *rapid.T, label string) *replicaset.Health {
	if rapid.IntRange(0, 3).Draw(t, label+"Nil") == 0 {
		return nil
	}
	at := func(l string) time.Time {
		if rapid.IntRange(0, 5).Draw(t, label+l+"Zero") == 0 {
			return time.Time{}
		}
		return replicagen.Now().Add(time.Duration(rapid.IntRange(-1800, 0).Draw(t, label+l)) * time.Second)
	}
	return &replicaset.Health{
		Unhealthy:    rapid.Bool().Draw(t, label+"Unhealthy"),
		Since:        at("Since"),
		Started:      at("Started"),
		Healthy:      rapid.Bool().Draw(t, label+"Healthy"),
		Restarted:    rapid.IntRange(0, 3).Draw(t, label+"Restarted") == 0,
		Skip:         rapid.IntRange(0, 7).Draw(t, label+"Skip") == 0,
		RemediateNow: rapid.IntRange(0, 9).Draw(t, label+"Now") == 0,
	}
}

// remediationGen draws a policy: windows of 1 to 10 minutes or the
// defaults, guards unset or small.
func remediationGen(t *rapid.T) *replicaset.Remediation {
	minutes := func(l string) time.Duration {
		return time.Duration(rapid.IntRange(0, 10).Draw(t, l)) * time.Minute
	}
	amount := func(l string) replicaset.Amount {
		switch rapid.IntRange(0, 2).Draw(t, l) {
		case 0:
			return replicaset.Amount{}
		case 1:
			return replicaset.Count(rapid.IntRange(0, 4).Draw(t, l+"Count"))
		}
		return replicaset.Percent(rapid.IntRange(0, 100).Draw(t, l+"Percent"))
	}
	return &replicaset.Remediation{
		StartupWindow:   minutes("startup"),
		UnhealthyWindow: minutes("unhealthy"),
		Restart:         rapid.Bool().Draw(t, "restart"),
		MaxUnhealthy:    amount("maxUnhealthy"),
		MaxInFlight:     amount("maxInFlight"),
		Backoff:         minutes("backoff"),
		MaxFailures:     rapid.IntRange(0, 4).Draw(t, "maxFailures"),
	}
}

// healCase draws a spec with a remediation policy and a set of replicas
// with health.
func healCase(t *rapid.T) (replicaset.Spec, []replicaset.Replica) {
	spec := replicagen.Spec().Draw(t, "spec")
	spec.Desired = rapid.IntRange(0, 12).Draw(t, "desiredSmall")
	spec.Remediation = remediationGen(t)
	if rapid.Bool().Draw(t, "history") {
		spec.History = replicaset.History{
			Failures: rapid.IntRange(0, 5).Draw(t, "failures"),
			Last:     replicagen.Now().Add(time.Duration(rapid.IntRange(-1800, 0).Draw(t, "last")) * time.Second),
		}
		if rapid.Bool().Draw(t, "stormBefore") {
			spec.History.Storm = replicagen.Now().Add(time.Duration(rapid.IntRange(-1800, 0).Draw(t, "storm")) * time.Second)
		}
		spec.History.Storming = rapid.IntRange(0, 3).Draw(t, "storming") == 0
	}
	rs := replicagen.Replicas(16).Draw(t, "replicas")
	for i := range rs {
		rs[i].Health = healthGen(t, "health")
	}
	return spec, rs
}

// naiveHealth is the Self-healing rules written plainly: when r falls due
// (zero: never), and whether it counts as unhealthy now.
func naiveHealth(rm replicaset.Remediation, storm time.Time, r replicaset.Replica, now time.Time) (due time.Time, unhealthy bool) {
	startup, window := rm.StartupWindow, rm.UnhealthyWindow
	if startup == 0 {
		startup = replicaset.DefaultStartupWindow
	}
	if window == 0 {
		window = replicaset.DefaultUnhealthyWindow
	}
	h := replicaset.Health{}
	if r.Health != nil {
		h = *r.Health
	}
	if r.Phase == replicaset.PhaseFailed {
		due, unhealthy = now, true
	} else if !h.Started.IsZero() {
		healthyNow := r.Ready && !h.Unhealthy
		if !h.Healthy && !healthyNow {
			due = h.Started.Add(startup)
			unhealthy = !now.Before(due)
		}
		if h.Healthy && h.Unhealthy {
			unhealthy = true
			if !h.Since.IsZero() {
				due = h.Since.Add(window)
				if storm.After(h.Since) {
					due = storm.Add(window)
				}
			}
		}
	}
	if h.RemediateNow {
		due = now
	}
	return due, unhealthy
}

// TestHealing_Guards checks single passes against the naive rules: only
// replicas due are remediated, none opted out, none in an unreachable
// zone; never more than MaxInFlight allows; none but those asked for past
// the storm, zone, suspension and backoff guards; replacements deleted,
// restarts only first and only with Restart; the surge and per-pass caps
// kept; NextCheck the earliest window still running; and a pass with
// nothing due plans what it would without remediation.
func TestHealing_Guards(t *testing.T) { rapid.Check(t, healingGuards) }

// healingGuards is TestHealing_Guards' property, which FuzzHealing_Guards
// also runs.
func healingGuards(t *rapid.T) {
	spec, rs := healCase(t)
	now := replicagen.Now()
	if rapid.IntRange(0, 4).Draw(t, "partition") == 0 {
		spec.Unreachable = []string{rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "unreachable")}
	}
	policy := deletionpolicy.Random{}
	p, err := checkedCompute(t, spec, rs, policy, now)
	if err != nil {
		t.Fatalf("Compute: %v", err)
	}
	rm := *spec.Remediation
	known := map[string]bool{}
	unhealthy, inFlight, recovered, heldByStorm := 0, 0, false, 0
	unhealthyIn, liveIn := map[string]int{}, map[string]int{}
	var next, nextSpell time.Time // the first start-up and unhealthy windows to end
	for _, r := range rs {
		if slices.Contains(spec.Unreachable, r.Zone) {
			continue
		}
		h := replicaset.Health{}
		if r.Health != nil {
			h = *r.Health
		}
		stormEnd := spec.History.Storm
		if spec.History.Storming {
			stormEnd = now
		}
		due, bad := naiveHealth(rm, stormEnd, r, now)
		if r.Deleting {
			if h.Unhealthy || h.Restarted || r.Phase == replicaset.PhaseFailed {
				inFlight++
			}
			continue
		}
		if h.Healthy && !h.Started.Before(spec.History.Last) {
			recovered = true
		}
		known[r.Name] = !due.IsZero() && !now.Before(due)
		if h.Restarted && !due.IsZero() && now.Before(due) {
			inFlight++
		}
		liveIn[r.Zone]++
		if bad {
			unhealthy++
			unhealthyIn[r.Zone]++
			if !h.Skip && !h.RemediateNow && r.Phase != replicaset.PhaseFailed {
				heldByStorm++
			}
		}
		if !due.IsZero() && now.Before(due) {
			spell := r.Phase != replicaset.PhaseFailed && h.Healthy && h.Unhealthy && !h.Since.IsZero() && !h.Started.IsZero() && !h.RemediateNow
			if spell && (nextSpell.IsZero() || due.Before(nextSpell)) {
				nextSpell = due
			}
			if !spell && (next.IsZero() || due.Before(next)) {
				next = due
			}
		}
	}
	desired := spec.Desired
	if len(spec.Unreachable) > 0 {
		desired = -1 // the known part's desired count is Compute's to say
	}
	maxFailures := rm.MaxFailures
	if maxFailures == 0 {
		maxFailures = replicaset.DefaultMaxFailures
	}
	failures := spec.History.Failures
	if recovered && failures > 0 {
		failures = 0
	}
	if suspended := failures >= maxFailures; len(spec.Unreachable) == 0 && p.Health.Suspended != suspended {
		t.Fatalf("Suspended %v, want %v: %d failures in a row (recovered %v), MaxFailures %d", p.Health.Suspended, suspended,
			spec.History.Failures, recovered, maxFailures)
	}
	remediated := append(slices.Clone(p.Restart), p.Replace...)
	for _, r := range remediated {
		h := replicaset.Health{}
		if r.Health != nil {
			h = *r.Health
		}
		switch {
		case !known[r.Name]:
			t.Fatalf("%s remediated, but it is not due (or unknown, or being deleted): %v", r.Name, p)
		case h.Skip:
			t.Fatalf("%s remediated though it opted out: %v", r.Name, p)
		case h.RemediateNow:
			continue
		case p.Health.Suspended:
			t.Fatalf("%s remediated while suspended: %v", r.Name, p)
		case 2*unhealthyIn[r.Zone] > liveIn[r.Zone] && unhealthyIn[r.Zone] >= 2 && r.Zone != "":
			t.Fatalf("%s remediated in zone %s, where %d of %d are unhealthy: %v", r.Name, r.Zone, unhealthyIn[r.Zone], liveIn[r.Zone], p)
		}
		if desired >= 0 {
			limit := replicaset.DefaultMaxUnhealthy
			if rm.MaxUnhealthy.IsSet() {
				limit = rm.MaxUnhealthy
			}
			if maxU := max(ofDown(limit, desired), 1); unhealthy > maxU {
				t.Fatalf("%s remediated with %d unhealthy, over MaxUnhealthy %d: %v", r.Name, unhealthy, maxU, p)
			}
		}
	}
	if desired >= 0 {
		limit := replicaset.DefaultMaxInFlight
		if rm.MaxInFlight.IsSet() {
			limit = rm.MaxInFlight
		}
		if room := max(max(ofUp(limit, desired), 1)-inFlight, 0); len(remediated) > room {
			t.Fatalf("%d remediations with %d in flight, MaxInFlight %d: %v", len(remediated), inFlight, ofUp(limit, desired), p)
		}
	}
	for _, r := range p.Restart {
		if !rm.Restart || r.Health != nil && r.Health.Restarted || r.Phase == replicaset.PhaseFailed {
			t.Fatalf("%s restarted, but Restart is %v, it was restarted already or it failed: %v", r.Name, rm.Restart, p)
		}
		if slices.ContainsFunc(p.Delete, func(d replicaset.Replica) bool { return d.Name == r.Name }) {
			t.Fatalf("%s both restarted and deleted: %v", r.Name, p)
		}
	}
	for _, r := range p.Replace {
		if !slices.ContainsFunc(p.Delete, func(d replicaset.Replica) bool { return d.Name == r.Name }) {
			t.Fatalf("%s replaced but not deleted: %v", r.Name, p)
		}
		if r.Protected {
			t.Fatalf("%s replaced, though protected from scale-in: %v", r.Name, p)
		}
	}
	limit := spec.MaxPerPass
	if limit == 0 {
		limit = replicaset.DefaultMaxPerPass
	}
	if len(p.Delete) > limit || p.Create > limit {
		t.Fatalf("plan over the per-pass cap %d: %v", limit, p)
	}
	if len(spec.Unreachable) == 0 && !spec.ReplaceDeleting && len(p.Replace) > 0 {
		surge := spec.Strategy.Limits(spec.Desired).Surge
		if p.Create > 0 && len(rs)+p.Create > max(spec.Desired+surge, len(rs)) {
			t.Fatalf("%d replicas and %d creates, over Desired %d + MaxSurge %d: %v", len(rs), p.Create, spec.Desired, surge, p)
		}
	}
	if !p.Health.Storm && !nextSpell.IsZero() && (next.IsZero() || nextSpell.Before(next)) {
		next = nextSpell // in a storm no unhealthy window ends: they run from its end
	}
	if p.Health.Storm {
		waiting := 0
		if i := slices.IndexFunc(p.Holds, func(h replicaset.Hold) bool { return h.By == replicaset.HoldTooManyUnhealthy }); i >= 0 {
			waiting = p.Holds[i].Waiting
		}
		if len(spec.Unreachable) == 0 && (waiting < heldByStorm || waiting > unhealthy) {
			t.Fatalf("a storm holds %d replicas, want every unhealthy one (at least the %d neither skipped, asked for nor failed, at most the %d unhealthy): %v",
				waiting, heldByStorm, unhealthy, p)
		}
	}
	if b := p.Health.BackoffUntil; !b.IsZero() && (next.IsZero() || b.Before(next)) {
		if !b.After(now) {
			t.Fatalf("BackoffUntil %v, not after now %v", b, now)
		}
		next = b // status says when the backoff ends
	}
	if got := p.Health.NextCheck; len(spec.Unreachable) == 0 && !got.Equal(next) {
		t.Fatalf("NextCheck %v, want %v, the earliest window still running or the backoff's end", got, next)
	}
	if len(remediated) == 0 {
		plain := spec
		plain.Remediation = nil
		q, err := checkedCompute(t, plain, rs, policy, now)
		if err != nil {
			t.Fatal(err)
		}
		q.Holds, p.Holds = nil, nil
		p.Health = replicaset.HealthStatus{}
		if diff := gocmp.Diff(q, p); diff != "" {
			t.Fatalf("nothing remediated, yet the plan differs from the one without remediation (-without +with):\n%s", diff)
		}
	}
}

func ofDown(a replicaset.Amount, desired int) int {
	if s := a.String(); len(s) > 0 && s[len(s)-1] == '%' {
		var p int
		for _, c := range s[:len(s)-1] {
			p = p*10 + int(c-'0')
		}
		return p * desired / 100
	}
	var n int
	for _, c := range a.String() {
		n = n*10 + int(c-'0')
	}
	return n
}

func ofUp(a replicaset.Amount, desired int) int {
	if s := a.String(); len(s) > 0 && s[len(s)-1] == '%' {
		var p int
		for _, c := range s[:len(s)-1] {
			p = p*10 + int(c-'0')
		}
		return (p*desired + 99) / 100
	}
	return ofDown(a, desired)
}

// TestHealth_Observe runs a random sequence of health checks, with
// restarts, through Observe and Restart and compares each step with the
// rules written plainly: Healthy once a check passed since the last start,
// Restarted until then; Unhealthy and Since the first failure of the
// spell under way, for a replica that was healthy; Unhealthy with no
// Since after a failure, for one that was not.
func TestHealth_Observe(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		now := replicagen.Now()
		h := replicaset.Health{Started: now}
		var passedSinceStart, restarted, everPassed, passedBeforeRestart, failedUnstarted bool
		restarts := 0
		var spell time.Time // first failure of the spell under way, after a pass
		for step := range rapid.IntRange(1, 40).Draw(t, "steps") {
			now = now.Add(time.Duration(rapid.IntRange(1, 120).Draw(t, "gap")) * time.Second)
			if rapid.IntRange(0, 9).Draw(t, "restart") == 0 {
				h = h.Restart(now)
				restarts++
				passedBeforeRestart = everPassed
				passedSinceStart, restarted, spell, failedUnstarted = false, true, time.Time{}, false
				continue
			}
			ok := rapid.Bool().Draw(t, "ok")
			h = h.Observe(ok, "Hung", now)
			switch {
			case ok:
				passedSinceStart, restarted, spell, failedUnstarted = true, false, time.Time{}, false
			case !passedSinceStart:
				failedUnstarted = true
			case spell.IsZero():
				spell = now
			}
			if ok {
				everPassed = true
			}
			want := replicaset.Health{Healthy: passedSinceStart, Restarted: restarted, Unhealthy: !spell.IsZero() || failedUnstarted, Since: spell,
				HealthyBefore: restarts > 0 && passedBeforeRestart}
			got := replicaset.Health{Healthy: h.Healthy, Restarted: h.Restarted, Unhealthy: h.Unhealthy, Since: h.Since, HealthyBefore: h.HealthyBefore}
			if diff := gocmp.Diff(want, got); diff != "" {
				t.Fatalf("step %d (ok %v): health differs (-want +got):\n%s", step, ok, diff)
			}
		}
	})
}

// TestHistory_AfterRemediations: which replacements are failures, and
// what clears them.
func TestHistory_AfterRemediations(t *testing.T) {
	now := replicagen.Now()
	last := now.Add(-10 * time.Minute)
	spec := replicaset.Spec{Desired: 5, Remediation: &replicaset.Remediation{},
		History: replicaset.History{Failures: 2, Last: last}}
	healthy := func(name string, started time.Time) replicaset.Replica {
		return replicaset.Replica{Name: name, Phase: replicaset.PhaseRunning, Ready: true,
			Health: &replicaset.Health{Started: started, Healthy: true}}
	}
	for _, c := range []struct {
		name      string
		replicas  []replicaset.Replica
		recovered bool
	}{
		{"a replacement made in the pass that failed, healthy since", []replicaset.Replica{healthy("a", last)}, true},
		{"one started after, healthy since", []replicaset.Replica{healthy("a", last.Add(time.Second))}, true},
		{"only replicas started before", []replicaset.Replica{healthy("a", last.Add(-time.Second))}, false},
	} {
		p, err := checkedCompute(t, spec, c.replicas, deletionpolicy.Random{}, now)
		if err != nil {
			t.Fatal(err)
		}
		if p.Health.Recovered != c.recovered {
			t.Errorf("%s: Recovered %v, want %v", c.name, p.Health.Recovered, c.recovered)
		}
		if h := spec.History.After(p, p.Create, nil, 0, now); (h.Failures == 0) != c.recovered {
			t.Errorf("%s: history after %+v", c.name, h)
		}
	}

	failed := func(h replicaset.Health) replicaset.Plan {
		return replicaset.Plan{Replace: []replicaset.Replica{{Name: "x", Health: &h}}}
	}
	for _, c := range []struct {
		name   string
		health replicaset.Health
		failed bool
	}{
		{"never healthy since it started", replicaset.Health{Started: last}, true},
		{"restarted, never healthy before either", replicaset.Health{Started: last}.Restart(now), true},
		{"healthy, then hung: not a failed replacement", replicaset.Health{Started: last, Healthy: true, Unhealthy: true, Since: last}, false},
		{"healthy, hung, restarted, still hung", replicaset.Health{Started: last, Healthy: true, Unhealthy: true}.Restart(now), false},
	} {
		h := replicaset.History{}.After(failed(c.health), 0, nil, 0, now)
		if got := h.Failures == 1; got != c.failed {
			t.Errorf("%s: failure %v, want %v", c.name, got, c.failed)
		}
	}
}
