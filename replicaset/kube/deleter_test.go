package kube_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/replicakit/replicakit/internal/faults"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// deleteLog records the DELETEs of ConfigMaps that pass through its
// transports: their path, Accept header and body.
type deleteLog struct {
	mu   sync.Mutex
	reqs []deleteRequest
}

type deleteRequest struct {
	path, accept string
	body         []byte
}

// wrap is a rest.Config's WrapTransport: every transport made from the
// config records into l.
func (l *deleteLog) wrap(rt http.RoundTripper) http.RoundTripper { return &recording{l, rt} }

// recording passes every request on to base, recording the DELETEs of
// ConfigMaps into log.
type recording struct {
	log  *deleteLog
	base http.RoundTripper
}

func (rt *recording) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodDelete || !strings.Contains(req.URL.Path, "/configmaps/") {
		return rt.base.RoundTrip(req)
	}
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		_ = req.Body.Close() // read whole: nothing left to lose
	}
	rt.log.mu.Lock()
	rt.log.reqs = append(rt.log.reqs, deleteRequest{path: req.URL.Path, accept: req.Header.Get("Accept"), body: body})
	rt.log.mu.Unlock()
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return rt.base.RoundTrip(out)
}

// in returns the recorded DELETEs in namespace ns.
func (l *deleteLog) in(ns string) []deleteRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []deleteRequest
	for _, r := range l.reqs {
		if strings.Contains(r.path, "/namespaces/"+ns+"/") {
			out = append(out, r)
		}
	}
	return out
}

// startManagerOnWire is startManagerWith for a manager whose every
// connection records its DELETEs of ConfigMaps into wire.
func startManagerOnWire(t *testing.T, wire *deleteLog, configure func(*reconciler, ctrl.Manager)) (client.Client, string) {
	t.Helper()
	return startManagerWrapped(t, wire.wrap, configure)
}

