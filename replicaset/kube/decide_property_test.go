package kube

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
)

// drawObservation draws an owner's observation: any spec flags, children
// of every kind (its own, orphans, others', matching or not, deleting,
// protected, marked, unready) and names noted as taken.
func drawObservation(t *rapid.T) (*observation, rules) {
	pool := []string{"web-0", "web-1", "web-2", "web-3", "web-10", "web-abcde", "x", "web-00"}
	names := rapid.SliceOfNDistinct(rapid.SampledFrom(pool), 0, len(pool), rapid.ID).Draw(t, "names")
	var cs []child
	for _, n := range names {
		var opts []kidOpt
		switch rapid.IntRange(0, 3).Draw(t, "controller "+n) {
		case 1:
			opts = append(opts, orphan)
		case 2:
			opts = append(opts, foreignOwned)
		}
		if rapid.Bool().Draw(t, "unlabelled "+n) {
			opts = append(opts, unlabelled)
		}
		if rapid.IntRange(0, 4).Draw(t, "deleting "+n) == 0 {
			opts = append(opts, deleting)
		}
		if rapid.Bool().Draw(t, "ready "+n) {
			opts = append(opts, notReady)
		}
		if rapid.IntRange(0, 3).Draw(t, "failed "+n) == 0 {
			opts = append(opts, failed)
		}
		if z := rapid.SampledFrom([]string{"", "a", "b", "c", "old"}).Draw(t, "zone "+n); z != "" {
			opts = append(opts, inZone(z))
		}
		switch rapid.IntRange(0, 5).Draw(t, "annotation "+n) {
		case 0:
			opts = append(opts, annotated(AnnotationScaleInProtection, "true"))
		case 1:
			opts = append(opts, annotated(AnnotationDeleteFirst, "true"))
		case 2:
			opts = append(opts, annotated(AnnotationDeletionCost, "cheap"))
		}
		cs = append(cs, kid(n, opts...))
	}
	reg := deletionpolicy.Default()
	policy := rapid.SampledFrom(append(reg.Names(), "")).Draw(t, "policy")
	o := observed(rapid.IntRange(0, 8).Draw(t, "replicas"), cs, func(o *observation) {
		o.spec.DeletePolicy = policy
		o.spec.Paused = rapid.IntRange(0, 4).Draw(t, "paused") == 0
		o.spec.ReplaceDeleting = rapid.Bool().Draw(t, "replaceDeleting")
		o.waiting = rapid.IntRange(0, 4).Draw(t, "waiting") == 0
		if rapid.IntRange(0, 4).Draw(t, "ownerDeleting") == 0 {
			o.owner.SetDeletionTimestamp(&metav1.Time{Time: testNow})
		}
		o.taken = rapid.SliceOfDistinct(rapid.SampledFrom([]string{"web-0", "web-4", "web-5"}), rapid.ID).Draw(t, "taken")
		o.seed = rapid.Uint64().Draw(t, "seed")
		o.spec.Zones = rapid.SampledFrom([][]string{nil, {"a", "b"}, {"a", "b", "c"}}).Draw(t, "zones")
		o.spec.Rebalance = rapid.Bool().Draw(t, "rebalance")
		for _, z := range rapid.SliceOfDistinct(rapid.SampledFrom([]string{"a", "b", "c"}), rapid.ID).Draw(t, "backoff") {
			o.zones.ZoneBackoff = append(o.zones.ZoneBackoff, replicaset.ZoneBackoff{Zone: z, Until: testNow.Add(time.Minute)})
		}
	})
	// Another owner's children land among the owner's own (read never
	// puts them there): decide must ignore them all the same.
	rl := rules{policies: reg, naming: Naming(rapid.IntRange(0, 1).Draw(t, "naming")), maxPerPass: rapid.IntRange(0, 3).Draw(t, "maxPerPass")}
	return o, rl
}

