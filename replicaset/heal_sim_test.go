package replicaset_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/internal/replicagen"
	"github.com/replicakit/replicakit/replicaset"
)

// healVM is one replica of the healing simulation, as its platform has
// it: when it was made, how long it boots, and when its guest hangs.
type healVM struct {
	name     string
	made     time.Time
	boot     time.Duration
	hangFrom time.Time // zero: never hangs
	hangTo   time.Time // zero with hangFrom set: hangs for good
	broken   bool      // never becomes healthy (a bad template)
	deleting bool
	// What a binding keeps of its health, pass to pass.
	health replicaset.Health
}

// healthyAt reports whether the VM's guest answers at t.
func (v *healVM) healthyAt(t time.Time) bool {
	if v.broken || t.Before(v.made.Add(v.boot)) {
		return false
	}
	hung := !v.hangFrom.IsZero() && !t.Before(v.hangFrom) && (v.hangTo.IsZero() || t.Before(v.hangTo))
	return !hung
}

// healWorld runs passes of Compute every step over its VMs, playing a
// binding: it observes health, carries plans out (deletes finish a pass
// later, creates boot for boot), restarts (a reset ends a hang), and keeps
// the remediation history.
type healWorld struct {
	spec     replicaset.Spec
	vms      []*healVM
	now      time.Time
	serial   int
	boot     time.Duration
	broken   bool // new VMs never become healthy
	stubborn bool // a reset does not end a hang
	// readyByPower makes every VM Ready, as a binding whose readiness is
	// power alone reports a hung guest: only health tells them apart.
	readyByPower bool
	replaced     int
	restarts     int
}

// observe updates each VM's health at w.now, as a binding would, and
// returns the replicas.
func (w *healWorld) observe() []replicaset.Replica {
	var out []replicaset.Replica
	for _, v := range w.vms {
		ok := v.healthyAt(w.now)
		v.health = v.health.Observe(ok, "Hung", w.now)
		health := v.health
		out = append(out, replicaset.Replica{Name: v.name, UID: "uid-" + v.name, CreatedAt: v.made,
			Deleting: v.deleting, Phase: replicaset.PhaseRunning, Ready: ok || w.readyByPower, Health: &health})
	}
	return out
}

// pass plans at w.now and carries the plan out.
func (w *healWorld) pass(t *rapid.T) replicaset.Plan {
	w.vms = slices.DeleteFunc(w.vms, func(v *healVM) bool { return v.deleting })
	p, err := checkedCompute(t, w.spec, w.observe(), deletionpolicy.Random{}, w.now)
	if err != nil {
		t.Fatalf("at %v: %v", w.now, err)
	}
	w.spec.History = w.spec.History.After(p, p.Create, nil, 0, w.now)
	for _, d := range p.Delete {
		for _, v := range w.vms {
			if v.name == d.Name {
				v.deleting = true
			}
		}
	}
	for _, r := range p.Restart {
		for _, v := range w.vms {
			if v.name == r.Name {
				v.made = w.now
				if !w.stubborn {
					v.hangFrom, v.hangTo = time.Time{}, time.Time{}
				}
				v.health = v.health.Restart(w.now)
			}
		}
	}
	w.replaced += len(p.Replace)
	w.restarts += len(p.Restart)
	for range p.Create {
		w.serial++
		w.vms = append(w.vms, &healVM{name: fmt.Sprintf("n%d", w.serial), made: w.now, boot: w.boot, broken: w.broken,
			health: replicaset.Health{Started: w.now}})
	}
	return p
}

// live counts the VMs not being deleted, and those healthy at w.now.
func (w *healWorld) live() (live, healthy int) {
	for _, v := range w.vms {
		if !v.deleting {
			live++
			if v.healthyAt(w.now) {
				healthy++
			}
		}
	}
	return live, healthy
}

// newHealWorld returns a world of desired healthy VMs, booted long ago.
func newHealWorld(desired int, rm *replicaset.Remediation) *healWorld {
	w := &healWorld{spec: replicaset.Spec{Desired: desired, Remediation: rm}, now: replicagen.Now(), boot: 2 * time.Minute}
	for i := range desired {
		w.vms = append(w.vms, &healVM{name: fmt.Sprintf("v%d", i), made: w.now.Add(-time.Hour), boot: w.boot,
			health: replicaset.Health{Started: w.now.Add(-time.Hour), Healthy: true}})
	}
	return w
}

const healStep = 30 * time.Second

// TestHealing_StormHealsItself: more replicas than MaxUnhealthy hang at
// once, for any time, and recover one by one within 3 minutes of each
// other: nothing is restarted or replaced, however long the storm (the
// windows of those it caught run again from its end).
func TestHealing_StormHealsItself(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		desired := rapid.IntRange(3, 12).Draw(t, "desired")
		w := newHealWorld(desired, &replicaset.Remediation{Restart: rapid.Bool().Draw(t, "restart")})
		storm := rapid.IntRange(desired*40/100+1, desired).Draw(t, "storm")
		from := w.now.Add(time.Duration(rapid.IntRange(0, 20).Draw(t, "from")) * healStep)
		to := from.Add(time.Duration(rapid.IntRange(1, 120).Draw(t, "length")) * healStep)
		for _, v := range rapid.Permutation(w.vms).Draw(t, "order")[:storm] {
			// Each recovers within 3 minutes of the others: one by one.
			v.hangFrom, v.hangTo = from, to.Add(time.Duration(rapid.IntRange(0, 6).Draw(t, "jitter"))*healStep)
		}
		for ; w.now.Before(to.Add(40 * time.Minute)); w.now = w.now.Add(healStep) {
			w.pass(t)
			if w.replaced+w.restarts > 0 {
				t.Fatalf("at +%v, in a storm of %d of %d: %d replaced, %d restarted", w.now.Sub(from), storm, desired, w.replaced, w.restarts)
			}
		}
		if live, healthy := w.live(); live != desired || healthy != desired {
			t.Fatalf("after the storm: %d live, %d healthy, want %d", live, healthy, desired)
		}
	})
}