// startManagerWrapped is startManagerWith for a manager whose every
// connection goes through the transport wrap returns.
func startManagerWrapped(t *testing.T, wrap func(http.RoundTripper) http.RoundTripper, configure func(*reconciler, ctrl.Manager)) (client.Client, string) {
	t.Helper()
	e := env.Require(t)
	cfg := rest.CopyConfig(e.Config)
	cfg.Wrap(wrap)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	r := newWidgetReconciler()
	configure(r, mgr)
	if err := r.SetupWithManager(mgr, "widget"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	ns := fmt.Sprintf("t-%d", time.Now().UnixNano())
	createObject(t, e.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	return e.Client, ns
}

// TestReconciler_DeletesReadNoChild scales a Widget 3→0 with the
// manager's own client and reads the DELETE requests off the wire: each
// names one of the children it planned, with its UID and resourceVersion
// as preconditions and background propagation, and asks for the answer as
// metadata, which the binding does not decode (controller-runtime's
// client.Delete asked for the whole child, decoded it and round-tripped
// it through JSON, a seventh of the binding's CPU when scaling many owners
// to 0).
func TestReconciler_DeletesReadNoChild(t *testing.T) {
	wire := &deleteLog{}
	var r *reconciler
	c, ns := startManagerOnWire(t, wire, func(rr *reconciler, _ ctrl.Manager) { r = rr })
	if !kube.DeletesUnread(r) {
		t.Fatal("with the manager's own client, the reconciler does not delete through its childDeleter")
	}
	w := widget(ns, "unread", 3)
	createObject(t, c, w)
	uids := map[string]bool{}
	for _, name := range converge(t, c, w, 3) {
		var cm corev1.ConfigMap
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
			t.Fatal(err)
		}
		uids[string(cm.UID)] = true
	}
	scale(t, c, w, 0)
	converge(t, c, w, 0)

	reqs := wire.in(ns)
	if len(reqs) != 3 {
		t.Fatalf("%d DELETE requests for the 3 children, want 3", len(reqs))
	}
	for _, req := range reqs {
		if !strings.Contains(req.accept, "as=PartialObjectMetadata") {
			t.Errorf("DELETE %s asks for %q, want the answer as PartialObjectMetadata", req.path, req.accept)
		}
		var opts metav1.DeleteOptions
		if err := json.Unmarshal(req.body, &opts); err != nil {
			t.Errorf("DELETE %s: body %q is not JSON DeleteOptions: %v", req.path, req.body, err)
			continue
		}
		if opts.Preconditions == nil || opts.Preconditions.UID == nil || !uids[string(*opts.Preconditions.UID)] {
			t.Errorf("DELETE %s: preconditions %+v, want the UID of a planned child", req.path, opts.Preconditions)
		} else {
			delete(uids, string(*opts.Preconditions.UID)) // each child once
		}
		if opts.Preconditions == nil || opts.Preconditions.ResourceVersion == nil || *opts.Preconditions.ResourceVersion == "" {
			t.Errorf("DELETE %s: preconditions %+v, want the resourceVersion the pass read", req.path, opts.Preconditions)
		}
		if opts.PropagationPolicy == nil || *opts.PropagationPolicy != metav1.DeletePropagationBackground {
			t.Errorf("DELETE %s: propagation %v, want Background", req.path, opts.PropagationPolicy)
		}
	}
}

// TestReconciler_WrappedClientSeesEveryDelete: a manager whose NewClient
// wraps its client (here to count deletes) has every delete go through
// that client, as the Reconciler's Client documents.
func TestReconciler_WrappedClientSeesEveryDelete(t *testing.T) {
	var deletes atomic.Int64
	count := interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		if _, ok := obj.(*metav1.PartialObjectMetadata); ok {
			deletes.Add(1)
		}
		return c.Delete(ctx, obj, opts...)
	}}
	var r *reconciler
	c, ns := startManagerWith(t, func(rr *reconciler, _ ctrl.Manager) { r = rr },
		func(o *ctrl.Options) { o.NewClient = faults.NewClient(count) })
	if kube.DeletesUnread(r) {
		t.Fatal("with a wrapped client, the reconciler deletes around it")
	}
	w := widget(ns, "wrapped", 3)
	createObject(t, c, w)
	converge(t, c, w, 3)
	scale(t, c, w, 0)
	converge(t, c, w, 0)
	if n := deletes.Load(); n != 3 {
		t.Errorf("the wrapped client saw %d deletes of children, want 3", n)
	}
}

// TestReconciler_UnreadDeleteKeepsItsPrecondition deletes through the
// childDeleter directly: a child whose UID is not the one planned (a
// namesake made since the pass read it) is left alone with a conflict,
// the planned one goes, and one already gone is success.
func TestReconciler_UnreadDeleteKeepsItsPrecondition(t *testing.T) {
	var r *reconciler
	c, ns := startManagerWith(t, func(rr *reconciler, _ ctrl.Manager) { r = rr })
	if !kube.DeletesUnread(r) {
		t.Fatal("with the manager's own client, the reconciler does not delete through its childDeleter")
	}
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "namesake"}}
	createObject(t, c, cm)
	owner := widget(ns, "owner", 0) // only its namespace is read

	err := kube.DeleteChild(ctx, r, owner, cm.Name, "not-"+string(cm.UID))
	if !apierrors.IsConflict(err) {
		t.Fatalf("delete with another UID: %v, want a conflict", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err != nil {
		t.Fatalf("the namesake is gone after a delete planned for another UID: %v", err)
	}
	if err := kube.DeleteChild(ctx, r, owner, cm.Name, string(cm.UID)); err != nil {
		t.Fatalf("delete with its UID: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after its delete, reading it: %v, want not found", err)
	}
	if err := kube.DeleteChild(ctx, r, owner, cm.Name, string(cm.UID)); err != nil {
		t.Fatalf("delete of a child already gone: %v, want success", err)
	}
}
