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

// ipWorld is a platform that updates replicas in place, playing a
// binding: each replica has hardware that takes a change live (hot-add),
// only when off, or not at all; power cycles take a pass or two; updates
// fail now and then, after which the binding reports the replica
// InPlaceNone; with a Lifecycle, hooks hold preparations a few passes.
type ipWorld struct {
	spec    replicaset.Spec
	set     []replicaset.Replica
	now     time.Time
	serial  int
	healthy bool
	kind    map[string]replicaset.InPlace // by name: what the replica's hardware allows
	failed  map[string]bool               // an update of it failed for good
	release map[string]time.Time          // when a preparing replica's hooks release it
}

// observe reports each replica's in-place kind, as a binding reads it,
// and releases the hooks whose time came.
func (w *ipWorld) observe() {
	for i := range w.set {
		r := &w.set[i]
		r.InPlace, r.InPlaceBlocker = w.kind[r.Name], ""
		switch {
		case w.failed[r.Name]:
			r.InPlace, r.InPlaceBlocker = replicaset.InPlaceNone, "its last update failed"
		case r.InPlace == replicaset.InPlacePowerCycle:
			r.InPlaceBlocker = "memory lowered"
		case r.InPlace == replicaset.InPlaceNone:
			r.InPlaceBlocker = "another template"
		}
		if p := r.Preparing; p != nil && len(p.Hooks) > 0 {
			if at, ok := w.release[r.Name]; w.healthy || ok && !at.IsZero() && !w.now.Before(at) {
				r.Preparing = &replicaset.Preparing{Since: p.Since, Update: p.Update}
			}
		}
	}
}

// drawKind draws a replica's hardware.
func drawKind(t *rapid.T) replicaset.InPlace {
	return replicaset.InPlace(rapid.IntRange(0, 2).Draw(t, "kind"))
}

