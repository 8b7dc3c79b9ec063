package kubetest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
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
	if _, err := kubetest.NewFakeClient(newReconciler(podsOnly), "pool"); err == nil || !strings.Contains(err.Error(), "owner kind") {
		t.Errorf("scheme without Pool: got %v, want an error about the owner kind", err)
	}
	if _, err := kubetest.NewFakeClient(newReconciler(newScheme()), ""); err == nil {
		t.Error("empty controller name: got no error")
	}
}

// TestNewFakeClient_UIDs: objects given without a UID get one, on the
// caller's copy too, and so does every object created through the client.
func TestNewFakeClient_UIDs(t *testing.T) {
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
	if stored.UID != pool.UID {
		t.Errorf("stored UID %q, caller's %q", stored.UID, pool.UID)
	}
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pool)}); err != nil {
		t.Fatal(err)
	}
	var pods PodNames
	pods.read(ctx, t, c)
	if len(pods) != 2 {
		t.Fatalf("got Pods %v, want 2", pods)
	}
	seen := map[string]bool{string(pool.UID): true}
	for name, uid := range pods {
		if uid == "" || seen[uid] {
			t.Errorf("Pod %s has UID %q, empty or not unique", name, uid)
		}
		seen[uid] = true
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
