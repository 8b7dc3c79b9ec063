package vmprovider_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vmprovidertest"
)

// clock is a test's time: the Fake's clock (creation and boot times) and
// the now each pass is given.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// healSet returns a Set of owner "uid-heal" on a Fake that keeps the
// clock's time, healing with rm, named web-0, web-1, and so on.
func healSet(c *clock, rm *replicaset.Remediation) (*vmprovider.Set, *vmprovidertest.Fake) {
	f := &vmprovidertest.Fake{Now: c.now}
	return &vmprovider.Set{
		Provider: f,
		Template: vmprovider.Spec{Owner: vmprovider.Owner{UID: "uid-heal"}, PowerOn: true},
		Policy:   deletionpolicy.Oldest{},
		Names:    naming.Indexed{Base: "web"},
		Spec:     replicaset.Spec{Remediation: rm},
	}, f
}

// scale runs one pass at the clock's time, failing the test on an error.
func scale(t *testing.T, s *vmprovider.Set, c *clock, desired int) replicaset.Plan {
	t.Helper()
	plan, _, err := s.Scale(context.Background(), desired, c.t)
	if err != nil {
		t.Fatalf("Scale at +%v: %v", c.t.Sub(now), err)
	}
	return plan
}

func replicaNames(rs []replicaset.Replica) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

// TestSet_HealResetsThenReplaces: one VM of 6 hangs. The Set resets it
// the moment its unhealthy window ends (not a pass earlier), and, as the
// reset did not bring its guest back, replaces it the moment the start-up
// window the reset gave it ends: one reset, one replacement, 6 VMs.
func TestSet_HealResetsThenReplaces(t *testing.T) {
	c := &clock{now}
	s, f := healSet(c, &replicaset.Remediation{Restart: true})
	scale(t, s, c, 6)
	c.t = c.t.Add(time.Minute)
	scale(t, s, c, 6)
	if err := f.SetHeartbeat("web-2", vmprovider.HeartbeatRed); err != nil {
		t.Fatal(err)
	}
	hung := c.t
	p := scale(t, s, c, 6)
	if want := hung.Add(replicaset.DefaultUnhealthyWindow); !p.Health.NextCheck.Equal(want) || p.Health.Unhealthy != 1 {
		t.Fatalf("the pass that saw web-2 hang: %+v; want 1 unhealthy, the next check at %v", p.Health, want)
	}
	c.t = p.Health.NextCheck.Add(-time.Second)
	if p := scale(t, s, c, 6); len(p.Restart)+len(p.Replace) > 0 || len(f.Resets()) > 0 {
		t.Fatalf("a second before the window ends: %v; resets %v", p, f.Resets())
	}
	c.t = c.t.Add(time.Second)
	p = scale(t, s, c, 6)
	if diff := cmp.Diff([]string{"web-2"}, replicaNames(p.Restart)); diff != "" || len(p.Delete) > 0 {
		t.Fatalf("when the window ends: %v; restarts (-want +got):\n%s", p, diff)
	}
	if diff := cmp.Diff([]string{"web-2"}, f.Resets()); diff != "" {
		t.Fatalf("the Fake's resets (-want +got):\n%s", diff)
	}
	restarted := c.t
	c.t = restarted.Add(replicaset.DefaultStartupWindow - time.Second)
	if p := scale(t, s, c, 6); len(p.Restart)+len(p.Replace)+len(p.Delete) > 0 || p.Health.InFlight != 1 {
		t.Fatalf("in the start-up window the reset gave: %v, health %+v; want nothing done, 1 in flight", p, p.Health)
	}
	c.t = restarted.Add(replicaset.DefaultStartupWindow)
	p = scale(t, s, c, 6)
	if diff := cmp.Diff([]string{"web-2"}, replicaNames(p.Replace)); diff != "" || p.Create != 1 || len(p.Restart) > 0 {
		t.Fatalf("when the start-up window ends: %v; replaced (-want +got):\n%s", p, diff)
	}
	got := names(t, f, "uid-heal")
	if diff := cmp.Diff([]string{"web-0", "web-1", "web-3", "web-4", "web-5", "web-6"}, got); diff != "" {
		t.Errorf("VMs after the replacement (-want +got):\n%s", diff)
	}
	c.t = c.t.Add(time.Minute)
	if p := scale(t, s, c, 6); !p.IsZero() || p.Health.Unhealthy != 0 || len(f.Resets()) != 1 {
		t.Errorf("a pass later: %v, health %+v, resets %v; want nothing to do, one reset in all", p, p.Health, f.Resets())
	}
}

