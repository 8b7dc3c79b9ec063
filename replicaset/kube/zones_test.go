package kube_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset/kube"
)

// spread counts w's live children per zone label, read from the API server.
func spread(t *testing.T, c client.Client, w *unstructured.Unstructured) map[string]int {
	t.Helper()
	var l corev1.ConfigMapList
	if err := c.List(context.Background(), &l, client.InNamespace(w.GetNamespace())); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, cm := range l.Items {
		if ref := metav1.GetControllerOf(&cm); ref != nil && ref.UID == w.GetUID() && cm.DeletionTimestamp == nil {
			out[cm.Labels[kube.ZoneLabel]]++
		}
	}
	return out
}

// refuseZone makes the API server refuse ConfigMaps labelled with zone in
// ns (a ValidatingAdmissionPolicy), and waits until it does; the returned
// function lifts it.
func refuseZone(t *testing.T, c client.Client, ns, zone string) (lift func()) {
	t.Helper()
	name := "refuse-" + ns + "-" + zone
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: fmt.Sprintf(`!has(object.metadata.labels) || !(%q in object.metadata.labels) || object.metadata.labels[%q] != %q`,
					kube.ZoneLabel, kube.ZoneLabel, zone),
				Message: "zone " + zone + " is out of capacity",
			}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}},
		},
	}
	createObject(t, c, policy)
	createObject(t, c, binding)
	probe := func(ctx context.Context) (bool, error) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe", Labels: map[string]string{kube.ZoneLabel: zone}}}
		err := c.Create(ctx, cm, client.DryRunAll)
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err), nil
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, probe); err != nil {
		t.Fatalf("the API server never refused ConfigMaps in zone %s: %v", zone, err)
	}
	return func() {
		t.Helper()
		for _, obj := range []client.Object{binding, policy} {
			if err := c.Delete(context.Background(), obj); err != nil {
				t.Fatal(err)
			}
		}
		err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true,
			func(ctx context.Context) (bool, error) { refused, err := probe(ctx); return !refused, err })
		if err != nil {
			t.Fatalf("zone %s is still refused: %v", zone, err)
		}
	}
}

// waitSpread waits until w's children per zone are want.
func waitSpread(t *testing.T, c client.Client, w *unstructured.Unstructured, want map[string]int) {
	t.Helper()
	var got map[string]int
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		got = spread(t, c, w)
		return maps.Equal(got, want), nil
	})
	if err != nil {
		t.Fatalf("%s: children per zone %v, want %v (-want +got):\n%s", w.GetName(), got, want, cmp.Diff(want, got))
	}
}

