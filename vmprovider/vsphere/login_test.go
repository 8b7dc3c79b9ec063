package vsphere_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/vmware/govmomi/vim25/soap"

	"github.com/replicakit/replicakit/internal/testcert"
	simgate "github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// extensionKey is the extension the certificate tests log in as.
const extensionKey = "io.replicakit.test"

// startTunnelled runs a simulator with its SDK tunnel, extensionKey
// registered with cert, and returns it with a configuration that logs in
// as that extension with what certificate returns at each login.
func startTunnelled(t *testing.T, cert tls.Certificate, certificate func() tls.Certificate) (*vcsimtest.Sim, vsphere.Config) {
	t.Helper()
	sim := vcsimtest.Start(t)
	if err := sim.StartTunnel(); err != nil {
		t.Fatal(err)
	}
	if err := sim.SetExtensionCertificate(extensionKey, cert.Certificate[0]); err != nil {
		t.Fatal(err)
	}
	cfg := sim.Config()
	cfg.Username, cfg.Password = "", ""
	cfg.ExtensionKey = extensionKey
	cfg.ClientCertificate = func(context.Context) (tls.Certificate, error) { return certificate(), nil }
	return sim, cfg
}

// TestLogin_Certificate: a provider configured with an extension key and
// a client certificate logs in with no password, through vCenter's SDK
// tunnel, and works; when the extension's certificate is replaced and the
// sessions end, its next call fails as a refused login while
// ClientCertificate still gives the old one, and works again, watch
// included, once it gives the new one, with no new Provider.
func TestLogin_Certificate(t *testing.T) {
	first, second := testcert.Client(t, "replicakit-1"), testcert.Client(t, "replicakit-2")
	var mu sync.Mutex
	current := first
	sim, cfg := startTunnelled(t, first, func() tls.Certificate {
		mu.Lock()
		defer mu.Unlock()
		return current
	})
	ctx := context.Background()
	p, err := vsphere.New(ctx, cfg)
	if err != nil {
		t.Fatalf("New, logging in by certificate: %v", err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	w := vsphere.NewWatch(p)
	events := make(chan event, 64)
	w.OnChange(func(vm vmprovider.VM, gone bool) { events <- event{vm, gone} })
	runWatch(t, w)
	<-w.Synced()
	if _, err := p.Create(ctx, vmprovider.Spec{Name: "web-0", Owner: ownerA}); err != nil {
		t.Fatal(err)
	}

	// The extension's certificate is renewed, and the sessions end.
	if err := sim.SetExtensionCertificate(extensionKey, second.Certificate[0]); err != nil {
		t.Fatal(err)
	}
	c, logout, err := vsphere.Connect(ctx, sim.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logout(ctx) }()
	if _, err := simgate.EndSessions(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := p.List(ctx, ownerA.UID); !errors.Is(err, vsphere.ErrLogin) {
		t.Fatalf("List with the old certificate = %v, want ErrLogin", err)
	}
	mu.Lock()
	current = second
	mu.Unlock()
	if vms, err := p.List(ctx, ownerA.UID); err != nil || len(vms) != 1 {
		t.Fatalf("List with the renewed certificate = %v, %v; want web-0", vms, err)
	}
	if _, err := p.Create(ctx, vmprovider.Spec{Name: "web-1", Owner: ownerA}); err != nil {
		t.Fatal(err)
	}
	await(t, events, "web-1, on the new session", func(e event) bool { return e.vm.Name == "web-1" && !e.gone })
}

// TestLogin_CertificateRefused: a certificate not registered for the
// extension is a refused login (ErrLogin) at New, naming the extension;
// so is a configuration with a key and no certificate, or the reverse,
// refused before any call (ErrConfig).
func TestLogin_CertificateRefused(t *testing.T) {
	registered, other := testcert.Client(t, "registered"), testcert.Client(t, "other")
	_, cfg := startTunnelled(t, registered, func() tls.Certificate { return other })
	ctx := context.Background()
	_, err := vsphere.New(ctx, cfg)
	if !errors.Is(err, vsphere.ErrLogin) || !strings.Contains(err.Error(), extensionKey) {
		t.Fatalf("New with a certificate vCenter does not know = %v, want ErrLogin naming %s", err, extensionKey)
	}
	t.Log(err)
	none := cfg
	none.ClientCertificate = func(context.Context) (tls.Certificate, error) { return tls.Certificate{}, nil }
	if _, err := vsphere.New(ctx, none); !errors.Is(err, vsphere.ErrLogin) {
		t.Errorf("New presenting no certificate = %v, want ErrLogin (NoClientCertificate)", err)
	}
	broken := cfg
	broken.ClientCertificate = func(context.Context) (tls.Certificate, error) { return tls.Certificate{}, os.ErrNotExist }
	if _, err := vsphere.New(ctx, broken); !errors.Is(err, vsphere.ErrLogin) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("New whose ClientCertificate fails = %v, want ErrLogin wrapping its error", err)
	}
	half := cfg
	half.ClientCertificate = nil
	if _, err := vsphere.New(ctx, half); !errors.Is(err, vsphere.ErrConfig) {
		t.Errorf("New with ExtensionKey and no ClientCertificate = %v, want ErrConfig", err)
	}
	half = cfg
	half.ExtensionKey = ""
	if _, err := vsphere.New(ctx, half); !errors.Is(err, vsphere.ErrConfig) {
		t.Errorf("New with ClientCertificate and no ExtensionKey = %v, want ErrConfig", err)
	}
}

// TestLogin_TunnelVerified: the SDK tunnel's TLS is verified as port
// 443's is. With the tunnel leading to a server of another certificate
// (port 443 being vCenter's own), the login fails on that certificate,
// whether vCenter is trusted by CA bundle or by thumbprint, and no session
// is taken from it.
func TestLogin_TunnelVerified(t *testing.T) {
	cert := testcert.Client(t, "replicakit")
	sim, cfg := startTunnelled(t, cert, func() tls.Certificate { return cert })
	impostor := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("the impostor was sent a request: its certificate was not verified")
		http.Error(w, "impostor", http.StatusInternalServerError)
	}))
	defer impostor.Close()
	tun, err := simgate.StartTunnel(impostor.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tun.Close() }()
	cfg.URL = tun.On(cfg.URL)
	block, _ := pem.Decode(sim.CA)
	server, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	byThumbprint := cfg
	byThumbprint.CABundle, byThumbprint.Thumbprint = nil, soap.ThumbprintSHA256(server)
	for name, c := range map[string]vsphere.Config{"CA bundle": cfg, "thumbprint": byThumbprint} {
		_, _, err := vsphere.Connect(context.Background(), c)
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("%s: a login through a tunnel to another certificate = %v, want it refused on that certificate", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
}

// TestLogin_CertificateThumbprint: the tunnel's TLS is verified as the
// main connection's: by thumbprint, with no CA bundle, when the
// configuration gives one; a wrong thumbprint fails the login.
func TestLogin_CertificateThumbprint(t *testing.T) {
	cert := testcert.Client(t, "replicakit")
	sim, cfg := startTunnelled(t, cert, func() tls.Certificate { return cert })
	block, _ := pem.Decode(sim.CA)
	server, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	cfg.CABundle = nil
	cfg.Thumbprint = soap.ThumbprintSHA256(server)
	ctx := context.Background()
	p, err := vsphere.New(ctx, cfg)
	if err != nil {
		t.Fatalf("New, verifying vCenter by thumbprint: %v", err)
	}
	_ = p.Close(ctx)
	cfg.Thumbprint = strings.Repeat("AB:", 31) + "AB"
	if _, err := vsphere.New(ctx, cfg); err == nil {
		t.Fatal("New with a wrong thumbprint logged in")
	}
}

// TestCertificateFiles: CertificateFiles reads the pair at each call, so
// a renewed pair written in place is the one given next.
func TestCertificateFiles(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	write := func(c tls.Certificate) {
		t.Helper()
		crt, key := testcert.PEM(t, c)
		if err := os.WriteFile(certFile, []byte(crt), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(keyFile, []byte(key), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	read := vsphere.CertificateFiles(certFile, keyFile)
	for _, cn := range []string{"first", "renewed"} {
		c := testcert.Client(t, cn)
		write(c)
		got, err := read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Certificate[0]) != string(c.Certificate[0]) {
			t.Errorf("CertificateFiles gave another certificate than the %s one written", cn)
		}
	}
}
