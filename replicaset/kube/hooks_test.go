package kube_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/replicakit/replicakit/internal/faults"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
)

const hookDrain = "pre-delete.hook.replicakit.io/drain"

// getChild reads the ConfigMap ns/name from the API server; nil when it is
// gone.
func getChild(t *testing.T, c client.Client, ns, name string) *corev1.ConfigMap {
	t.Helper()
	var cm corev1.ConfigMap
	err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return &cm
}

// waitChild waits until the child ns/name satisfies ok (nil: gone).
func waitChild(t *testing.T, c client.Client, ns, name, what string, ok func(*corev1.ConfigMap) bool) *corev1.ConfigMap {
	t.Helper()
	var cm *corev1.ConfigMap
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		cm = getChild(t, c, ns, name)
		return ok(cm), nil
	})
	if err != nil {
		t.Fatalf("%s %s: not within 20s (now %+v)", name, what, cm)
	}
	return cm
}

// waitPreparing waits until one of names prepares to leave, held by the
// drain hook, and returns it.
func waitPreparing(t *testing.T, c client.Client, ns string, names []string, when string) string {
	t.Helper()
	var chosen string
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		for _, n := range names {
			if cm := getChild(t, c, ns, n); preparing(cm) && cm.Annotations[hookDrain] != "" {
				chosen = n
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no child prepares to leave %s: %v", when, err)
	}
	return chosen
}

func preparing(cm *corev1.ConfigMap) bool {
	return cm != nil && cm.Annotations[kube.AnnotationPreparing] != ""
}

// releaseHook removes annotation key from the child ns/name, as a hook's
// controller does.
func releaseHook(t *testing.T, c client.Client, ns, name, key string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	patch := []byte(`{"metadata":{"annotations":{"` + key + `":null}}}`)
	if err := c.Patch(context.Background(), cm, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
}

func setSpec(t *testing.T, c client.Client, w *unstructured.Unstructured, patch string) {
	t.Helper()
	if err := c.Patch(context.Background(), w, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// TestHooks_ScaleDownWaitsForRelease: a Widget of 3 with a pre-delete
// hook scaled to 2. The child chosen prepares (AnnotationPreparing and the
// hook's annotation) and stays while the hook holds it, Draining naming
// it and the hook; a scale back to 3 takes it back (both annotations go)
// without a create; scaled to 2 again, it is deleted once the hook's
// controller releases it.
func TestHooks_ScaleDownWaitsForRelease(t *testing.T) {
	c, ns := startManager(t)
	w, live := drainedWidget(t, c, ns, "hooks", 3)

	setSpec(t, c, w, `{"spec":{"replicas":2}}`)
	chosen := waitPreparing(t, c, ns, live, "after a scale-down")
	msg := waitCondition(t, c, w, kube.ConditionDraining, "True", kube.ReasonWaitingOnHooks)
	if !strings.Contains(msg, chosen+" on drain until") {
		t.Errorf("Draining says %q, want it to name %s on drain until …", msg, chosen)
	}
	// Held: it stays for a while, and no other child is chosen.
	time.Sleep(time.Second)
	if now, deleting := children(t, c, w); len(now) != 3 || deleting != 0 {
		t.Fatalf("while the hook holds %s: children %v, %d deleting; want the 3, none deleting", chosen, now, deleting)
	}
	if n, _, _ := unstructured.NestedInt64(get(t, c, w).Object, "status", "preparingReplicas"); n != 1 {
		t.Errorf("status.preparingReplicas is %d, want 1", n)
	}

	// A scale-up takes it back, creating nothing.
	setSpec(t, c, w, `{"spec":{"replicas":3}}`)
	waitChild(t, c, ns, chosen, "taken back", func(cm *corev1.ConfigMap) bool {
		return cm != nil && !preparing(cm) && cm.Annotations[hookDrain] == ""
	})
	waitCondition(t, c, w, kube.ConditionDraining, "False", kube.ReasonNoneDraining)
	if now, _ := children(t, c, w); !equalNames(now, live) {
		t.Errorf("after the take-back: children %v, want %v (nothing new)", now, live)
	}
	waitEvents(t, c, w, "Preparing", "TakenBack")

	// Down again: released, it goes.
	setSpec(t, c, w, `{"spec":{"replicas":2}}`)
	chosen = waitPreparing(t, c, ns, live, "after the second scale-down")
	releaseHook(t, c, ns, chosen, hookDrain)
	waitChild(t, c, ns, chosen, "deleted once released", func(cm *corev1.ConfigMap) bool { return cm == nil || cm.DeletionTimestamp != nil })
	converge(t, c, w, 2)
}

// TestHooks_TimeoutContinues: a hook that never releases its child holds
// it for its timeout (2s), then the child is deleted with a HookTimedOut
// event; with Abandon, it stays and ReplicaFailure says HookAbandoned.
func TestHooks_TimeoutContinues(t *testing.T) {
	c, ns := startManager(t)
	w := widget(ns, "timeout", 2)
	_ = unstructured.SetNestedMap(w.Object, map[string]any{"preDelete": []any{"drain"}, "timeoutSeconds": int64(2),
		"defaultResult": "Abandon"}, "spec", "lifecycle")
	createObject(t, c, w)
	converge(t, c, w, 2)

	setSpec(t, c, w, `{"spec":{"replicas":1}}`)
	msg := waitCondition(t, c, w, kube.ConditionReplicaFailure, "True", replicaset.HoldHookAbandoned.String())
	if !strings.Contains(msg, "on drain timed out at") {
		t.Errorf("ReplicaFailure says %q, want the child and its hook", msg)
	}
	if now, deleting := children(t, c, w); len(now) != 2 || deleting != 0 {
		t.Fatalf("abandoned: children %v, %d deleting; want both kept", now, deleting)
	}

	setSpec(t, c, w, `{"spec":{"lifecycle":{"defaultResult":"Continue"}}}`)
	converge(t, c, w, 1)
	waitEvents(t, c, w, "HookTimedOut")
}

// TestHooks_OwnerDeletionDrains: deleting a Widget with a pre-delete hook
// prepares every child and keeps the owner (FinalizerDrain) while the
// hook holds any; once all are released the owner goes and the garbage
// collector deletes the children.
func TestHooks_OwnerDeletionDrains(t *testing.T) {
	c, ns := startManager(t)
	w, live := drainedWidget(t, c, ns, "owner", 2)

	if err := c.Delete(t.Context(), w, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	for _, n := range live {
		waitChild(t, c, ns, n, "prepares on the owner's deletion", func(cm *corev1.ConfigMap) bool {
			return preparing(cm) && cm.Annotations[hookDrain] != "" && cm.DeletionTimestamp == nil
		})
	}
	releaseHook(t, c, ns, live[0], hookDrain)
	// Released, it goes at once, while its sibling's hook holds the owner.
	waitChild(t, c, ns, live[0], "deleted once released", func(cm *corev1.ConfigMap) bool { return cm == nil || cm.DeletionTimestamp != nil })
	time.Sleep(time.Second)
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(w), emptyWidget()); err != nil {
		t.Fatalf("the owner went while %s's hook holds it: %v", live[1], err)
	}
	if cm := getChild(t, c, ns, live[1]); cm == nil || cm.DeletionTimestamp != nil {
		t.Fatalf("%s, held by its hook, was deleted", live[1])
	}
	releaseHook(t, c, ns, live[1], hookDrain)
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(w), emptyWidget())
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatal("the owner stays once every child is released")
	}
	for _, n := range live {
		waitChild(t, c, ns, n, "deleted by the garbage collector", func(cm *corev1.ConfigMap) bool { return cm == nil })
	}
}

// TestHooks_LaunchGate: a new child carries the launch gate and is not
// ready until the gate's controller removes it.
func TestHooks_LaunchGate(t *testing.T) {
	c, ns := startManager(t)
	w := widget(ns, "gated", 1)
	_ = unstructured.SetNestedMap(w.Object, map[string]any{"launchGates": []any{"lb"}}, "spec", "lifecycle")
	createObject(t, c, w)
	gate := kube.LaunchGateAnnotation(kube.DefaultHookDomain, "lb")
	var name string
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		live, _ := children(t, c, w)
		if len(live) == 1 {
			name = live[0]
		}
		return name != "", nil
	})
	if err != nil {
		t.Fatal("no child made")
	}
	if cm := getChild(t, c, ns, name); cm.Annotations[gate] == "" {
		t.Fatalf("the new child lacks the gate %s: %v", gate, cm.Annotations)
	}
	waitCondition(t, c, w, kube.ConditionReady, "False", kube.ReasonReplicasNotReady)
	releaseHook(t, c, ns, name, gate)
	converge(t, c, w, 1)
}