// TestSet_HealStormHeld: 2 VMs of 6 hang, and the moment their window
// ends 2 more do: 4, more than MaxUnhealthy (40%: 2). That pass holds the
// 2 due (HoldTooManyUnhealthy), and for an hour of storm nothing is reset
// or replaced, every pass saying so (HealthStatus.Storm, nothing
// Allowed); when they recover, one by one, nothing is lost, then or
// later.
func TestSet_HealStormHeld(t *testing.T) {
	c := &clock{now}
	s, f := healSet(c, &replicaset.Remediation{Restart: true})
	scale(t, s, c, 6)
	c.t = c.t.Add(time.Minute)
	scale(t, s, c, 6) // sees them healthy
	before := names(t, f, "uid-heal")
	hang := func(names ...string) {
		for _, n := range names {
			if err := f.SetHeartbeat(n, vmprovider.HeartbeatRed); err != nil {
				t.Fatal(err)
			}
		}
	}
	hang("web-0", "web-2")
	p := scale(t, s, c, 6)
	c.t = p.Health.NextCheck
	hang("web-3", "web-5")
	p = scale(t, s, c, 6)
	for end := c.t.Add(time.Hour); ; c.t = c.t.Add(30 * time.Second) {
		if len(p.Restart)+len(p.Replace)+len(p.Delete) > 0 || p.Create > 0 {
			t.Fatalf("at +%v, in the storm: %v", c.t.Sub(now), p)
		}
		if !slices.ContainsFunc(p.Holds, func(h replicaset.Hold) bool { return h.By == replicaset.HoldTooManyUnhealthy && h.Waiting == 4 }) {
			t.Fatalf("at +%v, in the storm: holds %v, want HoldTooManyUnhealthy naming all 4", c.t.Sub(now), p.Holds)
		}
		if !p.Health.Storm || p.Health.Allowed != 0 || p.Health.Unhealthy != 4 {
			t.Fatalf("at +%v: health %+v, want a storm of 4, nothing allowed", c.t.Sub(now), p.Health)
		}
		if !c.t.Before(end) {
			break
		}
		p = scale(t, s, c, 6)
	}
	for _, n := range []string{"web-0", "web-2", "web-3", "web-5"} {
		if err := f.SetHeartbeat(n, vmprovider.HeartbeatGreen); err != nil {
			t.Fatal(err)
		}
		for range 4 { // a minute between recoveries
			c.t = c.t.Add(15 * time.Second)
			if p := scale(t, s, c, 6); len(p.Restart)+len(p.Replace)+len(p.Delete) > 0 || p.Create > 0 {
				t.Fatalf("at +%v, as the storm ends: %v", c.t.Sub(now), p)
			}
		}
	}
	c.t = c.t.Add(time.Hour)
	if p := scale(t, s, c, 6); !p.IsZero() || p.Health.Unhealthy != 0 {
		t.Errorf("an hour after the storm: %v, health %+v; want nothing to do", p, p.Health)
	}
	if diff := cmp.Diff(before, names(t, f, "uid-heal")); diff != "" || len(f.Resets()) > 0 {
		t.Errorf("VMs lost to the storm (-before +after):\n%s; resets %v", diff, f.Resets())
	}
}

// TestSet_HealBadTemplateSuspends: under ReadyWhenGuestHeartbeat, one VM
// of 6 hangs and every VM made since never shows a heartbeat (a template
// gone bad). The hung VM is replaced, then each replacement that never
// became healthy, each later than the one before by the doubling backoff,
// until MaxFailures (3) replacements in a row failed: then remediation is
// suspended, and says so. The creates number 6, one for the hung VM and
// one for each failure, however long the Set runs; with a Lifecycle too,
// where each replaced VM prepares a pass before it is deleted (the
// replacement is carried out when it prepares: counting only deletes
// counted no failure at all, and cloned for ever).
func TestSet_HealBadTemplateSuspends(t *testing.T) {
	for _, hooks := range []bool{false, true} {
		t.Run(map[bool]string{false: "without hooks", true: "with hooks"}[hooks], func(t *testing.T) {
			testHealBadTemplateSuspends(t, hooks)
		})
	}
}

