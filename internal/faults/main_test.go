package faults_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/internal/faults"
	"github.com/replicakit/replicakit/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }

// slack is how much earlier than its Retry-After a retry may arrive and
// still count as honouring it: timers and clocks may differ by a little.
const slack = 50 * time.Millisecond

// startProxy starts a proxy in front of the environment's API server,
// closed when the test ends.
func startProxy(t *testing.T, e *testenv.Env, opts faults.ProxyOptions) *faults.Proxy {
	t.Helper()
	p, err := faults.NewProxy(e.Config, opts)
	if err != nil {
		t.Fatalf("start proxy: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close proxy: %v", err)
		}
	})
	return p
}

// namespace creates a namespace straight on the API server, deleted when
// the test ends.
func namespace(t *testing.T, e *testenv.Env) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "faults-"}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), ns) })
	return ns.Name
}

// configMap returns a ConfigMap named name in ns holding k=v.
func configMap(ns, name, k, v string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{k: v}}
}

// checkHonoured fails the test unless the proxy saw every fault with a
// Retry-After come again, no earlier than the Retry-After (less slack)
// and not stalled, with the methods want in that order.
func checkHonoured(t *testing.T, p *faults.Proxy, fault faults.Fault, retryAfter time.Duration, want []string) {
	t.Helper()
	gaps := p.RetryGaps()
	var methods []string
	for _, g := range gaps {
		methods = append(methods, g.Method)
		t.Logf("%s %s: %s with Retry-After %v, retried after %v", g.Method, g.URL, g.Fault, g.RetryAfter, g.Gap.Round(time.Millisecond))
		if g.Fault != fault || g.RetryAfter != retryAfter {
			t.Errorf("%s %s: got %s with Retry-After %v, want %s with %v", g.Method, g.URL, g.Fault, g.RetryAfter, fault, retryAfter)
		}
		if g.Gap < g.RetryAfter-slack {
			t.Errorf("%s %s: retried %v after a Retry-After of %v: too early", g.Method, g.URL, g.Gap, g.RetryAfter)
		}
		if g.Gap > g.RetryAfter+10*time.Second {
			t.Errorf("%s %s: retried only %v after a Retry-After of %v", g.Method, g.URL, g.Gap, g.RetryAfter)
		}
	}
	if diff := cmp.Diff(want, methods); diff != "" {
		t.Errorf("retried requests' methods (-want +got):\n%s", diff)
	}
	if got := p.Stats().Injected[fault]; got != int64(len(gaps)) {
		t.Errorf("%d %s answered, %d retried: want every one retried", got, fault, len(gaps))
	}
}

// checkData fails the test unless the ConfigMaps in ns, read straight from
// the API server, are want: value of key k by name.
func checkData(t *testing.T, c client.Client, ns string, want map[string]string) {
	t.Helper()
	var list corev1.ConfigMapList
	if err := c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatalf("list: %v", err)
	}
	got := map[string]string{}
	for _, cm := range list.Items {
		if cm.Name != "kube-root-ca.crt" {
			got[cm.Name] = cm.Data["k"]
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ConfigMaps in %s (-want +got):\n%s", ns, diff)
	}
}
