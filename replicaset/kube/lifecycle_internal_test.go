package kube

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset"
)

// TestPreparations_WaitForTheCache: a pass that prepared a child holds the
// owner's next passes until the cache shows the preparation, so that a
// stale read never chooses a second child to leave; a take-back likewise.
func TestPreparations_WaitForTheCache(t *testing.T) {
	o := observed(1, kids(kid("web-0"), kid("web-1")), func(o *observation) { o.spec.Lifecycle = &Lifecycle{PreDelete: []string{"drain"}} })
	rl := rules{policies: ordinal.policies, naming: OrdinalNames, hookDomain: DefaultHookDomain}
	d := decide(o, rl)
	if len(d.plan.Prepare) != 1 || len(d.delete) != 0 || len(d.update) != 1 {
		t.Fatalf("a scale-down with a hook: prepare %v, delete %v, %d updates; want one prepared, none deleted", d.plan.Prepare, d.delete, len(d.update))
	}
	to := d.update[0].to
	if to.GetAnnotations()[AnnotationPreparing] != stamp(testNow) || to.GetAnnotations()[PreDeleteHookAnnotation(DefaultHookDomain, "drain")] == "" {
		t.Fatalf("the prepared child's annotations: %v", to.GetAnnotations())
	}
	r := &Reconciler[client.Object, client.Object]{}
	r.recordPreparations("ns/web", d, succeeded(d), testNow)
	stale := []client.Object{kid("web-0").obj, kid("web-1").obj}
	if !r.restarts.unseen("ns/web", stale, testNow.Add(time.Second), time.Minute) {
		t.Error("a preparation the cache does not show yet does not hold the pass")
	}
	shown := []client.Object{kid("web-0").obj, d.update[0].to}
	if r.restarts.unseen("ns/web", shown, testNow.Add(time.Second), time.Minute) {
		t.Error("a preparation the cache shows still holds the pass")
	}
}

// TestPreparations_DroppedLifecycle: a child still marked preparing when
// the spec no longer has a Lifecycle is taken back (its mark removed), so
// that a Lifecycle set again later does not count it as a preparation
// long under way.
func TestPreparations_DroppedLifecycle(t *testing.T) {
	stale := kid("web-1", withAnnotation(AnnotationPreparing, stamp(testNow.Add(-time.Hour))))
	if err := (&lifecycleRead{domain: DefaultHookDomain, now: testNow}).describe(stale.obj, &stale.replica); err != nil {
		t.Fatal(err)
	}
	o := observed(2, kids(kid("web-0"), stale))
	d := decide(o, rules{policies: ordinal.policies, naming: OrdinalNames, hookDomain: DefaultHookDomain})
	if len(d.update) != 1 || d.update[0].from.GetName() != "web-1" {
		t.Fatalf("updates %v, want web-1's mark removed", d.update)
	}
	if _, ok := d.update[0].to.GetAnnotations()[AnnotationPreparing]; ok {
		t.Errorf("web-1 keeps %s: %v", AnnotationPreparing, d.update[0].to.GetAnnotations())
	}
}

// TestStatus_MarkNotReady: with MarkNotReady, status stops counting a
// child that prepares to leave as ready; without, it counts it.
func TestStatus_MarkNotReady(t *testing.T) {
	for _, mark := range []bool{false, true} {
		c := kid("web-1", withAnnotation(AnnotationPreparing, stamp(testNow)))
		lc := &lifecycleRead{domain: DefaultHookDomain, now: testNow, gates: true}
		if err := lc.describe(c.obj, &c.replica); err != nil {
			t.Fatal(err)
		}
		o := observed(1, kids(kid("web-0"), c), func(o *observation) {
			o.spec.Lifecycle = &Lifecycle{PreDelete: []string{"drain"}, MarkNotReady: mark}
		})
		d := decide(o, rules{policies: ordinal.policies, naming: OrdinalNames, hookDomain: DefaultHookDomain})
		st := settle(o, d, succeeded(d)).status
		want := int32(2)
		if mark {
			want = 1
		}
		if st.ReadyReplicas != want || st.PreparingReplicas != 1 {
			t.Errorf("MarkNotReady %v: ready %d, preparing %d; want %d, 1", mark, st.ReadyReplicas, st.PreparingReplicas, want)
		}
	}
}

// TestDrain_WaitsForTheCache: a pass of the owner's deletion that finds
// the cache behind its last writes prepares nothing and deletes nothing:
// a stale child would be prepared again, its timeout restarted and its
// released hook put back.
func TestDrain_WaitsForTheCache(t *testing.T) {
	for _, waiting := range []bool{false, true} {
		o := observed(2, kids(kid("web-0"), kid("web-1")), func(o *observation) {
			o.spec.Lifecycle = &Lifecycle{PreDelete: []string{"drain"}}
			owner := o.owner.(*metav1.PartialObjectMetadata)
			owner.DeletionTimestamp = &metav1.Time{Time: testNow}
			owner.Finalizers = []string{FinalizerDrain}
			o.waiting = waiting
		})
		d := decide(o, rules{policies: ordinal.policies, naming: OrdinalNames, hookDomain: DefaultHookDomain})
		if got := len(d.update); waiting && got != 0 || !waiting && got != 2 {
			t.Errorf("waiting %v: %d children prepared, want %d", waiting, got, map[bool]int{false: 2, true: 0}[waiting])
		}
	}
}

