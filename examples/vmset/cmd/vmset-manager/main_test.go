package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")},
		Scheme:            vmcheck.Scheme(),
	})
}

const (
	systemNS = "vmset-system"
	account  = "vmset-manager"
)

// TestDeployment applies the deployment config, runs the manager as its
// service account (leader election on, probes, metrics, the embedded
// vCenter), and checks that the account can do what both controllers need
// and that requests outside its role are refused.
func TestDeployment(t *testing.T) {
	e := env.Require(t)
	ctx := context.Background()
	config := filepath.Join("..", "..", "config", "default")

	// The namespace first: a server-side dry run creates nothing, so the
	// namespaced objects would otherwise find no namespace.
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNS}}); err != nil {
		t.Fatal(err)
	}
	if out, err := e.Kubectl(ctx, "apply", "--dry-run=server", "-k", config); err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	var sa corev1.ServiceAccount
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: systemNS, Name: account}, &sa); !apierrors.IsNotFound(err) {
		t.Fatalf("the dry run created the service account (get: %v)", err)
	}
	if out, err := e.Kubectl(ctx, "apply", "-k", config); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	token, err := e.Kubectl(ctx, "create", "token", account, "-n", systemNS, "--duration=1h")
	if err != nil {
		t.Fatal(err)
	}
	token = strings.TrimSpace(token)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeKubeconfig(t, kubeconfig, e.Config, token)

	metricsAddr, probeAddr := freeAddr(t), freeAddr(t)
	govcEnv := filepath.Join(dir, "govc.env")
	logs := &testenv.LockedBuffer{}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- run(runCtx, []string{
			"--kubeconfig=" + kubeconfig,
			"--leader-elect", "--leader-election-namespace=" + systemNS,
			"--metrics-bind-address=" + metricsAddr,
			"--health-probe-bind-address=" + probeAddr,
			"--vcsim", "--vcsim-env-file=" + govcEnv,
		}, logs)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the manager's last logs:\n%s", logs.Tail(4000))
		}
	})
	stopped := false
	defer func() {
		if !stopped {
			stop()
			// Reached after an early t.Fatal: wait for the manager to end.
			if err := <-done; err != nil {
				t.Logf("run: %v", err)
			}
		}
	}()

	for _, path := range []string{"/healthz", "/readyz"} {
		if body := poll(t, "http://"+probeAddr+path, "", "ok"); body == "" {
			t.Fatalf("%s never answered ok; logs:\n%s", path, logs.Tail(3000))
		}
	}
	var lease coordinationv1.Lease
	waitFor(t, "the leader election lease held", func(ctx context.Context) (bool, error) {
		err := e.Client.Get(ctx, client.ObjectKey{Namespace: systemNS, Name: "vmset.replicakit.io"}, &lease)
		return err == nil && ptr.Deref(lease.Spec.HolderIdentity, "") != "", client.IgnoreNotFound(err)
	})
	vc, err := vcsim.ReadEnvFile(govcEnv)
	if err != nil {
		t.Fatal(err)
	}

	// What the controllers need: a set of 2, scaled to 1, then deleted.
	const ns = "apps"
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	set := newSet(ns, "web", 2)
	if err := e.Client.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	settle(t, e, vc, ns, 2)
	if _, err := e.Kubectl(ctx, "scale", "vmreplicaset", "web", "-n", ns, "--replicas=1"); err != nil {
		t.Fatal(err)
	}
	settle(t, e, vc, ns, 1)
	var events eventsv1.EventList
	if err := e.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	reasons := map[string]bool{}
	for _, ev := range events.Items {
		reasons[ev.Reason] = true
	}
	for _, want := range []string{"SuccessfulCreate", "SuccessfulDelete", "Created"} {
		if !reasons[want] {
			t.Errorf("no %s event recorded by the service account; reasons: %v", want, reasons)
		}
	}
	checkMetrics(t, e, "https://"+metricsAddr+"/metrics", token)
	if err := e.Client.Delete(ctx, set); err != nil {
		t.Fatal(err)
	}
	settle(t, e, vc, ns, 0)

	refused(t, e, token, ns)

	stop()
	stopped = true
	if err := <-done; err != nil {
		t.Errorf("run returned %v after cancel", err)
	}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(&lease), &lease); err != nil || ptr.Deref(lease.Spec.HolderIdentity, "") != "" {
		t.Errorf("lease not released on shutdown: holder %q, %v", ptr.Deref(lease.Spec.HolderIdentity, ""), err)
	}
	checkLogs(t, logs.String())
}

