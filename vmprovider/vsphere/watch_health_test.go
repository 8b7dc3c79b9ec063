package vsphere_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replicakit/replicakit/internal/netcut"
	"github.com/replicakit/replicakit/internal/testcert"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// TestCached_UnreachableWhileCut cuts the link to vCenter under a running
// watch, as a partition would: Cached's reads fail with ErrUnreachable
// (its copy is unknown, not current) within seconds, and answer again,
// with what changed meanwhile, once the link is back.
func TestCached_UnreachableWhileCut(t *testing.T) {
	ctx := context.Background()
	sim := vcsimtest.Start(t)
	cfg, link := vcsimtest.BehindLink(t, sim)
	p, err := vsphere.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	w := vsphere.NewWatch(p)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	t.Cleanup(func() {
		link.Heal() // so that the watch's last calls end
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	cached := vsphere.Cached{Provider: p, Watch: w}
	if _, err := cached.Create(ctx, vmprovider.Spec{Name: "before", Owner: ownerA}); err != nil {
		t.Fatal(err)
	}
	if l, err := cached.List(ctx, ownerA.UID); err != nil || len(l) != 1 {
		t.Fatalf("List before the cut = %v, %v", l, err)
	}
	seenBefore, err := w.Health()
	if err != nil || seenBefore.IsZero() {
		t.Fatalf("Health before the cut = %v, %v", seenBefore, err)
	}

	link.Cut(netcut.Drop)
	cutAt := time.Now()
	var listErr error
	for time.Since(cutAt) < 45*time.Second {
		if _, listErr = cached.List(ctx, ownerA.UID); listErr != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !errors.Is(listErr, vmprovider.ErrUnreachable) {
		t.Fatalf("List %v after the cut: %v, want ErrUnreachable", time.Since(cutAt).Round(time.Millisecond), listErr)
	}
	t.Logf("unreachable %v after the cut: %v", time.Since(cutAt).Round(time.Millisecond), listErr)
	if _, err := cached.Get(ctx, "before"); !errors.Is(err, vmprovider.ErrUnreachable) {
		t.Errorf("Get while cut off = %v, want ErrUnreachable", err)
	}
	if last, _ := w.Health(); last.After(cutAt) {
		t.Errorf("Health says vCenter answered at %v, after the cut at %v", last, cutAt)
	}

	// A VM made behind the watch's back while it was cut off is there
	// once the link is back.
	other, err := vsphere.New(ctx, sim.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Close(ctx) }()
	if _, err := other.Create(ctx, vmprovider.Spec{Name: "meanwhile", Owner: ownerA}); err != nil {
		t.Fatal(err)
	}
	link.Heal()
	healAt := time.Now()
	var l []vmprovider.VM
	for time.Since(healAt) < 60*time.Second {
		if l, listErr = cached.List(ctx, ownerA.UID); listErr == nil && len(l) == 2 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if listErr != nil || len(l) != 2 {
		t.Fatalf("List %v after healing = %v, %v; want before and meanwhile", time.Since(healAt).Round(time.Millisecond), l, listErr)
	}
	t.Logf("current again %v after healing", time.Since(healAt).Round(time.Millisecond))
	if _, err := w.Health(); err != nil {
		t.Errorf("Health after healing: %v", err)
	}
}

// TestNew_Unreachable: New on a vCenter behind a cut link fails with an
// error wrapping vmprovider.ErrUnreachable, whether the link refuses the
// connection or holds it without an answer until the caller's deadline,
// and succeeds once the link is back.
func TestNew_Unreachable(t *testing.T) {
	sim := vcsimtest.Start(t)
	cfg, link := vcsimtest.BehindLink(t, sim)
	for _, how := range []netcut.Mode{netcut.Refuse, netcut.Drop} {
		link.Cut(how)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		p, err := vsphere.New(ctx, cfg)
		cancel()
		if err == nil {
			_ = p.Close(context.Background())
		}
		if !errors.Is(err, vmprovider.ErrUnreachable) {
			t.Errorf("New through a link cut (%v): %v; want ErrUnreachable", how, err)
		}
	}
	link.Heal()
	p, err := vsphere.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("New once the link is back: %v", err)
	}
	_ = p.Close(context.Background())
}

// TestNew_AnswersThatAreNot: a proxy in front of vCenter saying it cannot
// reach it (502, 503, 504) is ErrUnreachable; another HTTP error and a
// TLS alert (a server that demands a client certificate) are answers.
func TestNew_AnswersThatAreNot(t *testing.T) {
	serve := func(t *testing.T, status int) vsphere.Config {
		s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(status)
		}))
		t.Cleanup(s.Close)
		return vsphere.Config{URL: s.URL + "/sdk", Username: "u", Password: "p", Insecure: true}
	}
	tests := []struct {
		desc   string
		status int
		want   bool
	}{
		{"502 from a proxy", http.StatusBadGateway, true},
		{"503 while vCenter restarts", http.StatusServiceUnavailable, true},
		{"504 from a proxy", http.StatusGatewayTimeout, true},
		{"404: no SDK at that path", http.StatusNotFound, false},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			p, err := vsphere.New(ctx, serve(t, tt.status))
			if err == nil {
				_ = p.Close(ctx)
				t.Fatal("New succeeded")
			}
			if got := errors.Is(err, vmprovider.ErrUnreachable); got != tt.want {
				t.Errorf("New: %v; errors.Is(err, ErrUnreachable) = %v, want %v", err, got, tt.want)
			}
		})
	}
	t.Run("a TLS alert: a client certificate demanded", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p, err := vsphere.New(ctx, alerting(t))
		if err == nil {
			_ = p.Close(ctx)
			t.Fatal("New succeeded")
		}
		// The alert itself, not a write or read error that stands for it:
		// otherwise this test would not be testing what it names.
		var alert *net.OpError
		if !errors.As(err, &alert) || alert.Op != "remote error" {
			t.Fatalf("New: %v; want the server's TLS alert", err)
		}
		if errors.Is(err, vmprovider.ErrUnreachable) {
			t.Errorf("New: %v; a TLS alert is an answer, want no ErrUnreachable", err)
		}
	})
}

