package kube

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestOwnersOf pins how a child's event finds its owner: by its controller
// reference, only for the owner's group and kind, in the child's namespace.
// An orphan's owners come from the owners' selector index
// (TestOwnersOfOrphan).
func TestOwnersOf(t *testing.T) {
	noOwners := kind[*corev1.ConfigMap]{newList: func() client.ObjectList { return &corev1.ConfigMapList{} }}
	empty := fake.NewClientBuilder().Build()
	r := &Reconciler[*corev1.ConfigMap, *corev1.Pod]{ownerGVK: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "WorkerPool"},
		owner: noOwners, Cache: empty}
	ref := func(apiVersion, kind string, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: "pool", UID: "u1", Controller: ptr.To(controller)}
	}
	pool := []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "pool"}}}
	tests := []struct {
		desc string
		refs []metav1.OwnerReference
		want []reconcile.Request
	}{
		{"controlled by the owner kind", []metav1.OwnerReference{ref("example.com/v1", "WorkerPool", true)}, pool},
		{"another version of the group", []metav1.OwnerReference{ref("example.com/v2beta1", "WorkerPool", true)}, pool},
		{"same kind, another group", []metav1.OwnerReference{ref("other.io/v1", "WorkerPool", true)}, nil},
		{"same kind, the core group", []metav1.OwnerReference{ref("v1", "WorkerPool", true)}, nil},
		{"another kind of the group", []metav1.OwnerReference{ref("example.com/v1", "Job", true)}, nil},
		{"an owner that is not the controller", []metav1.OwnerReference{ref("example.com/v1", "WorkerPool", false)}, nil},
	}
	for _, tt := range tests {
		child := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", OwnerReferences: tt.refs}}
		var got []reconcile.Request
		r.ownersOf(context.Background(), child, func(req reconcile.Request) { got = append(got, req) })
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: requests (-want +got):\n%s", tt.desc, diff)
		}
	}
	coreOwner := &Reconciler[*corev1.ConfigMap, *corev1.Pod]{ownerGVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}}
	child := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", OwnerReferences: []metav1.OwnerReference{ref("v1", "ConfigMap", true)}}}
	var got []reconcile.Request
	coreOwner.ownersOf(context.Background(), child, func(req reconcile.Request) { got = append(got, req) })
	if diff := cmp.Diff(pool, got); diff != "" {
		t.Errorf("core-group owner: requests (-want +got):\n%s", diff)
	}
}

// selectorAdapter reads an owner ConfigMap's selector from its data:
// app=<data["app"]>.
type selectorAdapter struct{ plain }

func (selectorAdapter) Spec(o *corev1.ConfigMap) (Spec, error) {
	return Spec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": o.Data["app"]}}}, nil
}

// TestOwnersOfOrphan: an orphan's event maps to the owners in its
// namespace whose selector matches it, found through the owners' selector
// index; an owner selecting other children, or in another namespace, is
// not asked for.
func TestOwnersOfOrphan(t *testing.T) {
	r := &Reconciler[*corev1.ConfigMap, *corev1.Pod]{index: "pools", Adapter: selectorAdapter{},
		ownerGVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
		owner:    kind[*corev1.ConfigMap]{newList: func() client.ObjectList { return &corev1.ConfigMapList{} }}}
	owner := func(ns, name, app string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"app": app}}
	}
	r.Cache = fake.NewClientBuilder().
		WithObjects(owner("ns", "web", "web"), owner("ns", "db", "db"), owner("other", "web", "web")).
		WithIndex(&corev1.ConfigMap{}, ownerIndexName("pools"), r.selectorKey).
		Build()
	var got []reconcile.Request
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Labels: map[string]string{"app": "web"}}}
	r.ownersOf(context.Background(), orphan, func(req reconcile.Request) { got = append(got, req) })
	want := []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "web"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("orphan app=web: requests (-want +got):\n%s", diff)
	}
	got = nil
	stray := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", Labels: map[string]string{"app": "cache"}}}
	r.ownersOf(context.Background(), stray, func(req reconcile.Request) { got = append(got, req) })
	if len(got) != 0 {
		t.Errorf("orphan app=cache, which no owner selects: requests %v, want none", got)
	}
}
