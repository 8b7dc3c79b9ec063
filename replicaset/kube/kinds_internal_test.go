package kube

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// TestKindOf: a typed kind comes from the scheme by its Go type, with its
// list; an unstructured one needs its GroupVersionKind, and its objects
// and lists carry it.
func TestKindOf(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cm, err := kindOf[*corev1.ConfigMap](scheme, schema.GroupVersionKind{}, "ChildKind", "child")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cm.newList().(*corev1.ConfigMapList); !ok || cm.gvk.Kind != "ConfigMap" || cm.newObj() == nil {
		t.Fatalf("ConfigMap: kind %v, list %T", cm.gvk, cm.newList())
	}

	if _, err := kindOf[*unstructured.Unstructured](scheme, schema.GroupVersionKind{}, "OwnerKind", "owner"); err == nil ||
		!strings.Contains(err.Error(), "Reconciler.OwnerKind must be set") {
		t.Fatalf("an unstructured owner without OwnerKind: %v", err)
	}
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	w, err := kindOf[*unstructured.Unstructured](scheme, widget, "OwnerKind", "owner")
	if err != nil {
		t.Fatal(err)
	}
	l, ok := w.newList().(*unstructured.UnstructuredList)
	if !ok || l.GroupVersionKind().Kind != "WidgetList" || w.newObj().GroupVersionKind() != widget {
		t.Fatalf("Widget: object %v, list %T %v", w.newObj().GroupVersionKind(), w.newList(), l.GroupVersionKind())
	}

	if _, err := kindOf[*corev1.ConfigMap](scheme, widget, "ChildKind", "child"); err == nil {
		t.Fatal("a ChildKind that is not the scheme's for the type is taken")
	}
}
