package kubetest_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// TestPoolOnAPIServer is the test an importer writes for an operator built
// on package kube: envtest (controller-runtime's, with the binaries
// KUBEBUILDER_ASSETS names; `make test` points it at bin/), the CRD from
// testdata, the Reconciler in a manager. It scales a Pool 3 → 1 → 2 and
// reads the Pods and the status from the API server at each step.
func TestPoolOnAPIServer(t *testing.T) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		if os.Getenv("REPLICAKIT_REQUIRE_ENVTEST") == "1" {
			t.Fatal("KUBEBUILDER_ASSETS is not set (make test sets it to bin/)")
		}
		t.Skip("KUBEBUILDER_ASSETS is not set: no kube-apiserver and etcd to test on")
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{"testdata"}, ErrorIfCRDPathMissing: true, BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("envtest stop: %v", err)
		}
	})
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
