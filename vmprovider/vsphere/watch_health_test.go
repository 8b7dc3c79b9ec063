package vsphere_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/replicakit/replicakit/internal/netcut"
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
	serve := func(t *testing.T, status int, clientCert bool) vsphere.Config {
		s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(status)
		}))
		if clientCert {
			s.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
		}
		s.StartTLS()
		t.Cleanup(s.Close)
		return vsphere.Config{URL: s.URL + "/sdk", Username: "u", Password: "p", Insecure: true}
	}
	tests := []struct {
		desc       string
		status     int
		clientCert bool
		want       bool
	}{
		{"502 from a proxy", http.StatusBadGateway, false, true},
		{"503 while vCenter restarts", http.StatusServiceUnavailable, false, true},
		{"504 from a proxy", http.StatusGatewayTimeout, false, true},
		{"404: no SDK at that path", http.StatusNotFound, false, false},
		{"a TLS alert: a client certificate demanded", http.StatusOK, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			p, err := vsphere.New(ctx, serve(t, tt.status, tt.clientCert))
			if err == nil {
				_ = p.Close(ctx)
				t.Fatal("New succeeded")
			}
			if got := errors.Is(err, vmprovider.ErrUnreachable); got != tt.want {
				t.Errorf("New: %v; errors.Is(err, ErrUnreachable) = %v, want %v", err, got, tt.want)
			}
		})
	}
}