// TestDecide_Properties checks what every decision must keep, whatever it
// observed.
func TestDecide_Properties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		o, rl := drawObservation(t)
		d := decide(o, rl)

		if again := decide(o, rl); render(d, verdict{}) != render(again, verdict{}) {
			t.Fatalf("same observation, different decisions:\n%s\n%s", render(d, verdict{}), render(again, verdict{}))
		}
		held := o.spec.Paused || o.waiting || o.owner.GetDeletionTimestamp() != nil
		if held && d.acts() {
			t.Fatalf("paused=%v waiting=%v deleting=%v, yet the decision acts: %s", o.spec.Paused, o.waiting,
				o.owner.GetDeletionTimestamp() != nil, render(d, verdict{}))
		}
		if d.hold == holdFailure && d.acts() {
			t.Fatalf("a failed decision acts: %s", render(d, verdict{}))
		}
		sel := labels.SelectorFromSet(labels.Set{"app": "web"})
		for _, a := range d.adopt {
			if metav1.GetControllerOfNoCopy(a) != nil || a.GetDeletionTimestamp() != nil || !sel.Matches(labels.Set(a.GetLabels())) {
				t.Fatalf("adopts %s: controlled, deleting or not matching", a.GetName())
			}
		}
		for _, r := range d.release {
			ref := metav1.GetControllerOfNoCopy(r)
			if ref == nil || ref.UID != ownerUID || r.GetDeletionTimestamp() != nil || sel.Matches(labels.Set(r.GetLabels())) {
				t.Fatalf("releases %s: not its own, deleting or still matching", r.GetName())
			}
		}
		members := map[string]bool{}
		for _, m := range d.members {
			members[m.replica.Name] = true
		}
		for _, v := range d.delete {
			if !members[v.Name] || v.Deleting || v.Protected {
				t.Fatalf("deletes %s: not a member, or deleting or protected", v.Name)
			}
		}
		if !d.acts() || d.hold != holdNone {
			return
		}
		if len(d.create) != d.plan.Create {
			t.Fatalf("%d names for %d creates", len(d.create), d.plan.Create)
		}
		// Members count toward the desired count as the plan counts
		// them: those being deleted, replaced failing ones included,
		// only until gone (unless ReplaceDeleting).
		counted := 0
		for _, m := range d.members {
			replaced := slices.ContainsFunc(d.replaced, func(r replicaset.Replica) bool { return r.Name == m.replica.Name })
			if !(m.replica.Deleting || replaced) || !o.spec.ReplaceDeleting {
				counted++
			}
		}
		for _, r := range d.replaced {
			if r.Phase != replicaset.PhaseFailed || !slices.Contains(o.spec.Zones, r.Zone) || r.Protected || !slices.ContainsFunc(d.delete, func(v replicaset.Replica) bool { return v.Name == r.Name }) {
				t.Fatalf("replaces %s: not failed in a listed zone, protected, or not deleted", r.Name)
			}
		}
		// Rebalance's surge: one create at the desired count, nothing more.
		surge := o.spec.Rebalance && len(o.spec.Zones) > 0 && counted == o.spec.Replicas && len(d.create) == 1
		if len(d.create) > 0 && counted+len(d.create) > o.spec.Replicas && !surge {
			t.Fatalf("%d counted members and %d creates exceed the desired %d", counted, len(d.create), o.spec.Replicas)
		}
		if limit := rl.limit(); len(d.create) > limit || len(d.delete) > limit {
			t.Fatalf("%d creates and %d deletes, over the per-pass cap %d", len(d.create), len(d.delete), limit)
		}
		if len(o.spec.Zones) > 0 && len(d.plan.CreateZones) != len(d.create) {
			t.Fatalf("%d creates, %d zones for them", len(d.create), len(d.plan.CreateZones))
		}
		avoided := map[string]bool{}
		for _, b := range d.backoff { // observed, and backed off by this pass
			avoided[b.Zone] = slices.Contains(o.spec.Zones, b.Zone)
		}
		open := slices.ContainsFunc(o.spec.Zones, func(z string) bool { return !avoided[z] })
		for _, z := range d.plan.CreateZones {
			if !slices.Contains(o.spec.Zones, z) || open && avoided[z] {
				t.Fatalf("a create in zone %s: not listed in %v, or backing off (%v) while another is not", z, o.spec.Zones, o.zones.ZoneBackoff)
			}
		}
		used := slices.Concat(o.taken)
		for _, c := range slices.Concat(o.children, o.orphans) {
			used = append(used, c.obj.GetName())
		}
		for i, n := range d.create {
			if slices.Contains(used, n) || slices.Contains(d.create[:i], n) {
				t.Fatalf("create name %s is taken or repeated (used %v, creates %v)", n, used, d.create)
			}
		}
		if rl.naming == OrdinalNames {
			want, _ := naming.Indexed{Base: "web"}.Names(d.plan.Create, used)
			if !slices.Equal(want, d.create) {
				t.Fatalf("ordinal creates %v, want the lowest free ordinals %v", d.create, want)
			}
		}
	})
}

