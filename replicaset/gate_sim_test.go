package replicaset_test

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/internal/replicagen"
	"github.com/replicakit/replicakit/replicaset"
)

// gateWorld is a platform with lifecycle hooks: a replica that begins to
// prepare gets hooks that release it late, never, or in any order; a
// replica's launch gate opens late or never; guests hang now and then;
// deletions and creates take passes. It plays a binding, observing health
// and recording preparations.
type gateWorld struct {
	spec    replicaset.Spec
	set     []replicaset.Replica
	now     time.Time
	serial  int
	healthy bool // hooks release at once, gates open, nothing hangs
	// release is when each hook of each preparing replica releases it;
	// zero: never.
	release map[string]map[string]time.Time
	hung    map[string]bool
	gateAt  map[string]time.Time // when a launch gate opens; zero: never
}

const gateStep = time.Minute

var hookNames = []string{"drain", "lb", "backup"}

// observe brings the replicas up to w.now, as a binding reads them.
func (w *gateWorld) observe() {
	for i := range w.set {
		r := &w.set[i]
		if p := r.Preparing; p != nil {
			p.Hooks = slices.DeleteFunc(slices.Clone(p.Hooks), func(h string) bool {
				at := w.release[r.Name][h]
				return w.healthy || !at.IsZero() && !w.now.Before(at)
			})
		}
		if at, ok := w.gateAt[r.Name]; ok && (w.healthy || !at.IsZero() && !w.now.Before(at)) {
			r.LaunchGated = false
		}
		if w.healthy {
			w.hung[r.Name] = false
		}
		if r.Health != nil {
			ok := r.Ready && !w.hung[r.Name]
			h := r.Health.Observe(ok, "Hung", w.now)
			r.Health = &h
		}
	}
}

// apply carries p out and lets a step pass.
func (w *gateWorld) apply(t *rapid.T, p replicaset.Plan) {
	idx := map[string]int{}
	for i, r := range w.set {
		idx[r.Name] = i
	}
	for _, r := range p.Prepare {
		rr := &w.set[idx[r.Name]]
		var hooks []string
		w.release[r.Name] = map[string]time.Time{}
		for _, h := range hookNames {
			if rapid.Bool().Draw(t, "hook") {
				hooks = append(hooks, h)
				var at time.Time
				if w.healthy || rapid.IntRange(0, 3).Draw(t, "releases") > 0 {
					at = w.now.Add(time.Duration(rapid.IntRange(0, 15).Draw(t, "after")) * gateStep)
				}
				w.release[r.Name][h] = at
			}
		}
		rr.Preparing = &replicaset.Preparing{Since: w.now, Hooks: hooks}
	}
	for _, r := range p.Cancel {
		w.set[idx[r.Name]].Preparing = nil
	}
	for _, r := range p.Delete {
		w.set[idx[r.Name]].Deleting = true
	}
	for _, r := range p.Restart {
		h := w.set[idx[r.Name]].Health.Restart(w.now)
		w.set[idx[r.Name]].Health = &h
		w.hung[r.Name] = false
	}
	w.spec.History = w.spec.History.After(p, p.Create, nil, 0, w.now)
	for range p.Create {
		w.serial++
		name := fmt.Sprintf("n%d", w.serial)
		r := replicaset.Replica{Name: name, UID: "uid-" + name, CreatedAt: w.now,
			Phase: replicaset.PhasePending, Revision: w.spec.Revision}
		if w.spec.Lifecycle != nil && rapid.Bool().Draw(t, "gated") {
			r.LaunchGated = true
			var at time.Time
			if rapid.IntRange(0, 3).Draw(t, "gateOpens") > 0 {
				at = w.now.Add(time.Duration(rapid.IntRange(1, 12).Draw(t, "gateAfter")) * gateStep)
			}
			w.gateAt[name] = at
		}
		if w.spec.Remediation != nil {
			r.Health = &replicaset.Health{Started: w.now}
		}
		w.set = append(w.set, r)
	}
	w.now = w.now.Add(gateStep)
	var next []replicaset.Replica
	for _, r := range w.set {
		if r.Deleting && (w.healthy || rapid.IntRange(0, 2).Draw(t, "deleteFinishes") > 0) {
			continue
		}
		if !r.Deleting && r.Phase == replicaset.PhasePending && (w.healthy || rapid.IntRange(0, 2).Draw(t, "comesUp") == 0) {
			r.Phase, r.Ready, r.ReadySince = replicaset.PhaseRunning, true, w.now
		}
		if !w.healthy && r.Phase == replicaset.PhaseRunning && rapid.IntRange(0, 30).Draw(t, "hangs") == 0 {
			w.hung[r.Name] = true
		}
		next = append(next, r)
	}
	w.set = next
}

