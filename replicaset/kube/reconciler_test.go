package kube_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/replicaset/kube"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	log.SetLogger(logr.Discard()) // the managers' logs are not the tests' output
	testenv.Main(m, &env, testenv.Options{CRDs: []*apiextensionsv1.CustomResourceDefinition{testenv.WidgetCRD()}})
}

// reconciler is the binding under test: Widgets owning ConfigMaps.
type reconciler = kube.Reconciler[*unstructured.Unstructured, *corev1.ConfigMap]

// startManager runs a manager with the Widget reconciler until the test
// ends, and returns a namespace of the test's own. edit may change the
// manager's options (a client through controller-runtime's interceptor).
func startManager(t *testing.T, edit ...func(*ctrl.Options)) (client.Client, string) {
	t.Helper()
	return startManagerWith(t, nil, edit...)
}

// startManagerWith is startManager with configure changing the reconciler
// before it is set up.
func startManagerWith(t *testing.T, configure func(*reconciler, ctrl.Manager), edit ...func(*ctrl.Options)) (client.Client, string) {
	t.Helper()
	e := env.Require(t)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	// The manager sees only the test's namespace, unless the test's own
	// options say otherwise: what earlier tests left in theirs (children
	// that never become healthy, say) is not its to reconcile, nor to
	// count in its metrics.
	ns := fmt.Sprintf("t-%d", time.Now().UnixNano())
	e.StartManager(t, scheme, func(mgr ctrl.Manager) error {
		r := newWidgetReconciler()
		if configure != nil {
			configure(r, mgr)
		}
		return r.SetupWithManager(mgr, "widget")
	}, append([]func(*ctrl.Options){testenv.OnlyNamespace(ns)}, edit...)...)
	if err := e.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	return e.Client, ns
}

// children returns the names of the live ConfigMaps w controls, read from
// the API server.
func children(t *testing.T, c client.Client, w *unstructured.Unstructured) (live []string, deleting int) {
	t.Helper()
	var l corev1.ConfigMapList
	if err := c.List(context.Background(), &l, client.InNamespace(w.GetNamespace())); err != nil {
		t.Fatal(err)
	}
	for _, cm := range l.Items {
		ref := metav1.GetControllerOf(&cm)
		if ref == nil || ref.UID != w.GetUID() {
			continue
		}
		if cm.DeletionTimestamp != nil {
			deleting++
			continue
		}
		live = append(live, cm.Name)
	}
	slices.Sort(live)
	return live, deleting
}

// converge waits until w has exactly n live children and its status says
// so, and returns the children.
func converge(t *testing.T, c client.Client, w *unstructured.Unstructured, n int) []string {
	t.Helper()
	var live []string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		live, _ = children(t, c, w)
		if len(live) != n {
			return false, nil
		}
		got := emptyWidget()
		if err := c.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
			return false, err
		}
		replicas, _, _ := unstructured.NestedInt64(got.Object, "status", "replicas")
		ready, _, _ := unstructured.NestedInt64(got.Object, "status", "readyReplicas")
		observed, _, _ := unstructured.NestedInt64(got.Object, "status", "observedGeneration")
		return replicas == int64(n) && ready == int64(n) && observed == got.GetGeneration(), nil
	})
	if err != nil {
		t.Fatalf("%s did not converge on %d children (have %v): %v", w.GetName(), n, live, err)
	}
	return live
}

func scale(t *testing.T, c client.Client, w *unstructured.Unstructured, n int64) {
	t.Helper()
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n))
	if err := c.Patch(context.Background(), w, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatalf("scale %s to %d: %v", w.GetName(), n, err)
	}
}

// TestReconciler_Story scales a Widget 0→3→1→2→0 on the real API server:
// exact counts, status that says so, and the survivor of the scale-down
// kept on the way back up.
func TestReconciler_Story(t *testing.T) {
	c, ns := startManager(t)
	w := widget(ns, "test-rs", 0)
	if err := c.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	converge(t, c, w, 0)
	scale(t, c, w, 3)
	converge(t, c, w, 3)
	scale(t, c, w, 1)
	survivor := converge(t, c, w, 1)
	scale(t, c, w, 2)
	if live := converge(t, c, w, 2); !slices.Contains(live, survivor[0]) {
		t.Errorf("after 1→2: children %v lost the survivor %s", live, survivor[0])
	}
	scale(t, c, w, 0)
	converge(t, c, w, 0)

	waitEvents(t, c, w, "SuccessfulCreate", "SuccessfulDelete")

	// Metrics in controller-runtime's registry (shared by every test here,
	// so at least this test's 4 creates and 4 deletes).
	created := counter(t, "replicakit_children_created_total", "Widget")
	deleted := counter(t, "replicakit_children_deleted_total", "Widget")
	if created < 4 || deleted < 4 {
		t.Errorf("metrics: %v created, %v deleted; want at least 4 each", created, deleted)
	}
}

// waitEvents waits until the owner has events with every reason given
// (events.k8s.io/v1, as controller-runtime's recorder writes them).
func waitEvents(t *testing.T, c client.Client, w *unstructured.Unstructured, reasons ...string) {
	t.Helper()
	uid := w.GetUID()
	var seen map[string]bool
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var l eventsv1.EventList
		if err := c.List(ctx, &l, client.InNamespace(w.GetNamespace())); err != nil {
			return false, err
		}
		seen = map[string]bool{}
		for _, e := range l.Items {
			if e.Regarding.UID == uid {
				seen[e.Reason] = true
			}
		}
		for _, r := range reasons {
			if !seen[r] {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("owner %s has events %v, want %v", w.GetName(), seen, reasons)
	}
}

// counter reads a counter with label kind from controller-runtime's
// metrics registry.
func counter(t *testing.T, name, kind string) float64 {
	t.Helper()
	return labelCounter(t, metrics.Registry, name, "kind", kind)
}