// TestSettle_Properties: whatever apply did, a name is never both kept
// expected and forgiven, a taken name is always forgiven, and a pass that
// held writes no expectations to drop.
func TestSettle_Properties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		o, rl := drawObservation(t)
		d := decide(o, rl)
		out := succeeded(d)
		if len(d.create) > 0 && rapid.Bool().Draw(t, "fail") {
			errs := []error{fmt.Errorf("taken: %w", ErrNameTaken), &unsureError{fmt.Errorf("timeout")}, fmt.Errorf("forbidden")}
			out = createsFail(rapid.SampledFrom(errs).Draw(t, "error"))(d)
		}
		v := settle(o, d, out)
		for _, n := range d.create {
			created := slices.Contains(out.acted.Created, n)
			var unsure *unsureError
			keep := created || errors.As(failures(out.acted)[n], &unsure)
			if slices.Contains(v.forgive, n) == keep {
				t.Fatalf("create %s: created or unclear %v, yet forgiven %v", n, keep, slices.Contains(v.forgive, n))
			}
			if slices.Contains(v.taken, n) != errors.Is(failures(out.acted)[n], ErrNameTaken) {
				t.Fatalf("create %s: taken %v, error %v", n, slices.Contains(v.taken, n), failures(out.acted)[n])
			}
		}
		for _, n := range v.forgive {
			if slices.Contains(out.acted.Created, n) {
				t.Fatalf("created name %s forgiven: the cache would never be waited for", n)
			}
		}
		if !d.acts() && (len(v.forgive) > 0 || len(v.forgiveUIDs) > 0) {
			t.Fatalf("a pass that did nothing forgives %v %v", v.forgive, v.forgiveUIDs)
		}
	})
}

// TestSettle_Publish: a pass whose writes all succeeded, or that waits for
// the cache, leaves status to the next pass; a pass that failed or did
// nothing writes it.
func TestSettle_Publish(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		o, rl := drawObservation(t)
		d := decide(o, rl)
		out := succeeded(d)
		failed := len(d.create) > 0 && rapid.Bool().Draw(t, "fail")
		if failed {
			out = createsFail(fmt.Errorf("forbidden"))(d)
		}
		v := settle(o, d, out)
		switch {
		case failed && !v.publish:
			t.Fatalf("a pass with a failed create does not publish status")
		case d.hold == holdWaiting && v.publish:
			t.Fatalf("a pass waiting for the cache publishes status")
		case !d.acts() && d.hold != holdWaiting && !v.publish:
			t.Fatalf("a pass that did nothing (hold %d) does not publish status", d.hold)
		case d.acts() && !failed && v.publish:
			t.Fatalf("a pass whose writes all succeeded publishes stale status")
		}
	})
}