// refused checks that requests outside the manager's role fail as the
// service account.
func refused(t *testing.T, e *testenv.Env, token, ns string) {
	t.Helper()
	cfg := rest.AnonymousClientConfig(e.Config)
	cfg.BearerToken = token
	c, err := client.New(cfg, client.Options{Scheme: vmcheck.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tt := range []struct {
		what string
		do   func() error
	}{
		{"list secrets", func() error { return c.List(ctx, &corev1.SecretList{}) }},
		{"create a pod", func() error {
			return c.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}})
		}},
		{"delete a namespace", func() error {
			return c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		}},
		{"create a set (the controllers only read sets)", func() error { return c.Create(ctx, newSet(ns, "mine", 1)) }},
		{"update a VirtualMachine (the controllers patch)", func() error {
			return c.Update(ctx, &vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}})
		}},
		{"take a lease outside its namespace", func() error {
			return c.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "l"}})
		}},
	} {
		if err := tt.do(); !apierrors.IsForbidden(err) {
			t.Errorf("as %s, %s: %v; want Forbidden", account, tt.what, err)
		}
	}
	// And one it may do, so the refusals above are not a broken client.
	if err := c.List(ctx, &vmv1.VirtualMachineList{}); err != nil {
		t.Errorf("as %s, list VirtualMachines: %v", account, err)
	}
}

// checkLogs requires JSON log lines, the simulator announced, and no
// permission refused to the manager.
func checkLogs(t *testing.T, logs string) {
	t.Helper()
	var sawSim bool
	for line := range strings.Lines(logs) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("log line is not JSON: %q", line)
			continue
		}
		if rec["msg"] == "-vcsim: running the embedded vCenter simulator; its VMs exist only in this process" {
			sawSim = true
		}
		if strings.Contains(strings.ToLower(line), "forbidden") {
			t.Errorf("the manager was refused a request: %s", line)
		}
	}
	if !sawSim {
		t.Errorf("the logs do not announce the embedded simulator")
	}
}

func newSet(ns, name string, n int32) *vmv1.VirtualMachineReplicaSet {
	return &vmv1.VirtualMachineReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: vmv1.VirtualMachineReplicaSetSpec{
			Replicas: ptr.To(n),
			Selector: &vmv1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: vmv1.VirtualMachineTemplate{
				Metadata: vmv1.TemplateMetadata{Labels: map[string]string{"app": name}},
				Spec:     vmv1.VirtualMachineSpec{CPUs: 1, MemoryMiB: 256},
			},
		},
	}
}

// settle waits until ns holds n live, powered-on VirtualMachines and vCenter
// holds exactly their VMs, read over the vSphere API.
func settle(t *testing.T, e *testenv.Env, vc vsphere.Config, ns string, n int) {
	t.Helper()
	var st vmcheck.State
	defer func() {
		if t.Failed() {
			t.Logf("in %s: %v", ns, st)
		}
	}()
	waitFor(t, fmt.Sprintf("%d VMs in %s", n, ns), func(ctx context.Context) (bool, error) {
		var err error
		st, err = vmcheck.Observe(ctx, e.Client, vc, ns, "")
		return err == nil && st.Settled(n), nil // a VM destroyed mid-read: read again
	})
}

func waitFor(t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// checkMetrics requires the metrics server at url to refuse a request
// without a token (401) and one from the manager's own account, which may
// not read metrics (403), and to serve the binding's counters to a service
// account bound to the shipped vmset-metrics-reader role.
func checkMetrics(t *testing.T, e *testenv.Env, url, managerToken string) {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: systemNS, Name: "scraper"}}
	if err := e.Client.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	if out, err := e.Kubectl(ctx, "create", "clusterrolebinding", "scraper", "--clusterrole=vmset-metrics-reader", "--serviceaccount="+systemNS+":scraper"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	token, err := e.Kubectl(ctx, "create", "token", "scraper", "-n", systemNS, "--duration=1h")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		who, token string
		want       int
	}{{"nobody", "", http.StatusUnauthorized}, {"the manager", managerToken, http.StatusForbidden}} {
		if code, _, err := get(url, tt.token); err != nil || code != tt.want {
			t.Errorf("GET %s as %s: status %d, %v; want %d", url, tt.who, code, err, tt.want)
		}
	}
	if body := poll(t, url, strings.TrimSpace(token), `replicakit_children_created_total{kind="VirtualMachineReplicaSet"} 2`); body == "" {
		t.Errorf("metrics lack the binding's counters")
	}
}

// get GETs url, with token as a bearer token unless empty, trusting any
// certificate (the metrics server's is self-signed); it returns the status
// and body.
func get(url, token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	res, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = res.Body.Close() }() // read to the end below, which reports any error
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, string(b), err
}

// poll GETs url (with token, unless empty) until the body holds want, for
// up to a minute; it returns the body, or "" when it never did.
func poll(t *testing.T, url, token, want string) string {
	t.Helper()
	var body string
	_ = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		code, b, err := get(url, token)
		body = b
		return err == nil && code == http.StatusOK && strings.Contains(body, want), nil
	})
	if !strings.Contains(body, want) {
		t.Errorf("GET %s: never held %q; last body %.300q", url, want, body)
		return ""
	}
	return body
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }() // only its port was wanted
	return l.Addr().String()
}

// writeKubeconfig writes a kubeconfig for the API server in cfg that
// authenticates with token.
func writeKubeconfig(t *testing.T, path string, cfg *rest.Config, token string) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[account] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts[account] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: account}
	kc.CurrentContext = account
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
}
