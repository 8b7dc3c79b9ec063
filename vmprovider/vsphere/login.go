package vsphere

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// tunnelPortParam is the URL query parameter in which govmomi's
// soap.Client.Tunnel finds the SDK tunnel's port when it is not 80.
const tunnelPortParam = "GOVMOMI_TUNNEL_PROXY_PORT"

// CertificateFiles returns a Config.ClientCertificate that reads the PEM
// certificate and private key in certFile and keyFile at each login, so
// that a certificate renewed in place (a mounted Secret that cert-manager
// renews, say) is the one the next login presents. A read that fails (a
// certificate that does not match its key, read across a renewal) is
// tried once more a moment later.
func CertificateFiles(certFile, keyFile string) func(context.Context) (tls.Certificate, error) {
	return func(ctx context.Context) (tls.Certificate, error) {
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err == nil {
			return c, nil
		}
		// The kubelet renews a mounted Secret by swapping a symbolic
		// link: the two reads may straddle the swap, and read again a
		// moment later they agree.
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return c, err
		}
		return tls.LoadX509KeyPair(certFile, keyFile)
	}
}

// loginFunc returns how cfg logs in to vCenter: by certificate as an
// extension when it names one, else by username and password.
func loginFunc(cfg Config, vc *vim25.Client, sm *session.Manager) func(context.Context) error {
	if cfg.ExtensionKey != "" {
		return func(ctx context.Context) error { return loginByCertificate(ctx, cfg, vc, sm) }
	}
	return func(ctx context.Context) error {
		user := url.UserPassword(cfg.Username, cfg.Password)
		if cfg.Credentials != nil {
			name, password, err := cfg.Credentials(ctx)
			if err != nil {
				return fmt.Errorf("read the credentials: %w: %w", ErrLogin, err)
			}
			user = url.UserPassword(name, password)
		}
		return refused(sm.Login(ctx, user))
	}
}

// whoLogsIn says, for a message, whom cfg logs in as.
func whoLogsIn(cfg Config) string {
	switch {
	case cfg.ExtensionKey != "":
		return fmt.Sprintf("as extension %q by certificate", cfg.ExtensionKey)
	case cfg.Credentials != nil:
		return "with the credentials Config.Credentials gives"
	default:
		return fmt.Sprintf("as %q", cfg.Username)
	}
}

// loginByCertificate logs in as cfg's extension with the certificate
// cfg.ClientCertificate gives (SessionManager.LoginExtensionByCertificate)
// and hands the session to vc. vCenter's reverse proxy on port 443 ends
// TLS itself and passes no client certificate on, so the login goes
// through the SDK tunnel, an HTTP proxy on port 80 of vCenter's host
// whose CONNECT target, sdkTunnel:8089, is vpxd's own endpoint; the
// session cookie it answers with is then vc's (sm does not learn the
// session: its UserSession asks vCenter, its SessionIsActive does not
// know). govmomi's
// session.Manager.LoginExtensionByCertificate does the same but stops
// verifying vCenter's certificate on the tunnel; here it is verified as
// on the main connection (CA bundle, thumbprint, or Insecure), against
// vCenter's host name rather than the tunnel's.
func loginByCertificate(ctx context.Context, cfg Config, vc *vim25.Client, sm *session.Manager) error {
	cert, err := cfg.ClientCertificate(ctx)
	if err != nil {
		return fmt.Errorf("read the client certificate: %w: %w", ErrLogin, err)
	}
	u := vc.URL()
	tunnel := vc.Tunnel() // a copy of vc's transport, its TLS settings included
	tc := tunnel.DefaultTransport().TLSClientConfig
	tc.Certificates = []tls.Certificate{cert}
	tc.ServerName = u.Hostname()
	if cfg.Thumbprint != "" && !cfg.Insecure {
		// As on the main connection: the thumbprint, or else the CA
		// bundle (or the system's roots), vouches for the certificate.
		want, roots := strings.ToUpper(cfg.Thumbprint), tc.RootCAs
		tc.InsecureSkipVerify = true // verified below
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return fmt.Errorf("vCenter's SDK tunnel sent no certificate")
			}
			leaf := cs.PeerCertificates[0]
			if soap.ThumbprintSHA1(leaf) == want || soap.ThumbprintSHA256(leaf) == want {
				return nil
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: u.Hostname()}); err != nil {
				return fmt.Errorf("vCenter's SDK tunnel presented a certificate of thumbprint %s, not %s, and not one its authorities vouch for: %w",
					soap.ThumbprintSHA256(leaf), want, err)
			}
			return nil
		}
	}
	defer tunnel.CloseIdleConnections() // one login's transport: nothing else uses it
	c := &vim25.Client{Client: tunnel, RoundTripper: tunnel, ServiceContent: vc.ServiceContent}
	req := types.LoginExtensionByCertificate{This: sm.Reference(), ExtensionKey: cfg.ExtensionKey, Locale: session.Locale}
	via := fmt.Sprintf("vCenter's SDK tunnel (the HTTP proxy on port %s of %s)",
		cmp.Or(u.Query().Get(tunnelPortParam), os.Getenv(tunnelPortParam), "80"), u.Hostname())
	if _, err := methods.LoginExtensionByCertificate(ctx, c, &req); err != nil {
		return fmt.Errorf("log in through %s: %w", via, refused(err))
	}
	cookies := tunnel.Jar.Cookies(tunnel.URL())
	if !slices.ContainsFunc(cookies, func(c *http.Cookie) bool { return c.Name == soap.SessionCookieName }) {
		return fmt.Errorf("log in through %s: vCenter answered without a session cookie (%s)", via, soap.SessionCookieName)
	}
	vc.Jar.SetCookies(u, cookies)
	return nil
}
