package replicaset_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/internal/replicagen"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/replicasettest"
)

// TestAllFeatures_Check: one pass from any input with every feature drawn
// at once keeps every invariant replicasettest.Check states, and the plan
// is the same for the same input in any order (doc.go, Invariants,
// Determinism: the plan's lists are all in an order Compute decides).
func TestAllFeatures_Check(t *testing.T) { rapid.Check(t, allFeaturesCheck) }

// allFeaturesCheck is TestAllFeatures_Check's property, which
// FuzzAllFeatures_Check drives from the fuzzer's bytes.
func allFeaturesCheck(t *rapid.T) {
	in := replicasettest.Inputs().Draw(t, "input")
	_, policy := replicagen.Policy(t)
	in.Policy = policy
	p, err := replicaset.Compute(in.Spec, in.Replicas, policy, in.Now)
	if err != nil {
		t.Fatalf("Compute of a valid input: %v", err)
	}
	if err := replicasettest.Check(in, p); err != nil {
		t.Fatalf("plan %v:\n%v", p, err)
	}
	again, err := checkedCompute(t, in.Spec, rapid.Permutation(in.Replicas).Draw(t, "shuffled"), policy, in.Now)
	if err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff(p, again, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("plan depends on input order (-first +shuffled):\n%s", diff)
	}
}

// allWorld is a platform under every feature at once, playing a binding:
// deletes take a pass or two, creates come up Pending and then Running
// and ready (behind a launch gate that opens late or never, now and then)
// or never show up, preparations record up to three hooks that each
// release it late, never or out of order, updates in place record the new
// revision (or fail, after which the replica reports InPlaceNone),
// restarts record Health.Restart, guests hang and clones fail, and zones
// stop answering and answer again. Replicas in an unreachable zone are
// frozen: nothing is observed of them, nothing happens to them.
type allWorld struct {
	spec    replicaset.Spec
	set     []replicaset.Replica
	now     time.Time
	serial  int
	settled bool // no faults: hooks release, gates open, nothing hangs or fails
	kind    map[string]replicaset.InPlace
	// release is when each hook of each preparing replica releases it;
	// zero: never.
	release map[string]map[string]time.Time
	gateAt  map[string]time.Time // when a launch gate opens; zero: never
	hung    map[string]bool
}

const allStep = time.Minute

// allHooks are the hooks a preparation may wait on.
var allHooks = []string{"drain", "lb", "backup"}

// newAllWorld draws a world: a spec with every field drawn, and either
// replicas in every state or, one time in three, a set at rest (running,
// ready and healthy on v1, spread over the listed zones, each with the
// in-place kind its hardware allows) whose spec wants v2: a rollout, in
// place or not, from the start.
func newAllWorld(t *rapid.T) *allWorld {
	w := &allWorld{now: replicasettest.Now(), spec: replicasettest.Spec().Draw(t, "spec"), kind: map[string]replicaset.InPlace{},
		release: map[string]map[string]time.Time{}, gateAt: map[string]time.Time{}, hung: map[string]bool{}}
	if !chanceOf(t, 3, "atRest") {
		w.set = replicasettest.Replicas(8).Draw(t, "replicas")
		return w
	}
	w.spec.Revision, w.spec.Desired = "v2", rapid.IntRange(0, 12).Draw(t, "desiredAtRest")
	since := w.now.Add(-time.Hour)
	for i := range rapid.IntRange(0, 12).Draw(t, "atRestCount") {
		name := fmt.Sprintf("o%d", i)
		r := replicaset.Replica{Name: name, UID: "uid-" + name, CreatedAt: since, Phase: replicaset.PhaseRunning,
			Ready: true, ReadySince: since, Revision: "v1", InPlace: replicaset.InPlace(rapid.IntRange(0, 2).Draw(t, "kind")),
			Protected: chanceOf(t, 10, "protected")}
		if len(w.spec.Zones) > 0 {
			r.Zone = w.spec.Zones[i%len(w.spec.Zones)]
		}
		if w.spec.Remediation != nil {
			r.Health = &replicaset.Health{Started: since, Healthy: true}
		}
		w.kind[name] = r.InPlace
		w.set = append(w.set, r)
	}
	return w
}

