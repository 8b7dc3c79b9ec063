package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// report settles the pass and writes what it says: expectations dropped,
// names remembered as taken, the owner's status (patched only when it
// changed), events and metrics; and it tells controller-runtime when to
// come back.
func (r *Reconciler[O, C]) report(ctx context.Context, o *observation, d decision, out outcome, took time.Duration) (reconcile.Result, error) {
	v := settle(o, d, out)
	r.Expectations.Forgive(o.key, v.forgive...)
	r.Expectations.ForgiveDeletes(o.key, v.forgiveUIDs...)
	r.Expectations.noteTaken(o.key, v.taken, o.now)
	if r.Events != nil {
		for _, e := range v.events {
			r.Events.Eventf(o.owner, nil, e.kind, e.reason, e.action, "%s", e.text)
		}
	}
	r.Metrics.record(r.kind(o.owner), d, out, took)

	if v.publish {
		err := r.patchStatus(ctx, o.owner, v.status)
		if apierrors.IsNotFound(err) {
			r.Expectations.Forget(o.key) // deleted since the read: nothing left to report
			return reconcile.Result{}, nil
		}
		if err != nil {
			return reconcile.Result{}, errors.Join(v.retry, fmt.Errorf("patch status of %s: %w", o.key, err))
		}
	}
	switch {
	case v.retry != nil:
		return reconcile.Result{}, v.retry
	case v.terminal != nil:
		return reconcile.Result{}, reconcile.TerminalError(v.terminal)
	}
	return reconcile.Result{RequeueAfter: v.requeue}, nil
}

// patchStatus has the Adapter write st into a copy of the cached owner
// and, when that changed the owner's status, sends the difference as a merge patch of the
// status alone. The API server's answer is read as metadata only: the pass
// has no use for the owner it returns.
func (r *Reconciler[O, C]) patchStatus(ctx context.Context, cached client.Object, st Status) error {
	before, err := statusJSON(cached)
	if err != nil {
		return err
	}
	owner := cached.DeepCopyObject().(client.Object)
	r.Adapter.SetStatus(owner.(O), st)
	after, err := statusJSON(owner)
	if err != nil || bytes.Equal(before, after) {
		return err
	}
	diff, err := jsonpatch.CreateMergePatch(before, after)
	if err != nil {
		return err
	}
	gvk, err := apiutil.GVKForObject(owner, r.Scheme)
	if err != nil {
		return err
	}
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: owner.GetNamespace(), Name: owner.GetName()}}
	m.SetGroupVersionKind(gvk)
	patch := append(append([]byte(`{"status":`), diff...), '}')
	return r.Client.Status().Patch(ctx, m, client.RawPatch(types.MergePatchType, patch))
}

// statusJSON is the JSON of obj's status field ("{}" when it has none). It
// marshals only the status when it can find it (an unstructured object's
// "status", a typed object's Status field): the rest of an owner, its
// managed fields above all, can be many times larger.
func statusJSON(obj client.Object) ([]byte, error) {
	var status any
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		status = o.Object["status"]
	default:
		if v := reflect.ValueOf(obj); v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
			if f := v.Elem().FieldByName("Status"); f.IsValid() && f.CanInterface() {
				status = f.Interface()
			}
		}
	}
	if status != nil {
		raw, err := json.Marshal(status)
		if err != nil || string(raw) == "null" {
			return []byte("{}"), err
		}
		return raw, nil
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var s struct {
		Status json.RawMessage `json:"status"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	if len(s.Status) == 0 || string(s.Status) == "null" {
		return []byte("{}"), nil
	}
	return s.Status, nil
}

// kind names the owner's kind for metrics; typed objects from the cache
// carry no TypeMeta, so it comes from the scheme.
func (r *Reconciler[O, C]) kind(obj client.Object) string {
	gvk, err := apiutil.GVKForObject(obj, r.Scheme)
	if err != nil {
		return "unknown"
	}
	return gvk.Kind
}
