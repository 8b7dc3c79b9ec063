package kubetest_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/replicaset/kube/kubetest"
)

// TestPoolOnAPIServer is the test an importer writes for an operator built
// on package kube: envtest (controller-runtime's, with the binaries
// KUBEBUILDER_ASSETS names; `make test` points it at bin/), the CRD from
// testdata, the Reconciler in a manager. It scales a Pool 3 → 1 → 2 and
// reads the Pods and the status from the API server at each step; then it
// plays the kubelet (MarkPodsReady) and reads the ready count, and rolls
// the Pods to a new image while an independent watch (WatchBounds) checks
// the default strategy's bounds: never more than one Pod above the
// desired count, counting those being deleted, and never fewer ready.
func TestPoolOnAPIServer(t *testing.T) {
	cfg := startEnv(t, "testdata")
	ctx := t.Context()
	c, stop, err := startPoolOperator(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop) // runs before env.Stop, registered above

	pool := newPool("web", 3)
	if err := c.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		replicas int32
		want     []string
	}{
		{3, []string{"web-0", "web-1", "web-2"}},
		{1, []string{"web-0"}},
		{2, []string{"web-0", "web-1"}},
	} {
		if pool.Spec.Replicas != step.replicas {
			patch := client.MergeFrom(pool.DeepCopyObject().(*Pool))
			pool.Spec.Replicas = step.replicas
			if err := c.Patch(ctx, pool, patch); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		var status PoolStatus
		deadline := time.Now().Add(30 * time.Second)
		for ; time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			got, status = podsAndStatus(ctx, t, c, pool)
			if slices.Equal(got, step.want) && status.Replicas == step.replicas {
				break
			}
		}
		if diff := cmp.Diff(step.want, got); diff != "" || status.Replicas != step.replicas {
			t.Fatalf("replicas %d: Pods (-want +got):\n%s\nstatus.replicas %d", step.replicas, diff, status.Replicas)
		}
	}

	// No kubelet runs the Pods: the test makes them ready.
	marked, err := kubetest.MarkPodsReady(ctx, c, pool)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"web-0", "web-1"}; !slices.Equal(marked, want) {
		t.Errorf("MarkPodsReady marked %v, want %v", marked, want)
	}
	awaitPool(t, c, pool, "2 of 2 ready", func(s PoolStatus) bool { return s.ReadyReplicas == 2 })

	// A new image rolls the Pods; the test plays the kubelet as they come.
	w, err := kubetest.WatchBounds(ctx, c, pool, &corev1.PodList{}, kubetest.PodReady)
	if err != nil {
		t.Fatal(err)
	}
	before := podUIDs(ctx, t, c, pool)
	patch := client.MergeFrom(pool.DeepCopyObject().(*Pool))
	pool.Spec.Template.Spec.Containers[0].Image = "busybox:1.37"
	if err := c.Patch(ctx, pool, patch); err != nil {
		t.Fatal(err)
	}
	awaitPool(t, c, pool, "rolled out", func(s PoolStatus) bool {
		if _, err := kubetest.MarkPodsReady(ctx, c, pool); err != nil {
			t.Fatal(err)
		}
		done := meta.FindStatusCondition(s.Conditions, kube.ConditionRolledOut)
		return done != nil && done.ObservedGeneration == pool.Generation && done.Status == metav1.ConditionTrue && s.ReadyReplicas == 2
	})
	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	bounds, err := w.Stop(stopCtx)
	if err != nil {
		t.Fatal(err)
	}
	if bounds.MostLive > 3 || bounds.FewestReady < 2 {
		t.Errorf("the watch saw %v; want at most 3 live and at least 2 ready (2 desired, MaxSurge 1, MaxUnavailable 0)", bounds)
	}
	after := podUIDs(ctx, t, c, pool)
	for uid, image := range after {
		if _, old := before[uid]; old || image != "busybox:1.37" {
			t.Errorf("Pods (UID: image) %v after the rollout from %v; want 2 new ones on busybox:1.37", after, before)
			break
		}
	}
	if len(after) != 2 {
		t.Errorf("%d Pods after the rollout, want 2", len(after))
	}
}

// podUIDs returns the image of each live Pod of pool, by UID.
func podUIDs(ctx context.Context, t *testing.T, c client.Client, pool *Pool) map[string]string {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(pool.Namespace), client.MatchingLabels(pool.Spec.Selector.MatchLabels)); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[string(p.UID)] = p.Spec.Containers[0].Image
		}
	}
	return out
}

// awaitPool polls pool's status until ok holds, or fails t after 30 s
// saying what it waited for.
func awaitPool(t *testing.T, c client.Client, pool *Pool, what string, ok func(PoolStatus) bool) {
	t.Helper()
	var got Pool
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(pool), &got); err != nil {
			t.Fatal(err)
		}
		if ok(got.Status) {
			return
		}
	}
	t.Fatalf("never %s: status %+v", what, got.Status)
}

// podsAndStatus reads, from the API server, the names of pool's live Pods
// (checking that pool controls each) and pool's status.
func podsAndStatus(ctx context.Context, t *testing.T, c client.Client, pool *Pool) ([]string, PoolStatus) {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(pool.Namespace), client.MatchingLabels(pool.Spec.Selector.MatchLabels)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		if ref := metav1.GetControllerOf(&p); ref == nil || ref.UID != pool.UID {
			t.Fatalf("Pod %s is not controlled by Pool %s (%s): %v", p.Name, pool.Name, pool.UID, ref)
		}
		names = append(names, p.Name)
	}
	var fresh Pool
	if err := c.Get(ctx, client.ObjectKeyFromObject(pool), &fresh); err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names, fresh.Status
}