// apply carries p out and lets a step pass.
func (w *ipWorld) apply(t *rapid.T, p replicaset.Plan) {
	idx := map[string]int{}
	for i, r := range w.set {
		idx[r.Name] = i
	}
	prepare := func(rs []replicaset.Replica, update bool) {
		for _, r := range rs {
			rr := &w.set[idx[r.Name]]
			rr.Preparing = &replicaset.Preparing{Since: w.now, Update: update}
			if rapid.Bool().Draw(t, "hooked") {
				rr.Preparing.Hooks = []string{"drain"}
				var at time.Time
				if w.healthy || rapid.IntRange(0, 4).Draw(t, "releases") > 0 {
					at = w.now.Add(time.Duration(rapid.IntRange(0, 4).Draw(t, "after")) * gateStep)
				}
				w.release[r.Name] = at
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
	for _, u := range p.Update {
		rr := &w.set[idx[u.Replica.Name]]
		if !w.healthy && rapid.IntRange(0, 5).Draw(t, "updateFails") == 0 {
			w.failed[rr.Name] = true // nothing changed; the binding says so
			continue
		}
		rr.Revision, rr.Preparing = w.spec.Revision, nil
		if u.PowerCycle {
			rr.Ready, rr.ReadySince = false, time.Time{}
		}
	}
	for range p.Create {
		w.serial++
		name := fmt.Sprintf("n%d", w.serial)
		w.kind[name] = drawKind(t)
		w.set = append(w.set, replicaset.Replica{Name: name, UID: "uid-" + name, CreatedAt: w.now,
			Phase: replicaset.PhasePending, Revision: w.spec.Revision})
	}
	w.now = w.now.Add(gateStep)
	var next []replicaset.Replica
	for _, r := range w.set {
		if r.Deleting && (w.healthy || rapid.IntRange(0, 2).Draw(t, "deleteFinishes") > 0) {
			continue
		}
		if !r.Deleting && !r.Ready && (w.healthy || rapid.IntRange(0, 2).Draw(t, "comesUp") == 0) {
			r.Phase, r.Ready, r.ReadySince = replicaset.PhaseRunning, true, w.now
		}
		next = append(next, r)
	}
	w.set = next
}

// ipView is how the planner sees a set with in-place updates once p's
// cancellations are made: replicas that prepare to leave are leaving,
// and those that prepare for a power cycle still to come are on the
// wanted revision already, not ready. A replica that prepared for an
// update that no longer applies and is not taken back was chosen to
// leave instead (its preparation stands for the deletion): it is live
// in the view, and ipPlan deletes it.
func ipView(spec replicaset.Spec, rs []replicaset.Replica, p replicaset.Plan) (view []replicaset.Replica, again map[string]bool) {
	cancelled := map[string]bool{}
	for _, r := range p.Cancel {
		cancelled[r.Name] = true
	}
	lim := spec.Strategy.Limits(spec.Desired)
	again = map[string]bool{}
	view = slices.Clone(rs)
	for i := range view {
		r := &view[i]
		switch {
		case r.Preparing == nil || r.Deleting || cancelled[r.Name]:
		case !r.Preparing.Update:
			r.Deleting = true
		case spec.Strategy.Method != replicaset.UpdateReplace && !spec.Strategy.Paused &&
			spec.Strategy.Type == replicaset.RollingUpdate && r.Revision != spec.Revision &&
			(r.InPlace == replicaset.InPlaceLive || r.InPlace == replicaset.InPlacePowerCycle && lim.Unavailable > 0):
			r.Revision, r.Ready = spec.Revision, false
		default:
			again[r.Name] = true
		}
	}
	return view, again
}

// ipPlan is p as checkPass reads it on view (ipView): preparations to
// leave are deletions, and so are deletions of replicas not already
// leaving in the view, and replicas chosen to leave again; updates and
// preparations for one are applied by afterPlan.
func ipPlan(view []replicaset.Replica, again map[string]bool, p replicaset.Plan) replicaset.Plan {
	vp := p
	vp.Delete = slices.Clone(p.Prepare)
	for _, d := range p.Delete {
		if !slices.ContainsFunc(view, func(r replicaset.Replica) bool { return r.Name == d.Name && r.Deleting }) {
			vp.Delete = append(vp.Delete, d)
		}
	}
	for _, r := range view {
		if again[r.Name] && !slices.ContainsFunc(vp.Delete, func(d replicaset.Replica) bool { return d.Name == r.Name }) {
			vp.Delete = append(vp.Delete, r)
		}
	}
	vp.Holds = slices.DeleteFunc(slices.Clone(p.Holds), func(h replicaset.Hold) bool {
		return h.By == replicaset.HoldPreDelete || h.By == replicaset.HoldHookAbandoned
	})
	return vp
}

// checkInPlace checks p's in-place updates against the replicas they
// change and the method, and that every power cycle of a replica that ran
// passed the gate.
func checkInPlace(t *rapid.T, spec replicaset.Spec, rs []replicaset.Replica, p replicaset.Plan, now time.Time) {
	t.Helper()
	byName := map[string]replicaset.Replica{}
	for _, r := range rs {
		byName[r.Name] = r
	}
	seen := map[string]string{}
	mark := func(what string, names []string) {
		for _, n := range names {
			if prev, ok := seen[n]; ok {
				t.Fatalf("%s is in both %s and %s: %v", n, prev, what, p)
			}
			seen[n] = what
		}
	}
	var ups []string
	for _, u := range p.Update {
		ups = append(ups, u.Replica.Name)
	}
	mark("Update", ups)
	for what, list := range map[string][]replicaset.Replica{"Delete": p.Delete, "Prepare": p.Prepare,
		"PrepareUpdate": p.PrepareUpdate, "Cancel": p.Cancel, "Restart": p.Restart} {
		mark(what, namesOf(list))
	}
	lim := spec.Strategy.Limits(spec.Desired)
	if spec.Strategy.Method == replicaset.UpdateReplace && len(p.Update)+len(p.PrepareUpdate) > 0 {
		t.Fatalf("method Replace, yet in-place updates: %v", p)
	}
	if limit := cmp.Or(spec.MaxPerPass, replicaset.DefaultMaxPerPass); len(p.Update) > limit {
		t.Fatalf("%d updates, over the cap %d: %v", len(p.Update), limit, p)
	}
	for _, u := range p.Update {
		r, ok := byName[u.Replica.Name]
		switch {
		case !ok || r.Deleting:
			t.Fatalf("updates %s: present %v, deleting %v", u.Replica.Name, ok, r.Deleting)
		case r.Revision == "" || r.Revision == spec.Revision:
			t.Fatalf("updates %s, already on revision %q: %v", r.Name, spec.Revision, p)
		case r.InPlace == replicaset.InPlaceNone:
			t.Fatalf("updates %s, whose change cannot be made in place: %v", r.Name, p)
		case u.PowerCycle != (r.InPlace == replicaset.InPlacePowerCycle):
			t.Fatalf("updates %s (%v) with PowerCycle %v", r.Name, r.InPlace, u.PowerCycle)
		case u.PowerCycle && lim.Unavailable == 0:
			t.Fatalf("power-cycles %s with MaxUnavailable 0: %v", r.Name, p)
		case spec.Lifecycle != nil && u.PowerCycle && r.Phase == replicaset.PhaseRunning &&
			(r.Preparing == nil || !r.Preparing.Update):
			t.Fatalf("power-cycles running %s without preparing it first: %v", r.Name, p)
		case r.Preparing != nil && holds(spec.Lifecycle, *r.Preparing, now):
			t.Fatalf("updates %s while its hooks %v hold it: %v", r.Name, r.Preparing.Hooks, p)
		}
	}
	for _, f := range p.Fallback {
		r, ok := byName[f.Replica.Name]
		if spec.Strategy.Method != replicaset.UpdateInPlaceIfPossible || !ok || r.Deleting ||
			r.Revision == "" || r.Revision == spec.Revision || seen[r.Name] == "Update" || f.Reason == "" {
			t.Fatalf("falls back on %s (%+v) under %v: %v", f.Replica.Name, f, spec.Strategy.Method, p)
		}
	}
	for _, r := range p.PrepareUpdate {
		if o := byName[r.Name]; o.Preparing != nil || o.Deleting || o.InPlace != replicaset.InPlacePowerCycle {
			t.Fatalf("prepares %s for an update: preparing %v, deleting %v, kind %v", r.Name, o.Preparing != nil, o.Deleting, o.InPlace)
		}
	}
	live := 0
	for _, r := range rs {
		if !r.Deleting {
			live++
		}
	}
	if spec.Strategy.Method == replicaset.UpdateInPlaceOnly && live <= spec.Desired {
		for _, list := range [][]replicaset.Replica{p.Delete, p.Prepare} {
			for _, r := range list {
				if o := byName[r.Name]; o.Preparing == nil && o.Revision != "" && o.Revision != spec.Revision {
					t.Fatalf("InPlaceOnly replaces %s without a scale-down: %v", r.Name, p)
				}
			}
		}
	}
}

// namesOf returns the replicas' names.
func namesOf(rs []replicaset.Replica) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

// TestInPlace_Passes drives a set whose replicas take changes live, only
// by a power cycle, or not at all, under each update method, with and
// without lifecycle hooks, through updates that fail, power cycles that
// take passes, hooks that release late or never, rollbacks (A→B→A),
// scaling and method changes mid-way, and checks every pass: every
// rollout bound on what the plan leaves (a power cycle unavailable, a
// preparation not available), updates only of replicas whose change can
// be made in place, each power cycle of a running replica through the
// gate, nothing replaced under InPlaceOnly without a scale-down. Then
// the platform is healthy and it checks that the set converges: the
// desired count, no replica preparing, and on older revisions only the
// partition and, under InPlaceOnly, replicas that cannot be changed in
// place.
func TestInPlace_Passes(t *testing.T) { rapid.Check(t, inPlacePasses) }

// inPlacePasses is TestInPlace_Passes's property.
func inPlacePasses(t *rapid.T) {
	w := &ipWorld{now: replicagen.Now(), kind: map[string]replicaset.InPlace{},
		failed: map[string]bool{}, release: map[string]time.Time{}}
	w.spec = replicaset.Spec{
		Desired:    rapid.IntRange(0, 10).Draw(t, "desired"),
		MaxPerPass: rapid.IntRange(0, 3).Draw(t, "maxPerPass"),
		Revision:   "B",
		Strategy:   strategyGen().Draw(t, "strategy"),
	}
	w.spec.Strategy.ZoneByZone = false
	w.spec.Strategy.Method = replicaset.UpdateMethod(rapid.IntRange(0, 2).Draw(t, "method"))
	if rapid.Bool().Draw(t, "hooks") {
		w.spec.Lifecycle = &replicaset.Lifecycle{
			Timeout: time.Duration(rapid.IntRange(1, 6).Draw(t, "timeout")) * gateStep,
			Abandon: rapid.Bool().Draw(t, "abandon"),
		}
	}
	for i := range rapid.IntRange(0, 10).Draw(t, "initial") {
		name := fmt.Sprintf("o%d", i)
		w.kind[name] = drawKind(t)
		w.set = append(w.set, replicaset.Replica{Name: name, UID: "uid-" + name, CreatedAt: w.now,
			Phase: replicaset.PhaseRunning, Ready: true, ReadySince: w.now, Revision: "A"})
	}
	_, policy := replicagen.Policy(t)
	pass := func(what string, i int) replicaset.Plan {
		w.observe()
		p, err := checkedCompute(t, w.spec, w.set, policy, w.now)
		if err != nil {
			t.Fatalf("%s pass %d: %v", what, i, err)
		}
		checkInPlace(t, w.spec, w.set, p, w.now)
		if w.spec.Lifecycle != nil {
			checkGate(t, w.spec, w.set, p, w.now)
		}
		view, again := ipView(w.spec, w.set, p)
		checkPass(t, w.spec, view, ipPlan(view, again, p))
		return p
	}
	for i := range rapid.IntRange(0, 30).Draw(t, "passes") {
		if rapid.IntRange(0, 4).Draw(t, "change") == 0 {
			switch rapid.IntRange(0, 3).Draw(t, "what") {
			case 0:
				w.spec.Revision = map[string]string{"A": "B", "B": "A"}[w.spec.Revision]
			case 1:
				w.spec.Desired = rapid.IntRange(0, 10).Draw(t, "desired")
			case 2:
				w.spec.Strategy.Paused = !w.spec.Strategy.Paused
			case 3:
				w.spec.Strategy.Method = replicaset.UpdateMethod(rapid.IntRange(0, 2).Draw(t, "method"))
			}
		}
		w.apply(t, pass("faulty", i))
	}

	w.healthy = true
	w.spec.Strategy.Paused, w.spec.Strategy.Type = false, replicaset.RollingUpdate
	lim := w.spec.Strategy.Limits(w.spec.Desired)
	for i := 0; ; i++ {
		p := pass("healthy", i)
		waiting := slices.ContainsFunc(p.Holds, func(h replicaset.Hold) bool {
			return h.By != replicaset.HoldPartition && h.By != replicaset.HoldInPlaceOnly
		})
		if p.IsZero() && len(p.Deleting) == 0 && !waiting {
			c := tallyOf(w.spec, w.set)
			stuck := 0 // replicas InPlaceOnly may leave on older revisions
			for _, r := range w.set {
				if r.Revision != w.spec.Revision && (r.InPlace == replicaset.InPlaceNone ||
					r.InPlace == replicaset.InPlacePowerCycle && lim.Unavailable == 0) {
					stuck++
				}
			}
			if w.spec.Strategy.Method != replicaset.UpdateInPlaceOnly {
				stuck = 0
			}
			preparing := slices.ContainsFunc(w.set, func(r replicaset.Replica) bool { return r.Preparing != nil })
			if c.live != w.spec.Desired || c.old > max(lim.Partition, stuck) || preparing {
				t.Fatalf("settled with %d live (desired %d), %d old (partition %d, %d that cannot change in place), preparing %v: %v\nset %+v",
					c.live, w.spec.Desired, c.old, lim.Partition, stuck, preparing, p, w.set)
			}
			return
		}
		if i > 200 {
			t.Fatalf("not converged after %d passes: %v\nset %+v", i, p, w.set)
		}
		w.apply(t, p)
	}
}

// holds reports whether lc's hooks still hold a replica preparing as p at
// now.
func holds(lc *replicaset.Lifecycle, p replicaset.Preparing, now time.Time) bool {
	by, _ := lc.Hold(p, now)
	return by != 0
}
