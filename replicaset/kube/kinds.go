package kube

import (
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// kind is what the Reconciler knows of one of its two kinds, O or C: its
// GroupVersionKind, and how to make an empty object of it and an empty
// list of such objects, as controller-runtime's builder does from the
// object given to For: a typed kind from its Go type and the scheme, an
// unstructured one (or metadata only) from the GroupVersionKind it was
// given (Reconciler.OwnerKind, ChildKind).
type kind[T client.Object] struct {
	gvk     schema.GroupVersionKind
	newObj  func() T
	newList func() client.ObjectList
}

// kindOf resolves the kind of T through scheme; gvk, when not zero, is
// the kind (which an object of T, unstructured, cannot say); field names
// the Reconciler's field that gives it, what names the kind, for errors.
func kindOf[T client.Object](scheme *runtime.Scheme, gvk schema.GroupVersionKind, field, what string) (kind[T], error) {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return kind[T]{}, fmt.Errorf("kube: the %s's type %v is no pointer to a struct: the Reconciler cannot make objects of it", what, t)
	}
	empty := func() T {
		obj := reflect.New(t.Elem()).Interface().(T)
		if !gvk.Empty() {
			obj.GetObjectKind().SetGroupVersionKind(gvk)
		}
		return obj
	}
	var list func() client.ObjectList
	switch any(empty()).(type) {
	case *unstructured.Unstructured, *metav1.PartialObjectMetadata:
		if gvk.Version == "" || gvk.Kind == "" {
			return kind[T]{}, fmt.Errorf("kube: Reconciler.%s must be set, with its Version and Kind (%v): the %s's Go type, %v, names no kind", field, gvk, what, t)
		}
		listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
		if _, ok := any(empty()).(*unstructured.Unstructured); ok {
			list = func() client.ObjectList {
				l := &unstructured.UnstructuredList{}
				l.SetGroupVersionKind(listGVK)
				return l
			}
		} else {
			list = func() client.ObjectList {
				l := &metav1.PartialObjectMetadataList{}
				l.SetGroupVersionKind(listGVK)
				return l
			}
		}
		return kind[T]{gvk: gvk, newObj: empty, newList: list}, nil
	}
	found, err := apiutil.GVKForObject(empty(), scheme)
	if err != nil {
		return kind[T]{}, fmt.Errorf("kube: Reconciler.Scheme does not know the %s's kind, %v (add it to the scheme, as its package's AddToScheme does): %w", what, t, err)
	}
	if !gvk.Empty() && gvk != found {
		return kind[T]{}, fmt.Errorf("kube: Reconciler.%s is %v, but the scheme says %v is %v", field, gvk, t, found)
	}
	listGVK := found.GroupVersion().WithKind(found.Kind + "List")
	if _, err := scheme.New(listGVK); err != nil {
		return kind[T]{}, fmt.Errorf("kube: Reconciler.Scheme does not know the list of the %s's kind, %v (add it to the scheme, as its package's AddToScheme does): %w", what, listGVK, err)
	}
	list = func() client.ObjectList {
		l, _ := scheme.New(listGVK) // known: checked above
		return l.(client.ObjectList)
	}
	return kind[T]{gvk: found, newObj: empty, newList: list}, nil
}
