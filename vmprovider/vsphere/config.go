package vsphere

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/session/keepalive"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/vmprovider"
)

// ErrConfig means a Config cannot be used: a missing URL or credentials, a
// bad CA bundle, placement that does not resolve, or a ShutdownGrace over
// MaxShutdownGrace.
var ErrConfig = errors.New("vsphere: invalid configuration")

// ErrLogin means vCenter refused the credentials (an InvalidLogin fault: a
// wrong user name or password, an account locked or expired, or a client
// certificate not the one registered for Config.ExtensionKey; or
// NoClientCertificate), or that Config.Credentials or
// Config.ClientCertificate failed, at New or Connect or when a session
// that expired is renewed.
var ErrLogin = errors.New("vsphere: login refused")

// DefaultMaxTasks bounds the short vCenter tasks (power, reset,
// reconfigure, destroy) one Provider runs at once when Config.MaxTasks is
// zero.
const DefaultMaxTasks = 8

// DefaultMaxClones bounds the clones one Provider has in flight at once
// when Config.MaxClones is zero: 8. A host takes 16 units of concurrent
// provisioning work and a full clone to the same host costs 4, so a host
// runs 4 clones at once and queues the rest ("vCenter Limits for Tasks
// Running at the Same Time", VMware performance blog, February 2021); 8 is
// two hosts' worth, which a cluster spreads, without a queue in vCenter
// that the provider cannot see.
const DefaultMaxClones = 8

// DefaultRequestsPerSecond bounds the rate of one Provider's calls to
// vCenter when Config.RequestsPerSecond is zero: 50 a second, in bursts
// of up to 100. vCenter serves about 640 operations at once and queues
// the rest, for every client together, and keeps 2,000 sessions ("vCenter
// Limits for Tasks Running at the Same Time", VMware performance blog,
// February 2021); its REST endpoint's default limit is 1,500 requests a
// second for all clients ("Endpoint Limits for Concurrent REST Requests
// from vCenter APIs", July 2022). At 30 ms a call, 50 calls a second keep
// fewer than two of vCenter's 640 busy, leaving it to the vSphere Client,
// backups and other controllers, while a set of hundreds still lists its
// VMs in one call and creates tens a minute.
const DefaultRequestsPerSecond = 50

// DefaultShutdownGrace is how long Delete waits for a guest to shut down,
// once asked through VMware Tools, before it powers the VM off, when
// Config.ShutdownGrace is zero: 90 seconds, enough for a healthy guest to
// stop on its own. A Linux guest's systemd waits up to 90 s for each
// service to stop (DefaultTimeoutStopSec) before it kills it; Windows
// aims to shut down within about 20 s, giving services 5 s
// (WaitToKillServiceTimeout) and, since Windows 10 1703, a preshutdown
// handler 10 s. Kubernetes' default terminationGracePeriodSeconds and
// KubeVirt's default grace for a VM are 30 s, which would cut off a Linux
// guest still waiting on one slow service; Google Compute Engine gives a
// VM 120 s between the ACPI soft off and the hard one. vm-operator's
// powerOffMode TrySoft and Cluster API's vSphere provider (its
// guestSoftPowerOffTimeout) wait five minutes for one VM; a replica set
// deletes VMs to scale down, roll out and heal, each wait holds its
// caller and the VM's name, and a hung guest, which never shuts down,
// costs the whole grace, so it is kept shorter here.
const DefaultShutdownGrace = 90 * time.Second

// MaxShutdownGrace is the longest Config.ShutdownGrace New accepts, an
// hour: Delete holds its caller for as long as the guest may take, and a
// longer wait is more likely a mistaken unit than a guest's need (vCenter
// Site Recovery Manager likewise caps its guest shutdown timeout at 3599
// seconds).
const MaxShutdownGrace = time.Hour