// TestHealing_HealsWithinTheGuards: replicas hang, a few at a time, some
// briefly (a flap shorter than the window) and some for good (and, in a
// stubborn world, through a reset); new replicas boot healthy. The set
// ends with every replica healthy at its count, never having remediated a
// flap, never suspended (no replacement failed), and never with more live
// replicas plus those being deleted than Desired + MaxSurge.
func TestHealing_HealsWithinTheGuards(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		desired := rapid.IntRange(1, 10).Draw(t, "desired")
		w := newHealWorld(desired, &replicaset.Remediation{Restart: rapid.Bool().Draw(t, "restart")})
		w.stubborn = rapid.Bool().Draw(t, "stubborn")
		w.readyByPower = rapid.Bool().Draw(t, "readyByPower")
		flaps := map[string]bool{}
		// At most MaxUnhealthy hang for good, or they would be a storm
		// the guard rightly waits out for ever.
		forGood := max(desired*40/100, 1)
		for _, v := range w.vms {
			fate := rapid.IntRange(0, 3).Draw(t, "fate")
			if fate == 1 && forGood == 0 {
				fate = 0
			}
			switch fate {
			case 1: // hangs for good
				forGood--
				v.hangFrom = w.now.Add(time.Duration(rapid.IntRange(0, 60).Draw(t, "at")) * healStep)
			case 2: // flaps: hangs for less than the window
				v.hangFrom = w.now.Add(time.Duration(rapid.IntRange(0, 60).Draw(t, "at")) * healStep)
				v.hangTo = v.hangFrom.Add(time.Duration(rapid.IntRange(1, 8).Draw(t, "flap")) * healStep)
				flaps[v.name] = true
			}
		}
		surge := replicaset.DefaultMaxSurge
		end := w.now.Add(4 * time.Hour)
		for ; w.now.Before(end); w.now = w.now.Add(healStep) {
			p := w.pass(t)
			for _, r := range append(slices.Clone(p.Replace), p.Restart...) {
				if flaps[r.Name] && !r.Health.RemediateNow {
					if v := w.find(r.Name); v != nil && v.hangTo.After(w.now) {
						t.Fatalf("at %v: %s, hanging for less than the window, remediated: %v", w.now, r.Name, p)
					}
				}
			}
			if p.Health.Suspended {
				t.Fatalf("at %v: suspended, though every replacement comes up healthy: %v", w.now, p)
			}
			if n := len(w.vms); n > desired+surge {
				t.Fatalf("at %v: %d replicas live or being deleted, over %d + %d", w.now, n, desired, surge)
			}
		}
		if live, healthy := w.live(); live != desired || healthy != desired {
			t.Fatalf("after 4 hours: %d live, %d healthy, want %d (%d replaced, %d restarted)", live, healthy, desired, w.replaced, w.restarts)
		}
	})
}

// find returns the VM called name, or nil.
func (w *healWorld) find(name string) *healVM {
	for _, v := range w.vms {
		if v.name == name {
			return v
		}
	}
	return nil
}

// TestHealing_BadTemplateSuspends: one replica of a healthy set hangs for
// good, and every replica made since never becomes healthy (a template
// gone bad). The hung one is replaced, then each replacement that never
// became healthy, with backoff, until MaxFailures in a row have failed:
// then remediation is suspended, says so, and nothing loops.
func TestHealing_BadTemplateSuspends(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		desired := rapid.IntRange(3, 10).Draw(t, "desired")
		maxFailures := rapid.IntRange(1, 4).Draw(t, "maxFailures")
		w := newHealWorld(desired, &replicaset.Remediation{MaxFailures: maxFailures})
		w.broken = true
		w.readyByPower = rapid.Bool().Draw(t, "readyByPower")
		w.vms[rapid.IntRange(0, desired-1).Draw(t, "hung")].hangFrom = w.now
		var last replicaset.Plan
		for end := w.now.Add(24 * time.Hour); w.now.Before(end); w.now = w.now.Add(healStep) {
			last = w.pass(t)
		}
		if w.replaced > 1+maxFailures {
			t.Fatalf("%d replacements: the hung replica and %d that never became healthy, want at most MaxFailures %d of those",
				w.replaced, w.replaced-1, maxFailures)
		}
		if !last.Health.Suspended || !slices.ContainsFunc(last.Holds, func(h replicaset.Hold) bool { return h.By == replicaset.HoldSuspended }) {
			t.Fatalf("after a day of replicas that never become healthy: %v, health %+v; want suspended, saying so", last, last.Health)
		}
	})
}