func testHealBadTemplateSuspends(t *testing.T, hooks bool) {
	c := &clock{now}
	rm := &replicaset.Remediation{StartupWindow: time.Minute, Backoff: 5 * time.Minute, MaxFailures: 3}
	s, f := healSet(c, rm)
	s.Readiness = vmprovider.ReadyWhenGuestHeartbeat
	if hooks {
		s.Lifecycle = &vmprovider.Lifecycle{} // no PreDelete: released at once
	}
	created := 0
	pass := func() replicaset.Plan {
		plan, res, err := s.Scale(context.Background(), 6, c.t)
		if err != nil {
			t.Fatalf("Scale at +%v: %v", c.t.Sub(now), err)
		}
		created += len(res.Created)
		return plan
	}
	pass()
	for _, n := range names(t, f, "uid-heal") {
		if err := f.SetHeartbeat(n, vmprovider.HeartbeatGreen); err != nil { // the good template's guests come up
			t.Fatal(err)
		}
	}
	c.t = c.t.Add(time.Minute)
	pass()
	if err := f.SetHeartbeat("web-4", vmprovider.HeartbeatRed); err != nil {
		t.Fatal(err)
	}
	var replacedAt []time.Time
	var last replicaset.Plan
	for end := c.t.Add(6 * time.Hour); c.t.Before(end); c.t = c.t.Add(30 * time.Second) {
		last = pass()
		if len(last.Replace) > 0 {
			replacedAt = append(replacedAt, c.t)
		}
	}
	if created != 6+1+rm.MaxFailures || len(replacedAt) != 1+rm.MaxFailures {
		t.Fatalf("%d creates and %d replacements over 6 hours; want 6 + 1 + MaxFailures %d creates, the hung VM's replacement and one per failure",
			created, len(replacedAt), rm.MaxFailures)
	}
	for k := 2; k < len(replacedAt); k++ {
		if gap, backoff := replacedAt[k].Sub(replacedAt[k-1]), rm.Backoff<<(k-2); gap < backoff {
			t.Errorf("replacement %d came %v after the one before, within the backoff %v", k, gap, backoff)
		}
	}
	if !last.Health.Suspended || !slices.ContainsFunc(last.Holds, func(h replicaset.Hold) bool { return h.By == replicaset.HoldSuspended }) {
		t.Errorf("after 6 hours: %v, health %+v; want remediation suspended, saying so", last, last.Health)
	}
	if got := len(names(t, f, "uid-heal")); got != 6 {
		t.Errorf("%d VMs, want 6", got)
	}
	// A mended template: the failures were another template's, so
	// remediation goes on.
	tmpl := s.Template
	tmpl.CPUs++
	s.SetTemplate(tmpl)
	if p := pass(); p.Health.Suspended || len(p.Replace) == 0 {
		t.Errorf("on a new template: %v, health %+v; want remediation going on, not suspended", p, p.Health)
	}
}

// noReset hides the Fake's Reset, as a wrapper that embeds the Provider
// interface would.
type noReset struct{ vmprovider.Provider }

// TestSet_HealRefusesRestartWithoutResetter: a Remediation that restarts
// first, with a Provider that cannot reset (itself, or an endpoint's),
// is refused as an invalid spec, and Status says so; without Restart the
// same Provider heals by replacing.
func TestSet_HealRefusesRestartWithoutResetter(t *testing.T) {
	ctx := context.Background()
	for name, p := range map[string]vmprovider.Provider{
		"wrapper":  noReset{&vmprovidertest.Fake{}},
		"endpoint": &vmprovider.Endpoints{Providers: map[string]vmprovider.Provider{"east": &vmprovidertest.Fake{}, "west": noReset{&vmprovidertest.Fake{}}}, Default: "east"},
	} {
		c := &clock{now}
		s, _ := healSet(c, &replicaset.Remediation{Restart: true})
		s.Provider = p
		_, _, err := s.Scale(ctx, 2, c.t)
		if !errors.Is(err, vmprovider.ErrInvalidSpec) {
			t.Errorf("%s: Scale = %v, want ErrInvalidSpec", name, err)
		}
		if _, err := s.Status(ctx, c.t); !errors.Is(err, vmprovider.ErrRefused) || !errors.Is(err, vmprovider.ErrInvalidSpec) {
			t.Errorf("%s: Status = %v, want ErrRefused and ErrInvalidSpec", name, err)
		}
		s.Spec.Remediation.Restart = false
		if _, _, err := s.Scale(ctx, 2, c.t); err != nil {
			t.Errorf("%s: without Restart, Scale = %v", name, err)
		}
	}
}

