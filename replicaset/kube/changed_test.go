package kube_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/replicakit/replicakit/internal/faults"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// TestReconciler_DeleteOfChangedChildLeft: a rolling update's pass plans
// to delete a child on the old template that failed (the tests' stand-in
// for a VM not yet provisioned, which a rollout deletes at once, as it
// serves nothing); before the delete reaches the API server the child
// recovers and is ready. The delete must leave it: the plan was made on a
// state that no longer holds. (Before, the pass deleted it: the soak saw
// a rollout delete a set's only available VM, whose status came in while
// the pass's create waited out a 429's Retry-After.) Both ways the
// binding deletes, the manager's own client and a wrapped one, are held
// at the delete itself.
func TestReconciler_DeleteOfChangedChildLeft(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(*testing.T, *heldDelete) (client.Client, string)
	}{
		{"own client", func(t *testing.T, h *heldDelete) (client.Client, string) {
			var r *reconciler
			c, ns := startManagerWrapped(t, h.wrap, func(rr *reconciler, _ ctrl.Manager) { r = rr })
			if !kube.DeletesUnread(r) {
				t.Fatal("with the manager's own client, the reconciler does not delete through its childDeleter")
			}
			return c, ns
		}},
		{"wrapped client", func(t *testing.T, h *heldDelete) (client.Client, string) {
			return startManager(t, func(o *ctrl.Options) { o.NewClient = faults.NewClient(h.funcs()) })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			h := &heldDelete{}
			c, ns := tc.start(t, h)
			w := widget(ns, "changed", 3)
			if err := unstructured.SetNestedMap(w.Object, map[string]any{}, "spec", "strategy"); err != nil {
				t.Fatal(err)
			}
			createObject(t, c, w)
			b := converge(t, c, w, 3)[0]
			key := client.ObjectKey{Namespace: ns, Name: b}
			setPhase := func(phase string) {
				t.Helper()
				patch := `{"data":{"phase":null}}`
				if phase != "" {
					patch = `{"data":{"phase":"` + phase + `"}}`
				}
				cm := &corev1.ConfigMap{}
				cm.Namespace, cm.Name = ns, b
				if err := c.Patch(ctx, cm, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
					t.Errorf("set %s's phase to %q: %v", b, phase, err)
				}
			}
			h.arm(b, func() { setPhase("") }, func() bool {
				got := &corev1.ConfigMap{}
				return c.Get(ctx, key, got) == nil && got.DeletionTimestamp == nil
			})
			setPhase("Failed")
			await(t, "the binding to see "+b+" failed", func() bool { return readyReplicas(t, c, w) == 2 })
			mergePatch(t, c, w, `{"spec":{"template":{"data":{"version":"2"}}}}`)
			await(t, "the delete of "+b, h.answered)

			conflict, survived := h.outcome()
			if !conflict {
				t.Errorf("the pass's delete of %s, which recovered after the pass read it, was not refused as a conflict", b)
			}
			if !survived {
				t.Errorf("%s, ready when the pass's delete reached the API server, was deleted", b)
			}
			converge(t, c, w, 3)
		})
	}
}

// readyReplicas reads w's status.readyReplicas.
func readyReplicas(t *testing.T, c client.Client, w *unstructured.Unstructured) int64 {
	t.Helper()
	got := emptyWidget()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(w), got); err != nil {
		t.Fatal(err)
	}
	n, _, _ := unstructured.NestedInt64(got.Object, "status", "readyReplicas")
	return n
}

// heldDelete holds the first delete of one child until a change is made
// to it, then lets the delete go on as the pass sent it, and records
// whether the API server refused it as a conflict and whether the child
// was still there, not being deleted, right after.
type heldDelete struct {
	mu       sync.Mutex
	name     string
	change   func()      // runs before the held delete goes on
	there    func() bool // reads the child right after
	held     bool
	done     bool
	conflict bool
	survived bool
}

// arm names the child whose next delete to hold, the change, and how to
// tell it survived.
func (h *heldDelete) arm(name string, change func(), there func() bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.name, h.change, h.there = name, change, there
}

// take reports whether a delete of name is the one to hold, and marks
// it held.
func (h *heldDelete) take(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.name == "" || name != h.name || h.held {
		return false
	}
	h.held = true
	return true
}

// finish records the held delete's answer, and reads the child.
func (h *heldDelete) finish(conflict bool) {
	survived := h.there()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done, h.conflict, h.survived = true, conflict, survived
}

func (h *heldDelete) answered() bool { h.mu.Lock(); defer h.mu.Unlock(); return h.done }

func (h *heldDelete) outcome() (conflict, survived bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.conflict, h.survived
}

// wrap holds the DELETE on the wire, for the manager's own client (the
// Reconciler's childDeleter).
func (h *heldDelete) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		i := strings.LastIndex(req.URL.Path, "/configmaps/")
		if req.Method != http.MethodDelete || i < 0 || !h.take(req.URL.Path[i+len("/configmaps/"):]) {
			return rt.RoundTrip(req)
		}
		h.change()
		resp, err := rt.RoundTrip(req)
		h.finish(err == nil && resp.StatusCode == http.StatusConflict)
		return resp, err
	})
}

// funcs holds the delete in a wrapped client's Delete.
func (h *heldDelete) funcs() interceptor.Funcs {
	return interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		if !h.take(obj.GetName()) {
			return c.Delete(ctx, obj, opts...)
		}
		h.change()
		err := c.Delete(ctx, obj, opts...)
		h.finish(apierrors.IsConflict(err))
		return err
	}}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
