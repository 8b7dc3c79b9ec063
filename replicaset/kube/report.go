package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// report settles the pass and writes what it says: expectations dropped,
// names remembered as taken, the owner's status (patched only when it
// changed), events and metrics; and it tells controller-runtime when to
// come back.
func (r *Reconciler[O, C]) report(ctx context.Context, o *observation, d decision, out outcome, took time.Duration) (reconcile.Result, error) {
	v := settle(o, d, out)
	r.expectations.forgive(o.key, v.forgive...)
	r.expectations.forgiveDeletes(o.key, v.forgiveUIDs...)
	r.expectations.noteTaken(o.key, v.taken, o.now)
	r.backoff.record(o.key, v.zones)
	r.restarts.record(o.key, out.restarted, o.now)
	r.recordPreparations(o.key, d, out, o.now)
	if o.spec.Rollout != nil && d.hold != holdFailure {
		r.rollouts.record(o.key, v.status, meta.IsStatusConditionTrue(v.status.Conditions, ConditionRolledOut), o.now)
	}
	if d.hold == holdNone {
		r.backoff.setFailing(o.key, d.failedNow)
	}
	if r.Events != nil {
		for _, e := range v.events {
			var related runtime.Object
			if e.related != nil {
				related = e.related
			}
			r.Events.Eventf(o.owner, related, e.kind, e.reason, e.action, "%s", e.text)
		}
	}
	r.Metrics.record(r.ownerGVK.Kind, d, out, took)

	if v.publish {
		err := r.patchStatus(ctx, o.key, o.owner, v.status)
		if apierrors.IsNotFound(err) {
			r.forget(o.key) // deleted since the read: nothing left to report
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
// and, when that changed the owner's status, sends the difference as a
// merge patch of the status alone. The API server's answer is read as metadata only: the pass
// has no use for the owner it returns.
//
// The difference is taken from the status this reconciler last wrote for
// the owner, when it wrote one: the cache may not show that write yet, and
// a status equal to the stale one would otherwise never be sent (status
// updates start no pass). Status is the reconciler's own to write.
func (r *Reconciler[O, C]) patchStatus(ctx context.Context, key string, cached client.Object, st Status) error {
	before, ok := r.written.get(key, cached.GetUID())
	if !ok {
		var err error
		if before, err = statusJSON(cached); err != nil {
			return err
		}
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
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: owner.GetNamespace(), Name: owner.GetName()}}
	m.SetGroupVersionKind(r.ownerGVK)
	patch := fmt.Appendf(nil, `{"status":%s}`, diff)
	if err := r.Client.Status().Patch(ctx, m, client.RawPatch(types.MergePatchType, patch)); err != nil {
		r.written.forget(key) // what the server holds is unknown now
		return err
	}
	r.written.set(key, owner.GetUID(), after)
	return nil
}

// writtenStatus remembers, per owner, the status a reconciler last wrote.
type writtenStatus struct {
	mu sync.Mutex
	m  map[string]written
}

type written struct {
	uid    types.UID
	status []byte
}

func (w *writtenStatus) get(key string, uid types.UID) ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.m[key]
	return s.status, ok && s.uid == uid
}

func (w *writtenStatus) set(key string, uid types.UID, status []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]written{}
	}
	w.m[key] = written{uid, status}
}

func (w *writtenStatus) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, key)
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

// forget drops what the reconciler remembers of an owner that is gone.
func (r *Reconciler[O, C]) forget(key string) {
	r.expectations.forget(key)
	r.written.forget(key)
	r.backoff.forget(key)
	r.unwritten.record(key, "", nil)
	r.rollouts.forget(key)
	r.restarts.forget(key)
}
