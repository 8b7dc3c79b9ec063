package kube_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestReconciler_Paused: a paused owner's children are left alone.
func TestReconciler_Paused(t *testing.T) {
	c, ns := startManager(t)
	w := widget(ns, "paused", 2)
	if err := c.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	two := converge(t, c, w, 2)
	patch := []byte(`{"spec":{"paused":true,"replicas":5}}`)
	if err := c.Patch(context.Background(), w, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if live, _ := children(t, c, w); len(live) != 2 {
		t.Fatalf("paused owner scaled to 5: children %v, want %v untouched", live, two)
	}
	patch = []byte(`{"spec":{"paused":false}}`)
	if err := c.Patch(context.Background(), w, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	converge(t, c, w, 5)
}

// TestReconciler_DeletingOwnerNeverCreates: while the owner waits on a
// finalizer, a child that disappears is not replaced, even when the child's
// deletion reaches the reconciler before the owner's (ConfirmOwnerBeforeCreate
// reads the owner first).
func TestReconciler_DeletingOwnerNeverCreates(t *testing.T) {
	c, ns := startManagerWith(t, func(r *reconciler, _ ctrl.Manager) { r.ConfirmOwnerBeforeCreate = true })
	w := widget(ns, "doomed", 2)
	w.SetFinalizers([]string{finalizer})
	if err := c.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	two := converge(t, c, w, 2)
	if err := c.Delete(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: two[0]}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if live, _ := children(t, c, w); len(live) != 1 {
		t.Errorf("an owner being deleted replaced a child: children %v, want only %s", live, two[1])
	}
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if err := c.Patch(context.Background(), w, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
}

// TestReconciler_MinReady: with minReadySeconds 2, children become
// available two seconds after they are ready, reported without any event
// from outside (the reconciler requeues itself for exactly then).
func TestReconciler_MinReady(t *testing.T) {
	c, ns := startManager(t)
	w := widget(ns, "slow", 2)
	_ = unstructured.SetNestedField(w.Object, int64(2), "spec", "minReadySeconds")
	if err := c.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	converge(t, c, w, 2)
	available := func() int64 {
		got := emptyWidget()
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(w), got); err != nil {
			t.Fatal(err)
		}
		n, _, _ := unstructured.NestedInt64(got.Object, "status", "availableReplicas")
		return n
	}
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return available() == 2, nil
	})
	if err != nil {
		t.Fatalf("availableReplicas = %d after waiting, want 2", available())
	}
}
