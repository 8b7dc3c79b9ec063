package faults_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/internal/faults"
)

// TestProxyForwards checks that clients speaking HTTP/2 or HTTP/1.1, and
// another process given the proxy's kubeconfig, reach the API server
// through a proxy injecting nothing, watches included.
func TestProxyForwards(t *testing.T) {
	e := env.Require(t)
	p := startProxy(t, e, faults.ProxyOptions{})
	ns := namespace(t, e)
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		nextProtos []string
		wantMajor  int
	}{{"HTTP2", nil, 2}, {"HTTP1", []string{"http/1.1"}, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := p.Config()
			cfg.NextProtos = tc.nextProtos
			hc, err := rest.HTTPClientFor(cfg)
			if err != nil {
				t.Fatal(err)
			}
			res, err := hc.Get(cfg.Host + "/version")
			if err != nil {
				t.Fatalf("get /version: %v", err)
			}
			_ = res.Body.Close()
			if res.StatusCode != http.StatusOK || res.ProtoMajor != tc.wantMajor {
				t.Errorf("get /version: %s over %s, want 200 over HTTP/%d", res.Status, res.Proto, tc.wantMajor)
			}
			cs := kubernetes.NewForConfigOrDie(cfg)
			cms := cs.CoreV1().ConfigMaps(ns)
			name := strings.ToLower(tc.name)
			if _, err := cms.Create(ctx, configMap(ns, name, "k", "v"), metav1.CreateOptions{}); err != nil {
				t.Fatalf("create: %v", err)
			}
			got, err := cms.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			if diff := cmp.Diff(map[string]string{"k": "v"}, got.Data); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
			list, err := cms.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
			if err != nil {
				t.Fatalf("watch: %v", err)
			}
			defer w.Stop()
			if _, err := cms.Create(ctx, configMap(ns, name+"-watched", "k", "v"), metav1.CreateOptions{}); err != nil {
				t.Fatalf("create: %v", err)
			}
			waitEvent(t, w, watch.Added, name+"-watched")
		})
	}

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := p.Kubeconfig(kubeconfig); err != nil {
		t.Fatalf("write kubeconfig: %v", err)
	}
	out, err := exec.CommandContext(ctx, filepath.Join(e.BinDir, "kubectl"), "--kubeconfig="+kubeconfig,
		"get", "configmaps", "-n", ns, "-o", "name").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl through the proxy: %v: %s", err, out)
	}
	for _, want := range []string{"configmap/http2-watched", "configmap/http1"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("kubectl through the proxy listed %q, want %s among them", out, want)
		}
	}
	if s := p.Stats(); s.Forwarded < 12 || len(s.Injected) > 0 {
		t.Errorf("stats: %v; want 12 forwarded or more and nothing injected", s)
	}
}

// waitEvent waits for an event of type typ about name on w.
func waitEvent(t *testing.T, w watch.Interface, typ watch.EventType, name string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch ended before %s %s", typ, name)
			}
			if obj, isObj := ev.Object.(metav1.Object); isObj && ev.Type == typ && obj.GetName() == name {
				return
			}
		case <-timeout:
			t.Fatalf("no %s %s through the proxy within 30s", typ, name)
		}
	}
}

// firstAttempts429 answers 429 with Retry-After: 1 to the first attempt of
// every write and forwards its retry.
var firstAttempts429 = faults.Rules{Rate: 1, Mix: map[faults.Fault]int{faults.TooManyRequests: 1}, RetryAfter: 1, PerRequest: 1}

