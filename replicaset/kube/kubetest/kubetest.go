package kubetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/replicakit/replicakit/replicaset/kube"
)

// NewFakeClient readies r to run passes on a new fake client holding objs,
// and returns that client: r.Client, r.Cache and r.APIReader are all set
// to it, after SetupWithIndexer has registered r's indexes with it under
// the controller name name. r.Scheme must know the owner's and the child's
// kinds; the owner kind gets a status subresource, as a CRD with
// `+kubebuilder:subresource:status` has. Called again, it gives r another
// new client.
//
// As the API server does, the client gives every object it creates a UID,
// a creation timestamp (whole seconds) and generation 1, and so it does to
// each of objs that lacks them (on the caller's object, so the test's copy
// agrees): the Reconciler tracks its deletes and its owner by UID, and the
// Oldest, Newest and UnhealthyFirst policies read the timestamps. Events
// and Metrics stay as they are (nil records none).
//
// A test then runs a pass with r.Reconcile and reads what it did through
// the returned client.
func NewFakeClient[O, C client.Object](r *kube.Reconciler[O, C], name string, objs ...client.Object) (client.WithWatch, error) {
	if r.Scheme == nil {
		return nil, errors.New("kubetest: Reconciler.Scheme is nil; it must know the owner's and the child's kinds")
	}
	var uids atomic.Int64
	created := func(obj client.Object) {
		if obj.GetUID() == "" {
			obj.SetUID(types.UID(fmt.Sprintf("kubetest-%d", uids.Add(1))))
		}
		if ts := obj.GetCreationTimestamp(); ts.IsZero() {
			obj.SetCreationTimestamp(metav1.NewTime(time.Now().Truncate(time.Second)))
		}
		if obj.GetGeneration() == 0 {
			obj.SetGeneration(1)
		}
	}
	for _, obj := range objs {
		created(obj)
	}
	b := fake.NewClientBuilder().WithScheme(r.Scheme).WithObjects(objs...).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				created(obj)
				return c.Create(ctx, obj, opts...)
			},
		})
	ix := &indexes{scheme: r.Scheme}
	if err := r.SetupWithIndexer(ix, name); err != nil {
		return nil, err
	}
	for _, f := range ix.fields {
		b = b.WithIndex(f.obj, f.field, f.extract)
	}
	if t := reflect.TypeFor[O](); t.Kind() == reflect.Pointer { // SetupWithIndexer checked it
		owner := reflect.New(t.Elem()).Interface().(O)
		if !r.OwnerKind.Empty() {
			owner.GetObjectKind().SetGroupVersionKind(r.OwnerKind)
		}
		b = b.WithStatusSubresource(owner)
	}
	c := b.Build()
	r.Client, r.Cache, r.APIReader = c, c, c
	return c, nil
}

// indexes is a client.FieldIndexer that keeps what it is given, for the
// fake client's builder, which takes indexes only before it builds.
type indexes struct {
	scheme *runtime.Scheme
	fields []field
}

type field struct {
	obj     client.Object
	field   string
	extract client.IndexerFunc
}

var _ client.FieldIndexer = (*indexes)(nil)

// IndexField records the index; it fails, as the builder would panic, when
// the scheme does not know obj's kind.
func (ix *indexes) IndexField(_ context.Context, obj client.Object, name string, extract client.IndexerFunc) error {
	if _, _, err := ix.scheme.ObjectKinds(obj); err != nil {
		return fmt.Errorf("kubetest: index %s: %w", name, err)
	}
	ix.fields = append(ix.fields, field{obj: obj, field: name, extract: extract})
	return nil
}