// drainedWidget creates the Widget name of n children with a drain hook
// that never times out in a test, and returns it and its children once
// converged, FinalizerDrain on it.
func drainedWidget(t *testing.T, c client.Client, ns, name string, n int64) (*unstructured.Unstructured, []string) {
	t.Helper()
	w := widget(ns, name, n)
	_ = unstructured.SetNestedMap(w.Object, map[string]any{"preDelete": []any{"drain"}, "timeoutSeconds": int64(3600)},
		"spec", "lifecycle")
	createObject(t, c, w)
	live := converge(t, c, w, int(n))
	waitFinalizer(t, c, w, true)
	return w, live
}

// waitFinalizer waits until w has FinalizerDrain, or has not.
func waitFinalizer(t *testing.T, c client.Client, w *unstructured.Unstructured, want bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		has := false
		for _, f := range get(t, c, w).GetFinalizers() {
			has = has || f == kube.FinalizerDrain
		}
		return has == want, nil
	})
	if err != nil {
		t.Fatalf("finalizer %s on %s: want %v", kube.FinalizerDrain, w.GetName(), want)
	}
}

func equalNames(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestHooks_FinalizerConflict: the first attempt to add FinalizerDrain
// finds the owner changed since the pass read it (a conflict, as when a
// status write the pass made meanwhile, which starts no pass, moved its
// resourceVersion on): the binding tries again soon after, and the
// finalizer is there, without an error.
func TestHooks_FinalizerConflict(t *testing.T) {
	var conflicts atomic.Int32
	funcs := interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if _, owner := obj.(*unstructured.Unstructured); owner && conflicts.Add(1) == 1 {
				return apierrors.NewConflict(schema.GroupResource{Group: "test.replicakit.io", Resource: "widgets"}, obj.GetName(), errors.New("changed"))
			}
			return c.Patch(ctx, obj, p, opts...)
		},
	}
	c, ns := startManager(t, func(o *ctrl.Options) { o.NewClient = faults.NewClient(funcs) })
	w := widget(ns, "conflict", 1)
	_ = unstructured.SetNestedMap(w.Object, map[string]any{"preDelete": []any{"drain"}}, "spec", "lifecycle")
	createObject(t, c, w)
	waitFinalizer(t, c, w, true)
	if n := conflicts.Load(); n < 2 {
		t.Errorf("%d patches of the owner, want the conflict and the retry", n)
	}
}