// TestTooManyRequestsHonoured checks that client-go's clientset and
// controller-runtime's client both retry writes answered 429, no sooner
// than Retry-After says, and succeed.
func TestTooManyRequestsHonoured(t *testing.T) {
	e := env.Require(t)
	ctx := context.Background()
	want := []string{http.MethodPost, http.MethodPost, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
	t.Run("clientset", func(t *testing.T) {
		t.Parallel()
		p, ns := startProxy(t, e, faults.ProxyOptions{Rules: firstAttempts429}), namespace(t, e)
		cms := kubernetes.NewForConfigOrDie(p.Config()).CoreV1().ConfigMaps(ns)
		for _, name := range []string{"a", "b", "c"} {
			if _, err := cms.Create(ctx, configMap(ns, name, "k", name), metav1.CreateOptions{}); err != nil {
				t.Fatalf("create %s: %v", name, err)
			}
		}
		cm, err := cms.Get(ctx, "a", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get a: %v", err)
		}
		cm.Data["k"] = "updated"
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update a: %v", err)
		}
		if _, err := cms.Patch(ctx, "b", types.MergePatchType, []byte(`{"data":{"k":"patched"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatalf("patch b: %v", err)
		}
		if err := cms.Delete(ctx, "c", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete c: %v", err)
		}
		checkData(t, e.Client, ns, map[string]string{"a": "updated", "b": "patched"})
		checkHonoured(t, p, faults.TooManyRequests, time.Second, want)
	})
	t.Run("controller-runtime", func(t *testing.T) {
		t.Parallel()
		p, ns := startProxy(t, e, faults.ProxyOptions{Rules: firstAttempts429}), namespace(t, e)
		c, err := client.New(p.Config(), client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		a, b, cc := configMap(ns, "a", "k", "a"), configMap(ns, "b", "k", "b"), configMap(ns, "c", "k", "c")
		for _, cm := range []client.Object{a, b, cc} {
			if err := c.Create(ctx, cm); err != nil {
				t.Fatalf("create %s: %v", cm.GetName(), err)
			}
		}
		a.Data["k"] = "updated"
		if err := c.Update(ctx, a); err != nil {
			t.Fatalf("update a: %v", err)
		}
		base := b.DeepCopy()
		b.Data["k"] = "patched"
		if err := c.Patch(ctx, b, client.MergeFrom(base)); err != nil {
			t.Fatalf("patch b: %v", err)
		}
		if err := c.Delete(ctx, cc); err != nil {
			t.Fatalf("delete c: %v", err)
		}
		checkData(t, e.Client, ns, map[string]string{"a": "updated", "b": "patched"})
		checkHonoured(t, p, faults.TooManyRequests, time.Second, want)
	})
}

// TestTooManyRequestsAnswer checks the 429 itself, in both forms: the
// Retry-After header, the body, and the error client-go makes of it.
func TestTooManyRequestsAnswer(t *testing.T) {
	e := env.Require(t)
	ns := namespace(t, e)
	for _, plain := range []bool{false, true} {
		t.Run(map[bool]string{false: "Status", true: "PlainText"}[plain], func(t *testing.T) {
			rules := faults.Rules{Rate: 1, Mix: map[faults.Fault]int{faults.TooManyRequests: 1}, RetryAfter: 2, PlainText: plain}
			p := startProxy(t, e, faults.ProxyOptions{Rules: rules})
			hc, err := rest.HTTPClientFor(p.Config())
			if err != nil {
				t.Fatal(err)
			}
			body, _ := json.Marshal(configMap(ns, "raw", "k", "v"))
			res, err := hc.Post(p.Config().Host+"/api/v1/namespaces/"+ns+"/configmaps", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatalf("post: %v", err)
			}
			got, err := io.ReadAll(res.Body)
			_ = res.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "2" {
				t.Errorf("got %s with Retry-After %q, want 429 with 2", res.Status, res.Header.Get("Retry-After"))
			}
			if plain {
				if string(got) != "Too many requests, please try again later.\n" {
					t.Errorf("body %q, want the priority-and-fairness filter's", got)
				}
			} else {
				var st metav1.Status
				if err := json.Unmarshal(got, &st); err != nil {
					t.Fatalf("body %q: %v", got, err)
				}
				want := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
					Code: 429, Reason: metav1.StatusReasonTooManyRequests, Details: &metav1.StatusDetails{RetryAfterSeconds: 2}}
				if diff := cmp.Diff(want, st, cmpopts.IgnoreFields(metav1.Status{}, "Message")); diff != "" {
					t.Errorf("status (-want +got):\n%s", diff)
				}
			}

			// What a client sees when it does not retry.
			err = kubernetes.NewForConfigOrDie(p.Config()).CoreV1().RESTClient().Post().
				Namespace(ns).Resource("configmaps").Body(body).MaxRetries(0).Do(context.Background()).Error()
			if !apierrors.IsTooManyRequests(err) {
				t.Errorf("got %v, want TooManyRequests", err)
			}
			if s, ok := apierrors.SuggestsClientDelay(err); s != 2 || !ok {
				t.Errorf("SuggestsClientDelay: %d, %t; want 2, true", s, ok)
			}
			if diff := cmp.Diff(map[faults.Fault]int64{faults.TooManyRequests: 2}, p.Stats().Injected); diff != "" {
				t.Errorf("injected (-want +got):\n%s", diff)
			}
		})
	}
	checkData(t, e.Client, ns, map[string]string{})
}

// TestFaultsReachClients checks what client-go does with the other faults:
// a 500 without Retry-After and a 409 reach the caller unretried, a 500
// with Retry-After (ServerTimeout) is retried as a 429 is.
func TestFaultsReachClients(t *testing.T) {
	e := env.Require(t)
	ctx := context.Background()
	ns := namespace(t, e)
	only := func(f faults.Fault) faults.Rules {
		return faults.Rules{Rate: 1, Mix: map[faults.Fault]int{f: 1}, RetryAfter: 1, PerRequest: 1}
	}

	p := startProxy(t, e, faults.ProxyOptions{Rules: only(faults.InternalError)})
	cms := kubernetes.NewForConfigOrDie(p.Config()).CoreV1().ConfigMaps(ns)
	_, err := cms.Create(ctx, configMap(ns, "internal", "k", "v"), metav1.CreateOptions{})
	if _, delay := apierrors.SuggestsClientDelay(err); !apierrors.IsInternalError(err) || delay {
		t.Errorf("create: got %v, want an internal error suggesting no delay", err)
	}
	if diff := cmp.Diff(faults.ProxyStats{Injected: map[faults.Fault]int64{faults.InternalError: 1}}, p.Stats()); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}

	// Conflicts go to PUT and PATCH only: the create goes through.
	p = startProxy(t, e, faults.ProxyOptions{Rules: only(faults.Conflict)})
	cms = kubernetes.NewForConfigOrDie(p.Config()).CoreV1().ConfigMaps(ns)
	cm, err := cms.Create(ctx, configMap(ns, "conflict", "k", "v"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	cm.Data["k"] = "updated"
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("update: got %v, want a conflict", err)
	}
	if diff := cmp.Diff(faults.ProxyStats{Forwarded: 1, Injected: map[faults.Fault]int64{faults.Conflict: 1}}, p.Stats()); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}

	p = startProxy(t, e, faults.ProxyOptions{Rules: only(faults.ServerTimeout)})
	cms = kubernetes.NewForConfigOrDie(p.Config()).CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, configMap(ns, "timeout", "k", "v"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	checkHonoured(t, p, faults.ServerTimeout, time.Second, []string{http.MethodPost})
	// The internal error was not retried: PerRequest 1 would have let a
	// retry through.
	checkData(t, e.Client, ns, map[string]string{"conflict": "v", "timeout": "v"})
}

// TestRulesChooseRequests checks which requests the rules choose: writes
// but leases when they are excluded, reads when asked, never watches,
// and a rate changed at run time.
func TestRulesChooseRequests(t *testing.T) {
	e := env.Require(t)
	ctx := context.Background()
	ns := namespace(t, e)
	if err := e.Client.Create(ctx, configMap(ns, "existing", "k", "v")); err != nil {
		t.Fatal(err)
	}
	rules := faults.Rules{Rate: 1, Mix: map[faults.Fault]int{faults.InternalError: 1}, ExcludeLeases: true}
	p := startProxy(t, e, faults.ProxyOptions{Rules: rules})
	cs := kubernetes.NewForConfigOrDie(p.Config())
	cms, leases := cs.CoreV1().ConfigMaps(ns), cs.CoordinationV1().Leases(ns)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "leader"}}
	lease, err := leases.Create(ctx, lease, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create lease, excluded: %v", err)
	}
	if _, err := cms.Create(ctx, configMap(ns, "new", "k", "v"), metav1.CreateOptions{}); !apierrors.IsInternalError(err) {
		t.Errorf("create: got %v, want an internal error", err)
	}
	if _, err := cms.Get(ctx, "existing", metav1.GetOptions{}); err != nil {
		t.Errorf("get without Reads: %v", err)
	}

	rules.Reads, rules.ExcludeLeases = true, false
	p.SetRules(rules)
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); !apierrors.IsInternalError(err) {
		t.Errorf("update lease, not excluded: got %v, want an internal error", err)
	}
	if _, err := cms.Get(ctx, "existing", metav1.GetOptions{}); !apierrors.IsInternalError(err) {
		t.Errorf("get with Reads: got %v, want an internal error", err)
	}
	if _, err := cms.List(ctx, metav1.ListOptions{}); !apierrors.IsInternalError(err) {
		t.Errorf("list with Reads: got %v, want an internal error", err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch with Reads: %v", err)
	}
	defer w.Stop()
	if err := e.Client.Create(ctx, configMap(ns, "watched", "k", "v")); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, w, watch.Added, "watched")

	p.SetRate(0)
	if _, err := cms.Create(ctx, configMap(ns, "new", "k", "v"), metav1.CreateOptions{}); err != nil {
		t.Errorf("create at rate 0: %v", err)
	}
	if got := p.Stats().Injected; got[faults.InternalError] != 4 || len(got) != 1 {
		t.Errorf("injected %v, want 4 internal errors", got)
	}
}

// TestProxySeedRepeats checks that two proxies seeded alike answer the same
// requests alike.
func TestProxySeedRepeats(t *testing.T) {
	e := env.Require(t)
	ns := namespace(t, e)
	if err := e.Client.Create(context.Background(), configMap(ns, "existing", "k", "v")); err != nil {
		t.Fatal(err)
	}
	rules := faults.Rules{Rate: 0.5, Mix: map[faults.Fault]int{faults.InternalError: 1}, Reads: true}
	var runs [2][]bool
	for i := range runs {
		p := startProxy(t, e, faults.ProxyOptions{Rules: rules, Seed: 42})
		cms := kubernetes.NewForConfigOrDie(p.Config()).CoreV1().ConfigMaps(ns)
		for range 20 {
			_, err := cms.Get(context.Background(), "existing", metav1.GetOptions{})
			if err != nil && !apierrors.IsInternalError(err) {
				t.Fatalf("get: %v", err)
			}
			runs[i] = append(runs[i], err != nil)
		}
	}
	if diff := cmp.Diff(runs[0], runs[1]); diff != "" {
		t.Errorf("faults of two runs seeded alike (-first +second):\n%s", diff)
	}
	n := 0
	for _, faulted := range runs[0] {
		if faulted {
			n++
		}
	}
	if n == 0 || n == len(runs[0]) {
		t.Errorf("faults %v at rate 0.5: want some, not all", runs[0])
	}
}