// TestDrain_InvalidSpec: the deletion of an owner whose spec cannot be
// used otherwise (here, an error the Adapter's Spec returned: a zone the
// operator no longer knows, say) still drains its children, and one
// without a Lifecycle lets its finalizer go: the owner is never stuck.
func TestDrain_InvalidSpec(t *testing.T) {
	for _, lc := range []*Lifecycle{{PreDelete: []string{"drain"}}, nil} {
		o := observed(2, kids(kid("web-0"), kid("web-1")), func(o *observation) {
			o.spec.Lifecycle = lc
			o.specErr = errors.New("spec.zones: zone-x is not one of this operator's zones")
			owner := o.owner.(*metav1.PartialObjectMetadata)
			owner.DeletionTimestamp = &metav1.Time{Time: testNow}
			owner.Finalizers = []string{FinalizerDrain}
		})
		d := decide(o, rules{policies: ordinal.policies, naming: OrdinalNames, hookDomain: DefaultHookDomain})
		switch {
		case lc != nil && (len(d.update) != 2 || d.finalizer != finalizerKeep):
			t.Errorf("with a Lifecycle: %d children prepared, finalizer change %d; want 2, none yet", len(d.update), d.finalizer)
		case lc == nil && d.finalizer != finalizerRemove:
			t.Errorf("without a Lifecycle: finalizer change %d, want its removal", d.finalizer)
		}
	}
}

// TestPreparations_BadTime: a preparing time that does not parse counts
// from the pass that finds it, and that pass writes it, so that the
// timeout runs from there and passes.
func TestPreparations_BadTime(t *testing.T) {
	bad := kid("web-1", withAnnotation(AnnotationPreparing, "yesterday"), withAnnotation(PreDeleteHookAnnotation("", "drain"), "web"))
	lc := &lifecycleRead{domain: DefaultHookDomain, now: testNow, gates: true}
	err := lc.describe(bad.obj, &bad.replica)
	if err == nil || !bad.replica.Preparing.Since.Equal(testNow) {
		t.Fatalf("describe: %v, since %v; want a warning, since now", err, bad.replica.Preparing.Since)
	}
	o := observed(1, kids(kid("web-0"), bad), func(o *observation) { o.spec.Lifecycle = &Lifecycle{PreDelete: []string{"drain"}} })
	d := decide(o, rules{policies: ordinal.policies, naming: OrdinalNames, hookDomain: DefaultHookDomain})
	if len(d.update) != 1 || d.update[0].to.GetAnnotations()[AnnotationPreparing] != stamp(testNow) {
		t.Fatalf("updates %d, want web-1's time written as now", len(d.update))
	}
}

// TestDraining_OneVocabulary: the Draining condition and ReplicaFailure's
// HookAbandoned message speak of children, as the binding's other
// messages do, never of the planner's replicas; and they name each child,
// its hooks and the time.
func TestDraining_OneVocabulary(t *testing.T) {
	since := testNow.Add(-2 * time.Minute)
	prep := func(name string) replicaset.Replica {
		return replicaset.Replica{Name: name, Preparing: &replicaset.Preparing{Since: since, Hooks: []string{"drain"}}}
	}
	o := observed(3, nil, func(o *observation) {
		o.spec.Lifecycle = &Lifecycle{PreDelete: []string{"drain"}, Lifecycle: replicaset.Lifecycle{Timeout: time.Minute, Abandon: true}}
	})
	d := decision{}
	d.plan.Lifecycle.Preparing = 3
	d.plan.Lifecycle.Waiting = []replicaset.Replica{prep("web-0")}
	d.plan.Lifecycle.Abandoned = []replicaset.Replica{prep("web-1"), prep("web-2")}
	c := drainingCondition(o, d)
	want := "3 children prepare to leave; 1 waits on pre-delete hooks: web-0 on drain until 2026-12-01T11:59:00Z; " +
		"2 children stay past the hooks' timeout, as the default result Abandon says (release the hooks to delete them): " +
		"web-1 on drain timed out at 2026-12-01T11:59:00Z; web-2 on drain timed out at 2026-12-01T11:59:00Z"
	if c.Message != want {
		t.Errorf("Draining:\n got %q\nwant %q", c.Message, want)
	}
	reason, msg := failure(o, d, outcome{})
	if reason != replicaset.HoldHookAbandoned.String() || strings.Contains(msg, "replica") || !strings.HasPrefix(msg, "2 children stay") {
		t.Errorf("ReplicaFailure: %s %q, want HookAbandoned about 2 children", reason, msg)
	}
}