// checkGate checks that p passes every deletion through the gate.
func checkGate(t *rapid.T, spec replicaset.Spec, rs []replicaset.Replica, p replicaset.Plan, now time.Time) {
	t.Helper()
	byName := map[string]replicaset.Replica{}
	for _, r := range rs {
		byName[r.Name] = r
	}
	seen := map[string]string{}
	mark := func(what string, list []replicaset.Replica) {
		for _, r := range list {
			if prev, ok := seen[r.Name]; ok {
				t.Fatalf("%s is in both %s and %s: %v", r.Name, prev, what, p)
			}
			seen[r.Name] = what
		}
	}
	mark("Delete", p.Delete)
	mark("Prepare", p.Prepare)
	mark("Cancel", p.Cancel)
	lc := spec.Lifecycle
	if limit := cmp.Or(spec.MaxPerPass, replicaset.DefaultMaxPerPass); len(p.Delete) > limit || len(p.Prepare) > limit {
		t.Fatalf("%d deletes and %d preparations, over the cap %d: %v", len(p.Delete), len(p.Prepare), limit, p)
	}
	for _, d := range p.Delete {
		r := byName[d.Name]
		switch {
		case r.Deleting || r.Protected:
			t.Fatalf("deletes %s: deleting %v, protected %v", r.Name, r.Deleting, r.Protected)
		case r.Preparing == nil && r.Phase == replicaset.PhaseRunning:
			t.Fatalf("deletes running %s without preparing it first: %v", r.Name, p)
		case r.Preparing == nil && r.Phase == replicaset.PhaseUnknown:
			t.Fatalf("deletes %s (phase unknown) without preparing it first: %v", r.Name, p)
		case r.Preparing != nil && len(r.Preparing.Hooks) > 0 && now.Before(r.Preparing.Since.Add(lc.Timeout)):
			t.Fatalf("deletes %s while hooks %v hold it until %v (now %v)", r.Name, r.Preparing.Hooks, r.Preparing.Since.Add(lc.Timeout), now)
		case r.Preparing != nil && len(r.Preparing.Hooks) > 0 && lc.Abandon:
			t.Fatalf("deletes %s, abandoned by hooks %v", r.Name, r.Preparing.Hooks)
		}
	}
	for _, d := range p.Prepare {
		if r := byName[d.Name]; r.Preparing != nil || r.Deleting || r.Protected {
			t.Fatalf("prepares %s: preparing %v, deleting %v, protected %v", r.Name, r.Preparing != nil, r.Deleting, r.Protected)
		}
	}
	for _, d := range p.Cancel {
		if r := byName[d.Name]; r.Preparing == nil || r.Deleting {
			t.Fatalf("cancels %s, which is not preparing", r.Name)
		}
	}
	// A scale-up takes back replicas it would keep before it creates.
	live := len(p.Cancel)
	for _, r := range rs {
		if !r.Deleting && r.Preparing == nil {
			live++
		}
	}
	if p.Create == 0 || live >= spec.Desired {
		return
	}
	for _, r := range rs {
		if r.Preparing == nil || r.Deleting || seen[r.Name] != "" {
			continue
		}
		// With Remediation, one unhealthy, asked for, or whose launch gate
		// stayed closed past its start-up window is remediated, not kept.
		healthy := spec.Remediation == nil || r.Health == nil || !r.Health.Unhealthy && !r.Health.RemediateNow &&
			!(r.LaunchGated && !r.Health.Started.IsZero() && !now.Before(r.Health.Started.Add(cmp.Or(spec.Remediation.StartupWindow, replicaset.DefaultStartupWindow))))
		if r.Phase == replicaset.PhaseRunning && r.Ready && !r.MarkedForDeletion &&
			(r.Revision == "" || r.Revision == spec.Revision) && healthy {
			t.Fatalf("creates %d with %d live of %d, yet leaves %s preparing: %v", p.Create, live, spec.Desired, r.Name, p)
		}
	}
}

// plannerView is how the rules see a set with hooks once p's
// cancellations are made: preparing replicas are leaving, as if being
// deleted. viewPlan is p as deletions in that view.
func plannerView(rs []replicaset.Replica, p replicaset.Plan) ([]replicaset.Replica, replicaset.Plan) {
	cancelled := map[string]bool{}
	for _, r := range p.Cancel {
		cancelled[r.Name] = true
	}
	view := slices.Clone(rs)
	for i := range view {
		if view[i].Preparing != nil && !cancelled[view[i].Name] {
			view[i].Deleting = true
		}
	}
	vp := p
	vp.Delete = slices.Clone(p.Prepare)
	for _, d := range p.Delete {
		if !slices.ContainsFunc(rs, func(r replicaset.Replica) bool { return r.Name == d.Name && r.Preparing != nil }) {
			vp.Delete = append(vp.Delete, d)
		}
	}
	vp.Holds = slices.DeleteFunc(slices.Clone(p.Holds), func(h replicaset.Hold) bool {
		return h.By == replicaset.HoldPreDelete || h.By == replicaset.HoldHookAbandoned
	})
	return view, vp
}

// TestGate_Passes drives a set with lifecycle hooks pass after pass
// through hooks that release late, never or out of order, launch gates,
// hangs, scaling and rollouts (A→B→A) mid-way, with and without
// remediation, and checks every pass: no replica is deleted while a hook
// holds it before its timeout (nor after it, with Abandon), every
// deletion of a replica that ran passes the gate, no replica is chosen
// twice, and the rollout bounds hold with preparing replicas counted as
// leaving. Then hooks release at once and it checks that the set
// converges: the desired count, on the wanted revision, none preparing,
// and a plan that stays empty.
func TestGate_Passes(t *testing.T) { rapid.Check(t, gatePasses) }