func (w *allWorld) unknown(r *replicaset.Replica) bool {
	return r.Unreachable || slices.Contains(w.spec.Unreachable, r.Zone)
}

// observe brings the replicas up to w.now, as a binding reads them.
func (w *allWorld) observe() {
	for i := range w.set {
		r := &w.set[i]
		if w.unknown(r) {
			continue
		}
		if k, ok := w.kind[r.Name]; ok {
			r.InPlace = k
		}
		if p := r.Preparing; p != nil && len(p.Hooks) > 0 {
			hooks := slices.DeleteFunc(slices.Clone(p.Hooks), func(h string) bool {
				at := w.release[r.Name][h]
				return w.settled || !at.IsZero() && !w.now.Before(at)
			})
			if len(hooks) < len(p.Hooks) {
				r.Preparing = &replicaset.Preparing{Since: p.Since, Update: p.Update, Hooks: hooks}
			}
		}
		if at, ok := w.gateAt[r.Name]; r.LaunchGated && (w.settled || ok && !at.IsZero() && !w.now.Before(at)) {
			r.LaunchGated = false
		}
		if r.Health != nil && r.Phase != replicaset.PhasePending {
			if r.Health.Started.IsZero() {
				r.Health.Started = w.now
			}
			h := r.Health.Observe(r.Ready && !w.hung[r.Name] && r.Phase == replicaset.PhaseRunning, "Hung", w.now)
			if w.settled {
				h.RemediateNow, h.Skip = false, false
			}
			r.Health = &h
		}
	}
}

// apply carries p out and lets a step pass.
func (w *allWorld) apply(t *rapid.T, p replicaset.Plan) {
	idx := map[string]int{}
	for i, r := range w.set {
		idx[r.Name] = i
	}
	prepare := func(rs []replicaset.Replica, update bool) {
		for _, r := range rs {
			rr := &w.set[idx[r.Name]]
			rr.Preparing = &replicaset.Preparing{Since: w.now, Update: update}
			w.release[r.Name] = map[string]time.Time{}
			for _, h := range allHooks {
				if !rapid.Bool().Draw(t, "hooked") {
					continue
				}
				rr.Preparing.Hooks = append(rr.Preparing.Hooks, h)
				var at time.Time // never
				if w.settled || !chanceOf(t, 5, "neverReleases") {
					at = w.now.Add(time.Duration(rapid.IntRange(0, 15).Draw(t, "releaseAfter")) * allStep)
				}
				w.release[r.Name][h] = at
			}
		}
	}
	prepare(p.Prepare, false)
	prepare(p.PrepareUpdate, true)
	for _, r := range p.Cancel {
		w.set[idx[r.Name]].Preparing = nil
	}
	for _, r := range p.Delete {
		w.set[idx[r.Name]].Deleting = true
	}
	for _, r := range p.Restart {
		rr := &w.set[idx[r.Name]]
		h := rr.Health.Restart(w.now)
		rr.Health, rr.Ready, rr.ReadySince = &h, false, time.Time{}
		w.hung[r.Name] = false
	}
	for _, u := range p.Update {
		rr := &w.set[idx[u.Replica.Name]]
		if !w.settled && chanceOf(t, 6, "updateFails") {
			w.kind[rr.Name] = replicaset.InPlaceNone // failed for good: the binding says so
			rr.InPlaceBlocker = "its last update failed"
			continue
		}
		rr.Revision, rr.Preparing = w.spec.Revision, nil
		if u.PowerCycle {
			rr.Ready, rr.ReadySince = false, time.Time{}
		}
	}
	created, lostIn := 0, []string(nil)
	for i := range p.Create {
		w.serial++
		name := fmt.Sprintf("n%d", w.serial)
		if !w.settled && chanceOf(t, 10, "createLost") { // the clone never shows up
			if i < len(p.CreateZones) {
				lostIn = append(lostIn, p.CreateZones[i])
			}
			continue
		}
		created++
		w.kind[name] = replicaset.InPlace(rapid.IntRange(0, 2).Draw(t, "kind"))
		r := replicaset.Replica{Name: name, UID: "uid-" + name, CreatedAt: w.now,
			Phase: replicaset.PhasePending, Revision: w.spec.Revision}
		if i < len(p.CreateZones) {
			r.Zone = p.CreateZones[i]
		}
		if w.spec.Lifecycle != nil && !w.settled && chanceOf(t, 3, "gated") {
			r.LaunchGated = true
			w.gateAt[name] = time.Time{}
			if !chanceOf(t, 4, "gateNeverOpens") {
				w.gateAt[name] = w.now.Add(time.Duration(rapid.IntRange(1, 12).Draw(t, "gateAfter")) * allStep)
			}
		}
		if w.spec.Remediation != nil {
			r.Health = &replicaset.Health{}
		}
		w.set = append(w.set, r)
	}
	// The zones backing off and the failing creates are the world's
	// faults, drawn once, and those of the creates lost; After keeps the
	// remediations' part.
	zb, cf := w.spec.History.ZoneBackoff, w.spec.History.CreatesFailing
	w.spec.History = w.spec.History.After(p, created, lostIn, 0, w.now)
	if created == p.Create {
		w.spec.History.ZoneBackoff, w.spec.History.CreatesFailing = zb, cf
	}
	w.now = w.now.Add(allStep)
	var next []replicaset.Replica
	for _, r := range w.set {
		switch {
		case w.unknown(&r):
		case r.Deleting && (w.settled || !chanceOf(t, 3, "deleteLingers")):
			continue
		case r.Deleting:
		case r.Phase == replicaset.PhasePending && !w.settled && chanceOf(t, 8, "cloneFails"):
			r.Phase = replicaset.PhaseFailed
		case !r.Ready && r.Phase != replicaset.PhaseFailed && (w.settled || chanceOf(t, 2, "comesUp")):
			r.Phase, r.Ready, r.ReadySince = replicaset.PhaseRunning, true, w.now
		case !w.settled && r.Phase == replicaset.PhaseRunning && chanceOf(t, 25, "hangs"):
			w.hung[r.Name] = true
		}
		next = append(next, r)
	}
	w.set = next
}