// TestReconciler_Zones spreads a Widget over zones a, b and c on the real
// API server: six children land two per zone (the zone label on each),
// scaling to four leaves 2/1/1; with zone b refused by an admission
// policy, scaling to nine still reaches nine (b keeps its one), the status
// names the failing zone, and once b recovers Rebalance ends 3/3/3
// without the set ever dropping below nine live children.
func TestReconciler_Zones(t *testing.T) {
	c, ns := startManagerWith(t, func(r *reconciler, _ ctrl.Manager) { r.ZoneBackoff = 3 * time.Second })
	w := widget(ns, "spread", 6)
	w.Object["spec"].(map[string]any)["zones"] = []any{"a", "b", "c"}
	createObject(t, c, w)
	converge(t, c, w, 6)
	waitSpread(t, c, w, map[string]int{"a": 2, "b": 2, "c": 2})
	waitCondition(t, c, w, kube.ConditionZonesBalanced, "True", kube.ConditionZonesBalanced)

	scale(t, c, w, 4)
	converge(t, c, w, 4)
	waitSpread(t, c, w, map[string]int{"a": 2, "b": 1, "c": 1})
	got := emptyWidget()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(w), got); err != nil {
		t.Fatal(err)
	}
	if s, _, _ := unstructured.NestedString(got.Object, "status", "spread"); s != "a=2 b=1 c=1" {
		t.Errorf("status.spread = %q, want %q", s, "a=2 b=1 c=1")
	}

	lift := refuseZone(t, c, ns, "b")
	scale(t, c, w, 9)
	converge(t, c, w, 9)
	if got := spread(t, c, w); got["b"] != 1 || got["a"]+got["c"] != 8 || got["a"]-got["c"] > 1 || got["c"]-got["a"] > 1 {
		t.Errorf("with b refused, 4→9 spread %v, want b=1 and a, c within one of each other", got)
	}
	// The pass that converged saw b still backing off; when the backoff
	// ends, the owner is looked at again (no event would start a pass),
	// and the condition says the set is out of balance for good.
	waitCondition(t, c, w, kube.ConditionZonesBalanced, "False", kube.ReasonUnbalanced)

	lift()
	var lowest atomic.Int64
	lowest.Store(9)
	stop := make(chan struct{})
	done := make(chan struct{})
	owner := w.DeepCopy() // the test goroutine decodes into w
	go func() {           // the API server's view: never below nine live children
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			var l corev1.ConfigMapList
			if err := c.List(context.Background(), &l, client.InNamespace(owner.GetNamespace())); err != nil {
				continue
			}
			n := int64(0)
			for _, cm := range l.Items {
				if ref := metav1.GetControllerOf(&cm); ref != nil && ref.UID == owner.GetUID() && cm.DeletionTimestamp == nil {
					n++
				}
			}
			if n < lowest.Load() {
				lowest.Store(n)
			}
		}
	}()
	patch := []byte(`{"spec":{"rebalance":true}}`)
	if err := c.Patch(context.Background(), w, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	waitSpread(t, c, w, map[string]int{"a": 3, "b": 3, "c": 3})
	close(stop)
	<-done
	converge(t, c, w, 9)
	waitCondition(t, c, w, kube.ConditionZonesBalanced, "True", kube.ConditionZonesBalanced)
	if n := lowest.Load(); n < 9 {
		t.Errorf("rebalancing took the set down to %d live children, want never below 9", n)
	}
}

// TestReconciler_FailedChildIsReplacedElsewhere: a child that fails after
// it was made (as a VM whose clone vCenter refused) counts as a failed
// create in its zone: the child is deleted, its replacement goes to another
// zone, and the condition names the failing zone.
func TestReconciler_FailedChildIsReplacedElsewhere(t *testing.T) {
	c, ns := startManager(t)
	w := widget(ns, "failing", 3)
	w.Object["spec"].(map[string]any)["zones"] = []any{"a", "b", "c"}
	createObject(t, c, w)
	converge(t, c, w, 3)
	waitSpread(t, c, w, map[string]int{"a": 1, "b": 1, "c": 1})
	var l corev1.ConfigMapList
	if err := c.List(context.Background(), &l, client.InNamespace(ns), client.MatchingLabels{kube.ZoneLabel: "b"}); err != nil || len(l.Items) != 1 {
		t.Fatalf("the child in zone b: %v (%d found)", err, len(l.Items))
	}
	inB := &l.Items[0]
	patch := []byte(`{"data":{"phase":"Failed"}}`)
	if err := c.Patch(context.Background(), inB, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	msg := waitCondition(t, c, w, kube.ConditionZonesBalanced, "False", kube.ReasonZoneFailing)
	if !strings.Contains(msg, "avoid b") {
		t.Errorf("ZonesBalanced says %q, want it to name zone b", msg)
	}
	converge(t, c, w, 3)
	got := spread(t, c, w)
	if got["b"] != 0 || got["a"]+got["c"] != 3 {
		t.Errorf("after the child in b failed: children per zone %v, want none in b and three in a and c", got)
	}
	if live, _ := children(t, c, w); slices.Contains(live, inB.Name) {
		t.Errorf("the failed child %s is still live: %v", inB.Name, live)
	}
}

// TestReconciler_EveryZoneFailingDoesNotChurn: with a failed child in every
// zone there is no healthy zone to move them to, so they stay as they are
// however often the zones' backoffs end (the trial saw the children of
// every zone replaced into whichever zone's backoff ended first, over and
// over).
func TestReconciler_EveryZoneFailingDoesNotChurn(t *testing.T) {
	c, ns := startManagerWith(t, func(r *reconciler, _ ctrl.Manager) { r.ZoneBackoff = 300 * time.Millisecond })
	w := widget(ns, "outage", 2)
	w.Object["spec"].(map[string]any)["zones"] = []any{"a", "b"}
	createObject(t, c, w)
	before := converge(t, c, w, 2)
	// Paused while both fail, so that no pass sees one zone healthy.
	pause := func(on bool) {
		t.Helper()
		patch := fmt.Appendf(nil, `{"spec":{"paused":%v}}`, on)
		if err := c.Patch(context.Background(), w, client.RawPatch("application/merge-patch+json", patch)); err != nil {
			t.Fatal(err)
		}
	}
	pause(true)
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		got := emptyWidget()
		if err := c.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
			return false, err
		}
		observed, _, _ := unstructured.NestedInt64(got.Object, "status", "observedGeneration")
		return observed == got.GetGeneration(), nil // the reconciler has seen the pause
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range before {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if err := c.Patch(context.Background(), cm, client.RawPatch("application/merge-patch+json", []byte(`{"data":{"phase":"Failed"}}`))); err != nil {
			t.Fatal(err)
		}
	}
	pause(false)
	time.Sleep(3 * time.Second) // ten backoffs
	live, deleting := children(t, c, w)
	if !slices.Equal(live, before) || deleting != 0 {
		t.Errorf("with every zone failing, children went from %v to %v (%d deleting), want them left alone", before, live, deleting)
	}
}