// Config says how to reach vCenter and where VMs go. Credentials are held
// here only; they never appear in logs, errors or String output.
type Config struct {
	// URL is vCenter's SDK endpoint, such as https://vcenter.example.com/sdk.
	// User information in the URL is ignored; use Username and Password.
	URL string
	// Username and Password log in to vCenter.
	Username string
	Password string
	// Credentials, when set, gives the username and password of every
	// login, the first and each one after vCenter ends the session (it
	// expired, or was terminated): a password rotated in a Secret or a
	// file is taken at the next login, with no restart, by a function
	// that reads it there. It is called with the login's context and must
	// be safe for concurrent use; Username and Password are then unused.
	// An error from it fails the login, wrapping ErrLogin.
	Credentials func(ctx context.Context) (username, password string, err error)

	// ExtensionKey, when set, logs in by TLS client certificate as the
	// vCenter extension (a solution user) of that key, with no password:
	// SessionManager.LoginExtensionByCertificate, through vCenter's SDK
	// tunnel (an HTTP proxy on port 80 of vCenter's host; its port 443
	// passes no client certificate on). vCenter takes the certificate
	// registered for the extension (ExtensionManager.
	// SetExtensionCertificate); ClientCertificate gives it. Username,
	// Password and Credentials are then unused. A tunnel on another port
	// (a port-forward, say) is named in URL's query, as govmomi reads it:
	// https://vcenter.example.com/sdk?GOVMOMI_TUNNEL_PROXY_PORT=8080.
	ExtensionKey string
	// ClientCertificate gives the certificate and private key that
	// ExtensionKey logs in with, and must be set with it. It is called at
	// each login, the first and each one after vCenter ends the session,
	// so that a certificate renewed where it is kept is taken with no
	// restart (CertificateFiles reads PEM files); it must be safe for
	// concurrent use. An error from it fails the login, wrapping ErrLogin.
	ClientCertificate func(ctx context.Context) (tls.Certificate, error)

	// Insecure skips TLS verification. Leave it false outside tests.
	Insecure bool
	// CABundle is PEM-encoded certificates of the authorities that may sign
	// vCenter's certificate, in place of the system's.
	CABundle []byte
	// CAFile names a file holding such a bundle.
	CAFile string
	// Thumbprint is vCenter's certificate SHA-1 or SHA-256 thumbprint, for
	// a self-signed certificate; verification otherwise stays on.
	Thumbprint string

	// Datacenter, Folder, ResourcePool, Datastore and Template are inventory
	// paths or names. Empty means the single one that exists (an error when
	// there are several); Folder defaults to the datacenter's VM folder.
	// ResourcePool may also name a cluster, meaning its root pool.
	Datacenter   string
	Folder       string
	ResourcePool string
	Datastore    string
	// Template is the VM or template cloned when a Spec names none.
	Template string

	// MaxTasks bounds the short vCenter tasks (power, reset,
	// reconfigure, destroy, snapshot) in flight at once. Zero means
	// DefaultMaxTasks. Clones have a budget of their own (MaxClones), so
	// that clones of minutes never starve the power-offs, resets and
	// deletes that heal and scale down.
	MaxTasks int
	// MaxClones bounds the clones in flight at once, each held from its
	// start until vCenter ends it, whether or not its Create call is still
	// waiting. Zero means DefaultMaxClones.
	MaxClones int
	// RequestsPerSecond bounds the rate of calls to vCenter, every call
	// (a property read, a task's start, a wait for updates) taking one
	// token from a bucket of RequestBurst tokens filled at this rate. Zero
	// means DefaultRequestsPerSecond; a negative value means no limit.
	RequestsPerSecond float64
	// RequestBurst is the number of calls that may go at once before the
	// rate applies. Zero means twice RequestsPerSecond (at least 1).
	RequestBurst int
	// KeepAlive is how often an idle session is kept alive. Zero means
	// five minutes.
	KeepAlive time.Duration
	// ShutdownGrace is how long Delete waits for a powered-on VM whose
	// VMware Tools are running, its heartbeat not red, to shut its guest
	// down (ShutdownGuest)
	// before it powers the VM off. Zero means DefaultShutdownGrace; a
	// negative value means never to ask the guest and to power the VM off
	// at once, as a pulled plug would. At most MaxShutdownGrace.
	ShutdownGrace time.Duration
	// CloudInitTransport says how a Spec's CloudInit reaches the guest:
	// CloudInitCustomization (the default, for the empty value) or
	// CloudInitGuestInfo.
	CloudInitTransport CloudInitTransport
}