// chanceOf draws true one time in n.
func chanceOf(t *rapid.T, n int, label string) bool { return rapid.IntRange(1, n).Draw(t, label) == 1 }

// settle ends every fault: zones and replicas answer, nothing backs off or fails,
// hooks release, gates open, guests are healthy, and the owner lifts
// protection, pauses and OnDelete.
func (w *allWorld) settle() {
	w.settled = true
	w.spec.Unreachable, w.spec.History.ZoneBackoff, w.spec.History.CreatesFailing = nil, nil, false
	w.spec.Strategy.Paused, w.spec.Strategy.Type = false, replicaset.RollingUpdate
	if w.spec.Strategy.MaxSurge.String() == "0" || w.spec.Strategy.MaxSurge.String() == "0%" {
		if w.spec.Strategy.MaxUnavailable.String() == "0" || w.spec.Strategy.MaxUnavailable.String() == "0%" {
			w.spec.Strategy.MaxUnavailable = replicaset.Amount{} // OnDelete allowed both zero
		}
	}
	w.spec.History = replicaset.History{}
	for i := range w.set {
		r := &w.set[i]
		r.Protected, r.MarkedForDeletion, r.Unreachable = false, false, false
		w.hung[r.Name] = false
		if (r.Phase != replicaset.PhaseRunning || !r.Ready) && !r.Deleting {
			r.Phase, r.Ready, r.ReadySince = replicaset.PhaseRunning, true, w.now
		}
		if r.Ready && r.ReadySince.IsZero() {
			r.ReadySince = w.now // a healthy binding knows when it became ready
		}
		if r.Health != nil {
			r.Health = &replicaset.Health{Started: r.Health.Started, Healthy: true}
		}
	}
}

// TestAllFeatures_Passes drives a world with every feature drawn at once
// (replicasettest.Spec, and replicas in every state, or at rest, to start
// from) pass after pass through faults, zones and replicas that stop and start
// answering, and changes of count, revision (rollbacks included),
// strategy, pause, method and protection, and runs replicasettest.Check
// on every pass. Then the world settles, and the set must converge within
// a bounded number of passes: the desired count, none being deleted or
// preparing, no replica on an older revision beyond the partition but,
// under UpdateInPlaceOnly, those that cannot be changed in place; and a
// fixed point.
func TestAllFeatures_Passes(t *testing.T) { rapid.Check(t, allFeaturesPasses) }

