package kube_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset/kube"
)

const finalizer = "test.replicakit.io/hold"

// hold puts a finalizer on the child so its deletion stays pending.
func hold(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	patch := []byte(`{"metadata":{"finalizers":["` + finalizer + `"]}}`)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := c.Patch(context.Background(), cm, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
}

func release(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if err := c.Patch(context.Background(), cm, client.RawPatch("application/merge-patch+json", patch)); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// condition returns the status of w's condition t.
func condition(t *testing.T, c client.Client, w *unstructured.Unstructured, typ string) (status, reason, msg string) {
	t.Helper()
	got := emptyWidget()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(w), got); err != nil {
		t.Fatal(err)
	}
	conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
	for _, raw := range conds {
		m := raw.(map[string]any)
		if m["type"] == typ {
			return m["status"].(string), m["reason"].(string), m["message"].(string)
		}
	}
	return "", "", ""
}

// TestReconciler_StuckDeletion scales 3→1 while one child is stuck behind a
// finalizer. Counting mode: it goes first, exactly one more is deleted, and
// nothing is created while it is stuck. Replace mode: the same deletes, and
// the stuck child is not counted.
func TestReconciler_StuckDeletion(t *testing.T) {
	for _, replace := range []bool{false, true} {
		t.Run(map[bool]string{false: "count", true: "replace"}[replace], func(t *testing.T) {
			c, ns := startManager(t)
			w := widget(ns, "stuck", 3)
			_ = unstructured.SetNestedField(w.Object, replace, "spec", "replaceDeleting")
			if err := c.Create(context.Background(), w); err != nil {
				t.Fatal(err)
			}
			three := converge(t, c, w, 3)
			hold(t, c, ns, three[0])
			if err := c.Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: three[0]}}); err != nil {
				t.Fatal(err)
			}
			if !replace {
				// Counting: 2 live + 1 deleting = 3, nothing to do.
				time.Sleep(500 * time.Millisecond)
				if live, deleting := children(t, c, w); len(live) != 2 || deleting != 1 {
					t.Fatalf("count mode, one stuck: live %v, deleting %d; want 2 live, 1 deleting", live, deleting)
				}
			} else {
				converge(t, c, w, 3) // replaced at once
			}
			scale(t, c, w, 1)
			err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
				live, deleting := children(t, c, w)
				return len(live) == 1 && deleting == 1, nil
			})
			if err != nil {
				live, deleting := children(t, c, w)
				t.Fatalf("3→1 with one stuck: live %v, deleting %d; want 1 live and the stuck one", live, deleting)
			}
			release(t, c, ns, three[0])
			converge(t, c, w, 1)
		})
	}
}

// TestReconciler_Annotations: a child marked delete-first goes first; a
// protected child is never chosen, and the shortfall is reported.
func TestReconciler_Annotations(t *testing.T) {
	c, ns := startManager(t)
	w := widget(ns, "marked", 4)
	_ = unstructured.SetNestedField(w.Object, "Oldest", "spec", "deletePolicy")
	if err := c.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	four := converge(t, c, w, 4)
	annotate(t, c, ns, four[3], kube.AnnotationDeleteFirst, "true")
	annotate(t, c, ns, four[0], kube.AnnotationScaleInProtection, "true")
	annotate(t, c, ns, four[1], kube.AnnotationScaleInProtection, "true")
	scale(t, c, w, 3)
	if live := converge(t, c, w, 3); slices.Contains(live, four[3]) {
		t.Errorf("after 4→3: %v still holds the child marked delete-first %s", live, four[3])
	}
	scale(t, c, w, 0)
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		live, _ := children(t, c, w)
		s, reason, _ := condition(t, c, w, kube.ConditionReplicaFailure)
		return len(live) == 2 && s == "True" && reason == "ScaleInProtected", nil
	})
	live, _ := children(t, c, w)
	if err != nil || !slices.Equal(live, []string{four[0], four[1]}) {
		t.Fatalf("scale to 0 with two protected: live %v (want %v), err %v", live, four[:2], err)
	}
	if _, _, msg := condition(t, c, w, kube.ConditionReplicaFailure); !strings.Contains(msg, "protected from scale-in") {
		t.Errorf("ReplicaFailure message %q does not explain the protection", msg)
	}
}

// TestReconciler_Ownership: an orphan that matches is adopted, a child whose
// labels change is released, and a child controlled by another owner is
// left alone.
func TestReconciler_Ownership(t *testing.T) {
	c, ns := startManager(t)
	ctx := context.Background()
	orphan := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan", Labels: map[string]string{"app": "own"}}}
	if err := c.Create(ctx, orphan); err != nil {
		t.Fatal(err)
	}
	// Another controller's child with matching labels: its controller is an
	// object no replica set manages, so nothing releases it.
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other-controller"}}
	if err := c.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "foreign", Labels: map[string]string{"app": "own"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: other.Name,
			UID: other.UID, Controller: ptr.To(true)}}}}
	if err := c.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}

	w := widget(ns, "own", 2)
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	live := converge(t, c, w, 2)
	if !slices.Contains(live, "orphan") {
		t.Errorf("children %v: the matching orphan was not adopted", live)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(foreign), foreign); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(foreign); ref == nil || ref.UID != other.UID {
		t.Errorf("the other owner's child now has controller %v", ref)
	}

	// Relabel the adopted child: it is released and replaced.
	if err := c.Get(ctx, client.ObjectKeyFromObject(orphan), orphan); err != nil {
		t.Fatal(err)
	}
	orphan.Labels = map[string]string{"app": "elsewhere"}
	if err := c.Update(ctx, orphan); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(orphan), orphan); err != nil {
			return false, err
		}
		return metav1.GetControllerOf(orphan) == nil, nil
	})
	if err != nil {
		t.Fatalf("the relabelled child still has controller %v", metav1.GetControllerOf(orphan))
	}
	if live = converge(t, c, w, 2); slices.Contains(live, "orphan") {
		t.Errorf("children %v still include the released child", live)
	}
	waitEvents(t, c, w, "SuccessfulAdopt", "SuccessfulRelease")
}