// check returns an error wrapping ErrConfig when a setting of c is out of
// range; placement is checked as New resolves it.
func (c Config) check() error {
	if c.ShutdownGrace > MaxShutdownGrace {
		return fmt.Errorf("ShutdownGrace %v: want at most %v: %w", c.ShutdownGrace, MaxShutdownGrace, ErrConfig)
	}
	if err := c.CloudInitTransport.check(); err != nil {
		return err
	}
	if c.RequestBurst < 0 {
		return fmt.Errorf("RequestBurst %d: want zero (the default) or more: %w", c.RequestBurst, ErrConfig)
	}
	return nil
}

// shutdownGrace is the grace Delete gives a guest: c.ShutdownGrace,
// DefaultShutdownGrace for zero, negative for none.
func (c Config) shutdownGrace() time.Duration {
	if c.ShutdownGrace == 0 {
		return DefaultShutdownGrace
	}
	return c.ShutdownGrace
}

// String describes the configuration without its password (and names
// the extension it logs in as by certificate, if any).
func (c Config) String() string {
	ext := ""
	if c.ExtensionKey != "" {
		ext = fmt.Sprintf("ExtensionKey: %q, ", c.ExtensionKey)
	}
	return fmt.Sprintf("vsphere.Config{URL: %q, Username: %q, Password: <redacted>, %sInsecure: %v, "+
		"Datacenter: %q, Folder: %q, ResourcePool: %q, Datastore: %q, Template: %q, MaxTasks: %d, MaxClones: %d, "+
		"RequestsPerSecond: %v, RequestBurst: %d}",
		redactURL(c.URL), c.Username, ext, c.Insecure, c.Datacenter, c.Folder, c.ResourcePool, c.Datastore, c.Template, c.MaxTasks,
		c.MaxClones, c.RequestsPerSecond, c.RequestBurst)
}

// GoString is String, so that %#v does not print the password either.
func (c Config) GoString() string { return c.String() }

// redactURL drops user information from a URL for messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable URL>"
	}
	u.User = nil
	return u.String()
}

