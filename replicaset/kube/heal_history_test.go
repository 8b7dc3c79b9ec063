package kube_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/replicakit/replicakit/internal/faults"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// TestHeal_FailedDeleteIsNoFailedReplacement: children that never become
// healthy are replaced when their start-up window ends, and each such
// replacement is a failure in the owner's remediation history; but while
// the API server refuses their deletes, nothing was replaced, and the
// history must not count a failure (nor back off for one). Once deletes
// go through, it does.
func TestHeal_FailedDeleteIsNoFailedReplacement(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	c, ns := startManagerWith(t, func(r *reconciler, _ ctrl.Manager) { r.Adapter = healthyWidgets{} },
		func(o *ctrl.Options) {
			o.NewClient = faults.NewClient(interceptor.Funcs{
				Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
					if refuse.Load() { // the test deletes nothing: each is a child's
						return apierrors.NewInternalError(errRefused)
					}
					return c.Delete(ctx, obj, opts...)
				},
			})
		})
	w := neverHealthy(t, c, ns, "history")

	// The moment: a replacement's delete was tried and refused; the pass
	// that tried it wrote the history before its events.
	waitEvents(t, c, w, "FailedDelete")
	if got := failures(t, c, w); got != 0 {
		t.Fatalf("with every delete refused, the history counts %d failed replacements, want 0", got)
	}

	refuse.Store(false)
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return failures(t, c, w) > 0, nil
	})
	if err != nil {
		t.Fatalf("once deletes go through, a replacement of a child never healthy counts no failure: %v", err)
	}
}

// neverHealthy creates a healing Widget of 3 children that never become
// healthy, in ns: its start-up window is an hour until the set has its 3
// children, so that none is replaced before converge sees them (a busy
// machine may take longer than a short window to make them); then it is
// 1s, and they fall due.
func neverHealthy(t *testing.T, c client.Client, ns, name string) *unstructured.Unstructured {
	t.Helper()
	w := widget(ns, name, 3)
	_ = unstructured.SetNestedStringMap(w.Object, map[string]string{"health": "bad"}, "spec", "template", "data")
	_ = unstructured.SetNestedMap(w.Object, map[string]any{"startupWindowSeconds": int64(3600), "maxUnhealthy": int64(3)},
		"spec", "remediation")
	createObject(t, c, w)
	converge(t, c, w, 3)
	patch := []byte(`{"spec":{"remediation":{"startupWindowSeconds":1}}}`)
	if err := c.Patch(t.Context(), w, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	return w
}

// errRefused is the fault the test's API client answers deletes with.
var errRefused = errors.New("injected: delete refused")

// failures reads the owner's remediation history's failures.
func failures(t *testing.T, c client.Client, w *unstructured.Unstructured) int {
	t.Helper()
	v := get(t, c, w).GetAnnotations()[kube.AnnotationRemediationHistory]
	if v == "" {
		return 0
	}
	var h struct {
		Failures int `json:"failures"`
	}
	if err := json.Unmarshal([]byte(v), &h); err != nil {
		t.Fatalf("%s=%q: %v", kube.AnnotationRemediationHistory, v, err)
	}
	return h.Failures
}

// TestHeal_UnwrittenHistoryStillBacksOff: while the API server refuses
// the owner's remediation history (an owner's RBAC without patch on its
// own kind), the binding plans with the history its replacements made,
// so the backoff after a failed replacement holds the next one instead of
// the set replacing its children as fast as their windows end (found by
// an importer's trial: the refused writes were only logged).
func TestHeal_UnwrittenHistoryStillBacksOff(t *testing.T) {
	var refused atomic.Int32
	c, ns := startManagerWith(t, func(r *reconciler, _ ctrl.Manager) { r.Adapter = healthyWidgets{} },
		func(o *ctrl.Options) {
			o.NewClient = faults.NewClient(interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					if raw, err := patch.Data(obj); err == nil && strings.Contains(string(raw), kube.AnnotationRemediationHistory) {
						refused.Add(1)
						return apierrors.NewForbidden(schema.GroupResource{Group: "test.replicakit.io", Resource: "widgets"}, obj.GetName(), errRefused)
					}
					return c.Patch(ctx, obj, patch, opts...)
				},
			})
		})
	w := neverHealthy(t, c, ns, "unwritten")
	// The moment: a replacement was made and its failure could not be
	// written; the next pass backs off all the same.
	msg := waitCondition(t, c, w, kube.ConditionRemediationAllowed, "False", "RemediationBackoff")
	if v := get(t, c, w).GetAnnotations()[kube.AnnotationRemediationHistory]; v != "" || refused.Load() == 0 {
		t.Fatalf("the history was written (%q) or never refused (%d refusals): the test holds no fault", v, refused.Load())
	}
	t.Logf("backing off with the history unwritten: %s", msg)
}
