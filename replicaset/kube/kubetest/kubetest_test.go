package kubetest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/replicakit/replicakit/replicaset/kube/kubetest"
)

// TestNewFakeClient_BadInput: a Reconciler whose Scheme is missing, or does
// not know the owner's kind, is refused with an error that says so.
func TestNewFakeClient_BadInput(t *testing.T) {
	noScheme := newReconciler(nil)
	if _, err := kubetest.NewFakeClient(noScheme, "pool"); err == nil || !strings.Contains(err.Error(), "Scheme is nil") {
		t.Errorf("nil Scheme: got %v, want an error naming Reconciler.Scheme", err)
	}
	podsOnly := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(podsOnly); err != nil {
		t.Fatal(err)
	}
	if _, err := kubetest.NewFakeClient(newReconciler(podsOnly), "pool"); err == nil || !strings.Contains(err.Error(), "owner's kind") {
		t.Errorf("scheme without Pool: got %v, want an error about the owner's kind", err)
	}
	if _, err := kubetest.NewFakeClient(newReconciler(newScheme()), ""); err == nil {
		t.Error("empty controller name: got no error")
	}
}

// TestNewFakeClient_Metadata: objects given without a UID, creation
// timestamp and generation get them, on the caller's copy too, and so does
// every object created through the client, as on an API server.
func TestNewFakeClient_Metadata(t *testing.T) {
	ctx := context.Background()
	r := newReconciler(newScheme())
	pool := newPool("pool", 2)
	c, err := kubetest.NewFakeClient(r, "pool", pool)
	if err != nil {
		t.Fatal(err)
	}
	if pool.UID == "" {
		t.Fatal("the caller's Pool got no UID")
	}
	var stored Pool
	if err := c.Get(ctx, client.ObjectKeyFromObject(pool), &stored); err != nil {
		t.Fatal(err)
	}
	if stored.UID != pool.UID || !stored.CreationTimestamp.Equal(&pool.CreationTimestamp) || stored.Generation != pool.Generation {
		t.Errorf("stored UID %q, created %v, generation %d; caller's %q, %v, %d",
			stored.UID, stored.CreationTimestamp, stored.Generation, pool.UID, pool.CreationTimestamp, pool.Generation)
	}
	if pool.CreationTimestamp.IsZero() || pool.Generation != 1 {
		t.Errorf("the caller's Pool: created %v, generation %d; want a time and 1", pool.CreationTimestamp, pool.Generation)
	}
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pool)}); err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 {
		t.Fatalf("got %d Pods, want 2", len(pods.Items))
	}
	seen := map[types.UID]bool{pool.UID: true}
	for _, p := range pods.Items {
		if p.UID == "" || seen[p.UID] {
			t.Errorf("Pod %s has UID %q, empty or not unique", p.Name, p.UID)
		}
		seen[p.UID] = true
		if p.CreationTimestamp.IsZero() || p.Generation != 1 {
			t.Errorf("Pod %s: created %v, generation %d; want a time and 1", p.Name, p.CreationTimestamp, p.Generation)
		}
	}
}

// TestReconcile_NotSetUp: a Reconciler built by hand and never set up says
// what it lacks, terminally, instead of reading without its indexes.
func TestReconcile_NotSetUp(t *testing.T) {
	r := newReconciler(newScheme())
	_, err := r.Reconcile(context.Background(), reconcile.Request{})
	if err == nil || !errors.Is(err, reconcile.TerminalError(nil)) || !strings.Contains(err.Error(), "SetupWithIndexer") {
		t.Errorf("got %v, want a terminal error naming SetupWithManager and SetupWithIndexer", err)
	}
}

// failingIndexer refuses every index after the first n.
type failingIndexer struct{ n int }

func (f *failingIndexer) IndexField(context.Context, client.Object, string, client.IndexerFunc) error {
	if f.n == 0 {
		return errors.New("indexer refused")
	}
	f.n--
	return nil
}

// TestSetupWithIndexer_FailureLeavesNotSetUp: when registering an index
// fails, SetupWithIndexer says so and leaves the Reconciler as it was, so
// that Reconcile still refuses to run rather than read through indexes the
// cache does not have.
func TestSetupWithIndexer_FailureLeavesNotSetUp(t *testing.T) {
	for n := range 2 {
		r := newReconciler(newScheme())
		if err := r.SetupWithIndexer(&failingIndexer{n: n}, "pool"); err == nil || !strings.Contains(err.Error(), "indexer refused") {
			t.Fatalf("index %d refused: SetupWithIndexer = %v, want the indexer's error", n, err)
		}
		_, err := r.Reconcile(context.Background(), reconcile.Request{})
		if !errors.Is(err, reconcile.TerminalError(nil)) || !strings.Contains(err.Error(), "SetupWithIndexer") {
			t.Errorf("index %d refused: Reconcile = %v, want the terminal not-set-up error", n, err)
		}
	}
}