// alerting runs a TLS server on the loopback interface until the test ends
// that answers every handshake with an alert, as a server that demands a
// client certificate does of a client that has none, and returns a
// configuration for it.
//
// It makes the moment the client reads the alert instead of racing it, in
// two ways. It offers TLS 1.2 at most, where the server checks the
// client's certificate inside the handshake, so the client reads the alert
// before it writes anything else. In TLS 1.3 the client's handshake has
// ended by then and it has written its first request; net/http's Transport
// then returns whichever comes first of the alert its reader found and the
// error of writing that request to a connection the server has closed
// ("broken pipe", "connection reset by peer", or "use of closed network
// connection" once its reader has closed it), and New rightly calls the
// latter unreachable: the alert never reaches it. And after the alert the
// server stops writing but reads until the client hangs up, since closing
// a socket with data unread sends a reset.
func alerting(t *testing.T) vsphere.Config {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{testcert.New(t, x509.Certificate{Subject: pkix.Name{CommonName: "127.0.0.1"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})},
		ClientAuth:   tls.RequireAnyClientCert,
		MaxVersion:   tls.VersionTLS12,
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // the listener is closed
			}
			wg.Go(func() {
				defer func() { _ = c.Close() }()
				_ = c.SetDeadline(time.Now().Add(time.Minute)) // a client that never hangs up
				if err := tls.Server(c, cfg).Handshake(); err == nil {
					t.Error("a client without a certificate completed the handshake")
					return
				}
				_ = c.(*net.TCPConn).CloseWrite()
				_, _ = io.Copy(io.Discard, c)
			})
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	return vsphere.Config{URL: "https://" + ln.Addr().String() + "/sdk", Username: "u", Password: "p", Insecure: true}
}

// TestWatch_PrivilegesInHealth: a watch whose calls vCenter refuses for
// lack of privileges says which privileges, on what, in its Health, and
// wraps ErrPrivileges there besides ErrUnreachable (its VMs are unknown).
func TestWatch_PrivilegesInHealth(t *testing.T) {
	faults, sim, p := startCounted(t)
	defer faults.Deny("CreateContainerView", mustFolder(t, sim.Model, "vm"), "System.View")()
	w := vsphere.NewWatch(p)
	runWatch(t, w)
	var err error
	waitFor(t, "the watch's Health naming the privilege", func() bool {
		_, err = w.Health()
		return err != nil && strings.Contains(err.Error(), "System.View")
	})
	if !errors.Is(err, vsphere.ErrPrivileges) || !errors.Is(err, vmprovider.ErrUnreachable) {
		t.Errorf("Health = %v; want it to wrap ErrPrivileges and vmprovider.ErrUnreachable", err)
	}
}
