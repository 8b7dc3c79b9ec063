package kube_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/replicakit/replicakit/internal/faults"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// The edges of one pass on the real API server. Each test here failed on
// the binding before its redesign (see the comment on each).

// waitCondition waits until w's condition typ has the status and reason.
func waitCondition(t *testing.T, c client.Client, w *unstructured.Unstructured, typ, status, reason string) (msg string) {
	t.Helper()
	var s, r string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		s, r, msg = condition(t, c, w, typ)
		return s == status && r == reason, nil
	})
	if err != nil {
		t.Fatalf("%s: condition %s is %s/%s (%q), want %s/%s", w.GetName(), typ, s, r, msg, status, reason)
	}
	return msg
}

// annotate sets an annotation on the ConfigMap ns/name.
func annotate(t *testing.T, c client.Client, ns, name, key, value string) {
	t.Helper()
	patch := []byte(`{"metadata":{"annotations":{"` + key + `":"` + value + `"}}}`)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := c.Patch(context.Background(), cm, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
}

func createObject(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

// TestEdges_PausedLeavesEverythingAlone: a paused owner adopts no orphan,
// creates nothing and says Paused (before: it adopted the orphan and said
// ScalingUp=True).
func TestEdges_PausedLeavesEverythingAlone(t *testing.T) {
	c, ns := startManager(t)
	createObject(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan", Labels: map[string]string{"app": "held"}}})
	w := widget(ns, "held", 3)
	_ = unstructured.SetNestedField(w.Object, true, "spec", "paused")
	createObject(t, c, w)
	// A pass has run once the status says Paused; give any write it
	// might have made a moment to land before looking.
	waitCondition(t, c, w, kube.ConditionScalingUp, "False", "Paused")
	waitCondition(t, c, w, kube.ConditionReady, "False", "Paused")
	time.Sleep(500 * time.Millisecond)
	if live, _ := children(t, c, w); len(live) != 0 {
		t.Errorf("a paused owner has children %v, want none (no creates, no adoption)", live)
	}
}

// TestEdges_DeletingOwnerNeverReleases: a child that stops matching while
// its owner is being deleted keeps its owner reference, so the garbage
// collector's cascade takes it (before: it was released and survived).
func TestEdges_DeletingOwnerNeverReleases(t *testing.T) {
	c, ns := startManager(t)
	ctx := context.Background()
	w := widget(ns, "leaving", 2)
	w.SetFinalizers([]string{finalizer})
	createObject(t, c, w)
	two := converge(t, c, w, 2)
	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: two[0]}}
	patch := []byte(`{"metadata":{"labels":{"app":"elsewhere"}}}`)
	if err := c.Patch(ctx, cm, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	// The relabelled child's event starts a pass; the status says it ran.
	waitCondition(t, c, w, kube.ConditionReady, "False", "OwnerDeleting")
	time.Sleep(500 * time.Millisecond)
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(cm); ref == nil || ref.UID != w.GetUID() {
		t.Errorf("a deleting owner released %s (controller now %v)", cm.Name, ref)
	}
	patch = []byte(`{"metadata":{"finalizers":null}}`)
	if err := c.Patch(ctx, w, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
}

// TestEdges_TakenNameIsRetriedAtOnce: the first create finds its name
// taken by another owner's object (created in its way at that moment); the
// set still converges in seconds, not after the expectations' 5-minute TTL
// (before: it stalled), and the foreign object is untouched.
func TestEdges_TakenNameIsRetriedAtOnce(t *testing.T) {
	var mu sync.Mutex
	var squatted string
	squat := interceptor.Funcs{Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		mu.Lock()
		first := squatted == "" && obj.GetNamespace() != "" && isConfigMap(obj)
		if first {
			squatted = obj.GetName()
		}
		mu.Unlock()
		if first {
			foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: obj.GetName(),
				Labels: map[string]string{"owner": "someone-else"}}, Data: map[string]string{"mine": "yes"}}
			if err := cl.Create(ctx, foreign); err != nil {
				return err
			}
		}
		return cl.Create(ctx, obj, opts...)
	}}
	c, ns := startManager(t, func(o *ctrl.Options) { o.NewClient = faults.NewClient(squat) })
	w := widget(ns, "squat", 2)
	createObject(t, c, w)
	converge(t, c, w, 2)
	mu.Lock()
	name := squatted
	mu.Unlock()
	foreign := &corev1.ConfigMap{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, foreign); err != nil {
		t.Fatalf("the foreign object %q: %v", name, err)
	}
	if metav1.GetControllerOf(foreign) != nil || foreign.Data["mine"] != "yes" || foreign.Labels["owner"] != "someone-else" {
		t.Errorf("the foreign object was touched: %+v", foreign.ObjectMeta)
	}
}