// allFeaturesPasses is TestAllFeatures_Passes's property, which
// FuzzAllFeatures_Passes drives from the fuzzer's bytes.
func allFeaturesPasses(t *rapid.T) {
	w := newAllWorld(t)
	_, policy := replicagen.Policy(t)
	pass := func(what string, i int) replicaset.Plan {
		w.observe()
		in := replicasettest.Input{Spec: w.spec, Replicas: w.set, Now: w.now, Policy: policy}
		p, err := replicaset.Compute(in.Spec, in.Replicas, policy, in.Now)
		if err != nil {
			t.Fatalf("%s pass %d: %v", what, i, err)
		}
		if err := replicasettest.Check(in, p); err != nil {
			t.Fatalf("%s pass %d: plan %v:\n%v\nspec %+v\nset %+v", what, i, p, err, w.spec, w.set)
		}
		return p
	}
	for i := range rapid.IntRange(0, 30).Draw(t, "passes") {
		if chanceOf(t, 4, "change") {
			switch rapid.IntRange(0, 7).Draw(t, "what") {
			case 0: // a new revision, or back to an older one
				w.spec.Revision = rapid.SampledFrom([]string{"", "v1", "v2", "v3"}).Draw(t, "revision")
			case 1:
				w.spec.Desired = rapid.IntRange(0, 8).Draw(t, "desired")
			case 2:
				w.spec.Strategy.Paused = !w.spec.Strategy.Paused
			case 3:
				w.spec.Strategy.Method = replicaset.UpdateMethod(rapid.IntRange(0, 2).Draw(t, "method"))
			case 4:
				z := rapid.SampledFrom([]string{"a", "b", "c", "x"}).Draw(t, "zone")
				if j := slices.Index(w.spec.Unreachable, z); j >= 0 {
					w.spec.Unreachable = slices.Delete(slices.Clone(w.spec.Unreachable), j, j+1)
				} else {
					w.spec.Unreachable = append(slices.Clone(w.spec.Unreachable), z)
				}
			case 5:
				if len(w.set) > 0 { // protected (or not) mid-way, preparing or not
					j := rapid.IntRange(0, len(w.set)-1).Draw(t, "protect")
					w.set[j].Protected = !w.set[j].Protected
				}
			case 6: // surge, unavailability, partition, zone by zone, OnDelete
				w.spec.Strategy = replicasettest.Strategy().Draw(t, "strategy")
			case 7: // one replica stops answering, or answers again
				if len(w.set) > 0 {
					j := rapid.IntRange(0, len(w.set)-1).Draw(t, "unreachable")
					w.set[j].Unreachable = !w.set[j].Unreachable
				}
			}
		}
		w.apply(t, pass("faulty", i))
	}

	w.settle()
	lim := w.spec.Strategy.Limits(w.spec.Desired)
	for i := 0; ; i++ {
		p := pass("settled", i)
		waiting := slices.ContainsFunc(p.Holds, func(h replicaset.Hold) bool {
			return h.By != replicaset.HoldPartition && h.By != replicaset.HoldInPlaceOnly
		})
		if p.IsZero() && len(p.Deleting) == 0 && !waiting {
			live, olds, stuck, preparing := 0, 0, 0, 0
			for _, r := range w.set {
				live++
				if w.spec.Lifecycle != nil && r.Preparing != nil {
					preparing++
				}
				if w.spec.Revision != "" && r.Revision != "" && r.Revision != w.spec.Revision {
					olds++
					if r.InPlace == replicaset.InPlaceNone || r.InPlace == replicaset.InPlacePowerCycle && lim.Unavailable == 0 {
						stuck++
					}
				}
			}
			if w.spec.Strategy.Method != replicaset.UpdateInPlaceOnly {
				stuck = 0
			}
			if live != w.spec.Desired || olds > max(lim.Partition, stuck) || preparing > 0 {
				t.Fatalf("settled with %d live (desired %d), %d old (partition %d, %d that cannot change in place), %d preparing: %v",
					live, w.spec.Desired, olds, lim.Partition, stuck, preparing, p)
			}
			if again := pass("fixed point", i); !again.IsZero() {
				t.Fatalf("a settled set plans again: %v", again)
			}
			return
		}
		if i > 300 {
			t.Fatalf("not converged after %d passes: %v", i, p)
		}
		w.apply(t, p)
	}
}