// TestSet_HealResetFails: a reset that fails is in Scale's error, and the
// VM stays due: the next pass resets it.
func TestSet_HealResetFails(t *testing.T) {
	c := &clock{now}
	s, f := healSet(c, &replicaset.Remediation{Restart: true})
	scale(t, s, c, 3)
	c.t = c.t.Add(time.Minute)
	scale(t, s, c, 3)
	if err := f.SetHeartbeat("web-1", vmprovider.HeartbeatRed); err != nil {
		t.Fatal(err)
	}
	scale(t, s, c, 3)
	c.t = c.t.Add(replicaset.DefaultUnhealthyWindow)
	f.Fail = func(op, _ string) error {
		if op == "reset" {
			return errors.New("vCenter: task failed")
		}
		return nil
	}
	plan, _, err := s.Scale(context.Background(), 3, c.t)
	if err == nil || len(plan.Restart) != 1 || len(f.Resets()) > 0 {
		t.Fatalf("a pass whose reset fails: %v, %v, resets %v; want the restart planned, its failure in the error", plan, err, f.Resets())
	}
	f.Fail = nil
	c.t = c.t.Add(30 * time.Second)
	plan = scale(t, s, c, 3)
	if diff := cmp.Diff([]string{"web-1"}, f.Resets()); diff != "" || len(plan.Restart) != 1 {
		t.Errorf("the pass after a failed reset: %v; resets (-want +got):\n%s", plan, diff)
	}
}

// TestSet_HealDeleteFailsIsNoFailure: a VM that never became healthy is
// due for replacement, but its delete fails. That replacement was not
// carried out, so it is no failed replacement: with MaxFailures 1,
// remediation is not suspended, and the next pass replaces the VM (and
// only then suspends, that replacement having failed).
func TestSet_HealDeleteFailsIsNoFailure(t *testing.T) {
	c := &clock{now}
	s, f := healSet(c, &replicaset.Remediation{StartupWindow: time.Minute, MaxFailures: 1})
	s.Readiness = vmprovider.ReadyWhenGuestHeartbeat // the Fake's gray heartbeat is never healthy
	scale(t, s, c, 1)
	c.t = c.t.Add(time.Minute)
	f.Fail = func(op, _ string) error {
		if op == "delete" {
			return errors.New("vCenter: task failed")
		}
		return nil
	}
	plan, res, err := s.Scale(context.Background(), 1, c.t)
	if err == nil || len(plan.Replace) != 1 || len(res.Deleted) > 0 {
		t.Fatalf("the pass whose delete fails: %v, %+v, %v; want web-0 replaced in the plan, its delete failed", plan, res, err)
	}
	f.Fail = nil
	c.t = c.t.Add(30 * time.Second)
	plan = scale(t, s, c, 1)
	if diff := cmp.Diff([]string{"web-0"}, replicaNames(plan.Replace)); diff != "" || plan.Health.Suspended {
		t.Fatalf("the pass after a failed delete: %v, health %+v; want web-0 replaced, not suspended (-want +got):\n%s", plan, plan.Health, diff)
	}
	c.t = c.t.Add(2 * time.Minute)
	if plan = scale(t, s, c, 1); !plan.Health.Suspended || len(plan.Replace) > 0 {
		t.Errorf("once the replacement never became healthy: %v, health %+v; want suspended", plan, plan.Health)
	}
}

// TestSet_HealHungIsNotReady: with Remediation, a VM whose guest hung (a
// red heartbeat, powered on) is not ready under ReadyWhenPoweredOn, in
// Status as in the plan; without Remediation it counts as ready, as ever.
func TestSet_HealHungIsNotReady(t *testing.T) {
	ctx := context.Background()
	for _, healing := range []bool{true, false} {
		c := &clock{now}
		var rm *replicaset.Remediation
		if healing {
			rm = &replicaset.Remediation{}
		}
		s, f := healSet(c, rm)
		scale(t, s, c, 3)
		if err := f.SetHeartbeat("web-0", vmprovider.HeartbeatRed); err != nil {
			t.Fatal(err)
		}
		st, err := s.Status(ctx, c.t)
		if err != nil {
			t.Fatal(err)
		}
		want := 2
		if !healing {
			want = 3
		}
		if st.Ready != want {
			t.Errorf("healing %v: %d ready with web-0 hung, want %d", healing, st.Ready, want)
		}
	}
}