// Connect logs in to the vCenter cfg names, as New does (cfg's URL,
// credentials (Username and Password, Credentials, or ExtensionKey and
// ClientCertificate), CABundle, CAFile, Thumbprint, Insecure and
// KeepAlive are used; placement is not), and returns the client and a
// function that ends the session. The client keeps its session alive and
// logs in again when the session has expired. Use it for what the
// Provider does not do, such as inspecting the inventory, with the same
// trust and login rules.
func Connect(ctx context.Context, cfg Config) (c *vim25.Client, logout func(context.Context) error, err error) {
	c, sm, err := connect(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	return c, sm.Logout, nil
}

// connect logs in to vCenter and returns a client that keeps its session
// alive and logs in again when the session has expired.
func connect(ctx context.Context, cfg Config) (*vim25.Client, *session.Manager, error) {
	if cfg.URL == "" || cfg.Username == "" && cfg.Credentials == nil && cfg.ExtensionKey == "" {
		return nil, nil, fmt.Errorf("URL and Username (or Credentials, or ExtensionKey) are required: %w", ErrConfig)
	}
	if (cfg.ExtensionKey == "") != (cfg.ClientCertificate == nil) {
		return nil, nil, fmt.Errorf("ExtensionKey and ClientCertificate go together (one is set, the other not): %w", ErrConfig)
	}
	u, err := soap.ParseURL(cfg.URL)
	if err != nil || u == nil {
		return nil, nil, fmt.Errorf("URL %q does not parse: %w", redactURL(cfg.URL), ErrConfig)
	}
	u.User = nil
	sc := soap.NewClient(u, cfg.Insecure)
	if err := trust(sc, u, cfg); err != nil {
		return nil, nil, err
	}
	vc, err := vim25.NewClient(ctx, sc)
	if err != nil {
		return nil, nil, fmt.Errorf("reach vCenter at %s: %w", u, unanswered(ctx, err))
	}
	sm := session.NewManager(vc)
	login := loginFunc(cfg, vc, sm)
	idle := cfg.KeepAlive
	if idle == 0 {
		idle = 5 * time.Minute
	}
	vc.RoundTripper = &relogin{
		RoundTripper: keepalive.NewHandlerSOAP(vc.RoundTripper, idle, nil),
		login:        login,
	}
	if err := login(ctx); err != nil {
		return nil, nil, fmt.Errorf("log in to %s %s: %w", redactURL(u.String()), whoLogsIn(cfg), unanswered(ctx, err))
	}
	return vc, sm, nil
}

// refused returns err, wrapping ErrLogin as well when it is vCenter's
// refusal of the credentials.
func refused(err error) error {
	if err != nil && (fault.Is(err, &types.InvalidLogin{}) || fault.Is(err, &types.NoClientCertificate{})) {
		return fmt.Errorf("%w: %w", ErrLogin, err)
	}
	return err
}

// unanswered returns err, wrapping vmprovider.ErrUnreachable as well when
// it means that vCenter did not answer (silent).
func unanswered(ctx context.Context, err error) error {
	if silent(ctx, err) {
		return fmt.Errorf("%w: %w", vmprovider.ErrUnreachable, err)
	}
	return err
}

// silent reports whether err means that vCenter did not answer: a
// connection refused, reset or closed before an answer, no answer before
// ctx's deadline or a timeout, or a proxy in front of it saying it cannot
// reach it (HTTP 502, 503 or 504, as vCenter's own proxy answers while
// vCenter restarts). A certificate that fails verification, a TLS alert,
// any other HTTP error or a fault is an answer, and the caller's
// cancellation is not vCenter's silence.
//
// Only an alert the client has read is known to be one. In TLS 1.3 a
// server checks the client's certificate after the client's handshake has
// ended, while the client writes its first request, and net/http may then
// report, instead of the alert, that write's error (a reset or a broken
// pipe, the server having closed) or the closing of the connection by its
// own reader; neither names the alert, and a write's error counts as
// silence.
func silent(ctx context.Context, err error) bool {
	var cert *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	if err == nil || errors.Is(ctx.Err(), context.Canceled) || errors.As(err, &cert) || errors.As(err, &unknownCA) ||
		errors.As(err, &host) || errors.As(err, &invalid) {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) {
		// crypto/tls reports alerts as OpErrors too: those are answers.
		return op.Op != "remote error" && op.Op != "local error"
	}
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		for _, code := range []string{"502 ", "503 ", "504 "} {
			if strings.HasPrefix(ue.Err.Error(), code) {
				return true // govmomi's status error reads as the HTTP status
			}
		}
	}
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// trust configures TLS verification of vCenter's certificate.
func trust(sc *soap.Client, u *url.URL, cfg Config) error {
	bundle := cfg.CABundle
	if cfg.CAFile != "" {
		b, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return fmt.Errorf("CA file: %w: %w", err, ErrConfig)
		}
		bundle = append(append([]byte{}, bundle...), b...)
	}
	if len(bundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(bundle) {
			return fmt.Errorf("CA bundle holds no PEM certificate: %w", ErrConfig)
		}
		sc.DefaultTransport().TLSClientConfig.RootCAs = pool
	}
	if cfg.Thumbprint != "" {
		sc.SetThumbprint(u.Host, strings.ToUpper(cfg.Thumbprint))
	}
	return nil
}

// relogin logs in again when vCenter answers that the session is not
// authenticated (it expired, or was terminated), and retries the call once.
type relogin struct {
	soap.RoundTripper
	login func(context.Context) error

	loginMu    sync.Mutex   // serializes logins; never held across other calls' RoundTrip
	generation atomic.Int64 // counts logins made here
}

// RoundTrip implements soap.RoundTripper.
func (r *relogin) RoundTrip(ctx context.Context, req, res soap.HasFault) error {
	gen := r.generation.Load()
	err := r.RoundTripper.RoundTrip(ctx, req, res)
	if err == nil || !fault.Is(err, &types.NotAuthenticated{}) {
		return err
	}
	if _, isLogin := req.(*methods.LoginBody); isLogin {
		return err
	}
	r.loginMu.Lock()
	if r.generation.Load() == gen { // nobody logged in again since this call began
		if lerr := r.login(ctx); lerr != nil {
			r.loginMu.Unlock()
			return fmt.Errorf("session expired and logging in again failed: %w", lerr)
		}
		r.generation.Add(1)
	}
	r.loginMu.Unlock()
	// Decode the retry into a fresh body: the first one holds the fault.
	fresh := reflect.New(reflect.TypeOf(res).Elem())
	err = r.RoundTripper.RoundTrip(ctx, req, fresh.Interface().(soap.HasFault))
	reflect.ValueOf(res).Elem().Set(fresh.Elem())
	return err
}