// TestReconciler_LateOrphan: an orphan that appears after its owner has
// converged is adopted at once (through the orphan watch), and the excess
// it makes is removed by the owner's policy (Oldest: not the orphan).
func TestReconciler_LateOrphan(t *testing.T) {
	c, ns := startManager(t)
	ctx := context.Background()
	w := widget(ns, "late", 2)
	_ = unstructured.SetNestedField(w.Object, "Oldest", "spec", "deletePolicy")
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	converge(t, c, w, 2)
	time.Sleep(1100 * time.Millisecond) // creation times have second precision
	orphan := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late-orphan", Labels: map[string]string{"app": "late"}}}
	if err := c.Create(ctx, orphan); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		live, _ := children(t, c, w)
		return len(live) == 2 && slices.Contains(live, "late-orphan"), nil
	})
	if err != nil {
		live, _ := children(t, c, w)
		t.Fatalf("children %v: the late orphan was not adopted (and the oldest removed)", live)
	}
}

// TestReconciler_UnknownPolicy sets a condition and changes nothing.
func TestReconciler_UnknownPolicy(t *testing.T) {
	c, ns := startManager(t)
	w := widget(ns, "policy", 2)
	if err := c.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	two := converge(t, c, w, 2)
	patch := []byte(`{"spec":{"replicas":0,"deletePolicy":"LeastLoaded"}}`)
	if err := c.Patch(context.Background(), w, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		s, reason, _ := condition(t, c, w, kube.ConditionReplicaFailure)
		return s == "True" && reason == "UnknownDeletePolicy", nil
	})
	if err != nil {
		t.Fatal("no UnknownDeletePolicy condition")
	}
	if _, _, msg := condition(t, c, w, kube.ConditionReplicaFailure); !strings.Contains(msg, "known: HighestOrdinal, Newest, Oldest, Random, UnhealthyFirst") {
		t.Errorf("condition message %q does not list the known policies", msg)
	}
	if live, _ := children(t, c, w); !slices.Equal(live, two) {
		t.Errorf("with an unknown policy the children changed: %v, was %v", live, two)
	}
}

// TestReconciler_Cascade: deleting the owner garbage-collects its children.
func TestReconciler_Cascade(t *testing.T) {
	c, ns := startManager(t)
	w := widget(ns, "cascade", 3)
	if err := c.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	converge(t, c, w, 3)
	if err := c.Delete(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		live, deleting := children(t, c, w)
		return len(live) == 0 && deleting == 0, nil
	})
	if err != nil {
		live, _ := children(t, c, w)
		t.Fatalf("children %v survived their owner", live)
	}
}

// TestReconciler_InvalidSpec: a selector the API server accepts but that
// does not parse is reported in the ReplicaFailure condition, nothing
// changes, and status still counts the children that exist. (A negative
// replica count never gets this far: the scale subresource's schema
// rejects it.)
func TestReconciler_InvalidSpec(t *testing.T) {
	c, ns := startManager(t)
	w := widget(ns, "invalid", 2)
	if err := c.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	two := converge(t, c, w, 2)
	patch := []byte(`{"spec":{"selector":{"matchLabels":null,"matchExpressions":[{"key":"app","operator":"Bogus"}]}}}`)
	if err := c.Patch(context.Background(), w, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		s, reason, _ := condition(t, c, w, kube.ConditionReplicaFailure)
		return s == "True" && reason == "InvalidSpec", nil
	})
	if err != nil {
		t.Fatal("no InvalidSpec condition for an invalid selector")
	}
	if _, _, msg := condition(t, c, w, kube.ConditionReplicaFailure); !strings.Contains(msg, `"Bogus" is not a valid label selector operator`) {
		t.Errorf("condition message %q does not say what is wrong", msg)
	}
	got := emptyWidget()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(w), got); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := unstructured.NestedInt64(got.Object, "status", "replicas"); n != 2 {
		t.Errorf("status.replicas = %d with an invalid spec, want the 2 that exist", n)
	}
	if live, _ := children(t, c, w); !slices.Equal(live, two) {
		t.Errorf("children changed with an invalid spec: %v, was %v", live, two)
	}
}

// TestReconciler_SelectorMismatch: a selector that does not select the
// template's labels would create children forever; it is reported and
// nothing is created.
func TestReconciler_SelectorMismatch(t *testing.T) {
	c, ns := startManager(t)
	w := widget(ns, "mismatch", 2)
	_ = unstructured.SetNestedField(w.Object, map[string]any{"app": "other"}, "spec", "template", "metadata", "labels")
	if err := c.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		s, reason, _ := condition(t, c, w, kube.ConditionReplicaFailure)
		return s == "True" && reason == "SelectorMismatch", nil
	})
	if err != nil {
		t.Fatal("no SelectorMismatch condition")
	}
	var l corev1.ConfigMapList
	if err := c.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, cm := range l.Items {
		if ref := metav1.GetControllerOf(&cm); ref != nil && ref.UID == w.GetUID() {
			t.Errorf("child %s created despite the mismatch", cm.Name)
		}
	}
}