// gatePasses is TestGate_Passes's property, which FuzzGate_Passes drives
// from the fuzzer's bytes.
func gatePasses(t *rapid.T) {
	w := &gateWorld{now: replicagen.Now(), release: map[string]map[string]time.Time{},
		hung: map[string]bool{}, gateAt: map[string]time.Time{}}
	w.spec = replicaset.Spec{
		Desired:    rapid.IntRange(0, 10).Draw(t, "desired"),
		MaxPerPass: rapid.IntRange(0, 3).Draw(t, "maxPerPass"),
		Revision:   "A",
		Strategy:   strategyGen().Draw(t, "strategy"),
		Lifecycle: &replicaset.Lifecycle{
			Timeout: time.Duration(rapid.IntRange(1, 20).Draw(t, "timeout")) * gateStep,
			Abandon: rapid.Bool().Draw(t, "abandon"),
		},
	}
	w.spec.Strategy.ZoneByZone = false
	if rapid.Bool().Draw(t, "remediation") {
		w.spec.Remediation = &replicaset.Remediation{Restart: rapid.Bool().Draw(t, "restart")}
	}
	for i := range rapid.IntRange(0, 10).Draw(t, "initial") {
		name := fmt.Sprintf("o%d", i)
		r := replicaset.Replica{Name: name, UID: "uid-" + name, CreatedAt: w.now,
			Phase: replicaset.PhaseRunning, Ready: true, ReadySince: w.now, Revision: "A",
			Protected: rapid.IntRange(0, 9).Draw(t, "protected") == 0}
		if w.spec.Remediation != nil {
			r.Health = &replicaset.Health{Started: w.now, Healthy: true}
		}
		w.set = append(w.set, r)
	}
	_, policy := replicagen.Policy(t)
	pass := func(what string, i int) replicaset.Plan {
		w.observe()
		p, err := checkedCompute(t, w.spec, w.set, policy, w.now)
		if err != nil {
			t.Fatalf("%s pass %d: %v", what, i, err)
		}
		checkGate(t, w.spec, w.set, p, w.now)
		view, vp := plannerView(w.set, p)
		if w.spec.Remediation == nil {
			checkPass(t, w.spec, view, vp)
		} else if c := tallyOf(w.spec, view); c.old > 0 {
			// Healing replaces within the surge too, counting
			// preparing replicas as leaving.
			lim := w.spec.Strategy.Limits(w.spec.Desired)
			if total := c.live + c.deleting; total+p.Create > max(total, w.spec.Desired+lim.Surge) {
				t.Fatalf("%d replicas (counting deleting and preparing) + %d creates, over desired %d + surge %d: %v",
					total, p.Create, w.spec.Desired, lim.Surge, p)
			}
		}
		return p
	}
	for i := range rapid.IntRange(0, 40).Draw(t, "passes") {
		if rapid.IntRange(0, 4).Draw(t, "change") == 0 {
			switch rapid.IntRange(0, 3).Draw(t, "what") {
			case 0:
				w.spec.Revision = map[string]string{"A": "B", "B": "A"}[w.spec.Revision]
			case 1:
				w.spec.Desired = rapid.IntRange(0, 10).Draw(t, "desired")
			case 2:
				w.spec.Strategy.Paused = !w.spec.Strategy.Paused
			case 3:
				if len(w.set) > 0 { // protected (or not) mid-way, preparing or not
					i := rapid.IntRange(0, len(w.set)-1).Draw(t, "protect")
					w.set[i].Protected = !w.set[i].Protected
				}
			}
		}
		w.apply(t, pass("faulty", i))
	}

	w.healthy = true
	w.spec.Strategy.Paused, w.spec.Strategy.Type = false, replicaset.RollingUpdate
	for i := range w.set {
		w.set[i].Protected = false
	}
	w.spec.History = replicaset.History{}
	lim := w.spec.Strategy.Limits(w.spec.Desired)
	for i := 0; ; i++ {
		p := pass("healthy", i)
		waiting := slices.ContainsFunc(p.Holds, func(h replicaset.Hold) bool { return h.By != replicaset.HoldPartition })
		if p.IsZero() && len(p.Deleting) == 0 && !waiting {
			c := tallyOf(w.spec, w.set)
			preparing := slices.ContainsFunc(w.set, func(r replicaset.Replica) bool { return r.Preparing != nil })
			if c.live != w.spec.Desired || c.old > lim.Partition || preparing {
				t.Fatalf("settled with %d live (desired %d), %d old (partition %d), preparing %v: %v",
					c.live, w.spec.Desired, c.old, lim.Partition, preparing, p)
			}
			return
		}
		if i > 200 {
			t.Fatalf("not converged after %d passes: %v\nset %+v", i, p, w.set)
		}
		w.apply(t, p)
	}

}