func isConfigMap(obj client.Object) bool {
	_, ok := obj.(*corev1.ConfigMap)
	return ok
}

// countingReader counts reads from the API server.
type countingReader struct {
	client.Reader
	n atomic.Int64
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.n.Add(1)
	return r.Reader.Get(ctx, key, obj, opts...)
}

func (r *countingReader) List(ctx context.Context, l client.ObjectList, opts ...client.ListOption) error {
	r.n.Add(1)
	return r.Reader.List(ctx, l, opts...)
}

// TestEdges_RefusingPlatformCostsOneCallPerPass: every create fails with a
// server error; each pass costs its one create and at most two reads, one
// confirming the owner and one finding out whether the create happened
// (before: a read for every create that never started, 19 per pass here).
func TestEdges_RefusingPlatformCostsOneCallPerPass(t *testing.T) {
	var creates atomic.Int64
	refuse := interceptor.Funcs{Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if isConfigMap(obj) {
			creates.Add(1)
			return apierrors.NewInternalError(errTest)
		}
		return cl.Create(ctx, obj, opts...)
	}}
	reads := &countingReader{}
	c, ns := startManagerWith(t, func(r *reconciler, mgr ctrl.Manager) {
		reads.Reader = mgr.GetAPIReader()
		r.APIReader = reads
	}, func(o *ctrl.Options) { o.NewClient = faults.NewClient(refuse) })
	w := widget(ns, "refused", 20)
	createObject(t, c, w)
	waitCondition(t, c, w, kube.ConditionReplicaFailure, "True", "FailedReplicaOperation")
	time.Sleep(2 * time.Second)
	n, r := creates.Load(), reads.n.Load()
	if n == 0 {
		t.Fatal("no create was attempted")
	}
	if r > 2*n {
		t.Errorf("%d creates attempted and %d reads from the API server: more than two reads per pass", n, r)
	}
	t.Logf("%d creates, %d live reads", n, r)
}

var errTest = testError{}

type testError struct{}

func (testError) Error() string { return "refused by the test" }

// TestEdges_BadDeletionCostIsReported: a deletion cost that is not an
// integer gives a Warning event and a condition naming the child and the
// value (before: silently cost 0).
func TestEdges_BadDeletionCostIsReported(t *testing.T) {
	c, ns := startManager(t)
	w := widget(ns, "costly", 1)
	createObject(t, c, w)
	one := converge(t, c, w, 1)
	annotate(t, c, ns, one[0], kube.AnnotationDeletionCost, "cheap")
	msg := waitCondition(t, c, w, kube.ConditionReplicaFailure, "True", "InvalidAnnotation")
	if !strings.Contains(msg, one[0]) || !strings.Contains(msg, `"cheap"`) {
		t.Errorf("condition message %q does not name the child %s and the value", msg, one[0])
	}
	waitEvents(t, c, w, "InvalidAnnotation")
}

// TestEdges_HighestOrdinalNeedsOrdinalNames: HighestOrdinal on randomly
// named children is a condition, and nothing is deleted by name order
// (before: it silently deleted in name order).
func TestEdges_HighestOrdinalNeedsOrdinalNames(t *testing.T) {
	c, ns := startManager(t)
	w := widget(ns, "ordinals", 2)
	createObject(t, c, w)
	two := converge(t, c, w, 2)
	patch := []byte(`{"spec":{"replicas":1,"deletePolicy":"HighestOrdinal"}}`)
	if err := c.Patch(context.Background(), w, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, w, kube.ConditionReplicaFailure, "True", "NeedsOrdinalNames")
	if live, _ := children(t, c, w); len(live) != 2 {
		t.Errorf("children %v, want both of %v kept", live, two)
	}
}

// TestEdges_ProtectedLeftBehindSaysWhy: with the only child protected and
// the owner scaled to 0, Ready says ScaleInProtected (before: the same
// "0 of 0 replicas ready" as an unready set).
func TestEdges_ProtectedLeftBehindSaysWhy(t *testing.T) {
	c, ns := startManager(t)
	w := widget(ns, "kept", 1)
	createObject(t, c, w)
	one := converge(t, c, w, 1)
	annotate(t, c, ns, one[0], kube.AnnotationScaleInProtection, "true")
	scale(t, c, w, 0)
	msg := waitCondition(t, c, w, kube.ConditionReady, "False", "ScaleInProtected")
	if !strings.Contains(msg, "protected from scale-in") {
		t.Errorf("Ready message %q does not explain the protection", msg)
	}
}