// TestReconciler_ZonesRemoved: a spec that stops listing zones drops the
// ZonesBalanced condition and the status per zone.
func TestReconciler_ZonesRemoved(t *testing.T) {
	c, ns := startManager(t)
	w := widget(ns, "unzoned", 2)
	w.Object["spec"].(map[string]any)["zones"] = []any{"a", "b"}
	createObject(t, c, w)
	converge(t, c, w, 2)
	waitCondition(t, c, w, kube.ConditionZonesBalanced, "True", kube.ConditionZonesBalanced)
	patch := []byte(`{"spec":{"zones":null}}`)
	if err := c.Patch(context.Background(), w, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		status, _, _ := condition(t, c, w, kube.ConditionZonesBalanced)
		return status == "", nil
	})
	if err != nil {
		t.Fatalf("ZonesBalanced still set after the spec stopped listing zones")
	}
	got := emptyWidget()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(w), got); err != nil {
		t.Fatal(err)
	}
	if zones, ok, _ := unstructured.NestedSlice(got.Object, "status", "zones"); ok {
		t.Errorf("status.zones = %v after the spec stopped listing zones", zones)
	}
	if live, _ := children(t, c, w); len(live) != 2 {
		t.Errorf("children %v, want 2 kept", live)
	}
}

// TestReconciler_ZoneLabelValue: a zone the label cannot hold is an invalid
// spec naming it; nothing is created.
func TestReconciler_ZoneLabelValue(t *testing.T) {
	c, ns := startManager(t)
	w := widget(ns, "badzone", 2)
	w.Object["spec"].(map[string]any)["zones"] = []any{"a", "no spaces allowed"}
	createObject(t, c, w)
	msg := waitCondition(t, c, w, kube.ConditionReplicaFailure, "True", kube.ReasonInvalidSpec)
	if want := `zone "no spaces allowed"`; !strings.Contains(msg, want) {
		t.Errorf("ReplicaFailure says %q, want it to name %s", msg, want)
	}
	if live, _ := children(t, c, w); len(live) != 0 {
		t.Errorf("children %v created for an invalid spec", live)
	}
}
