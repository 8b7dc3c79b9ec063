package kube_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset/kube"
)

// twoNamespaces makes a Widget called "a", selecting app=a, in ns and in
// a second namespace, each beside an orphan that the selector matches,
// and checks that each Widget converges on its count having adopted the
// orphan of its own namespace and no other.
func twoNamespaces(t *testing.T, c client.Client, ns, ns2 string) {
	t.Helper()
	ctx := context.Background()
	owners := map[string]*unstructured.Unstructured{ns: widget(ns, "a", 2), ns2: widget(ns2, "a", 3)}
	for n := range owners {
		createObject(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "orphan", Labels: map[string]string{"app": "a"}}})
	}
	for _, w := range owners {
		createObject(t, c, w)
	}
	converge(t, c, owners[ns], 2)
	converge(t, c, owners[ns2], 3)
	for n, w := range owners {
		var cm corev1.ConfigMap
		if err := c.Get(ctx, client.ObjectKey{Namespace: n, Name: "orphan"}, &cm); err != nil {
			t.Fatal(err)
		}
		if ref := metav1.GetControllerOf(&cm); ref == nil || ref.UID != w.GetUID() {
			t.Errorf("the orphan in %s is controlled by %v, want its namespace's Widget %s", n, ref, w.GetUID())
		}
	}
}

// newNamespace creates a namespace named after the test's own.
func newNamespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	createObject(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// TestReconciler_ReadsTheInformersIndex: with the manager's own cache the
// reconciler reads children from the child informer's indexer, under keys
// that carry the namespace: Widgets of one name and selector in two
// namespaces each adopt the orphan of their own and count only their own
// children.
func TestReconciler_ReadsTheInformersIndex(t *testing.T) {
	var r *reconciler
	c, ns := startManagerWith(t, func(rr *reconciler, _ ctrl.Manager) { r = rr },
		func(o *ctrl.Options) { o.Cache.DefaultNamespaces = nil }) // the manager's own cache, of every namespace
	if !kube.ReadsInformerIndex(r) {
		t.Fatal("with the manager's own cache, the reconciler does not read the informer's indexer")
	}
	newNamespace(t, c, ns+"-b")
	twoNamespaces(t, c, ns, ns+"-b")
}

// TestReconciler_CacheOfSeveralNamespaces: a manager whose cache watches
// two namespaces has informers without one indexer; the reconciler reads
// through the cache's List and a field index instead, with the same
// results.
func TestReconciler_CacheOfSeveralNamespaces(t *testing.T) {
	base := fmt.Sprintf("t-%d", time.Now().UnixNano())
	ns, ns2 := base+"-a", base+"-b"
	var r *reconciler
	c, _ := startManagerWith(t, func(rr *reconciler, _ ctrl.Manager) { r = rr },
		func(o *ctrl.Options) { o.Cache.DefaultNamespaces = map[string]cache.Config{ns: {}, ns2: {}} })
	if kube.ReadsInformerIndex(r) {
		t.Fatal("with a cache of two namespaces, the reconciler claims to read one informer's indexer")
	}
	newNamespace(t, c, ns)
	newNamespace(t, c, ns2)
	twoNamespaces(t, c, ns, ns2)
}
