package faults

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
)

// Fault is an answer the Proxy gives in place of the API server's: its reason.
type Fault string

// The faults a Proxy injects, answered with a metav1.Status body (but for
// Rules.PlainText).
const (
	// TooManyRequests is a 429 with Retry-After, as priority and fairness sheds load.
	TooManyRequests Fault = "TooManyRequests"
	// InternalError is a 500 without Retry-After.
	InternalError Fault = "InternalError"
	// ServerTimeout is a 500 with reason ServerTimeout and Retry-After.
	ServerTimeout Fault = "ServerTimeout"
	// Conflict is a 409, given to PUT and PATCH requests only.
	Conflict Fault = "Conflict"
)

// allFaults lists the faults in the order of the random draws.
var allFaults = []Fault{TooManyRequests, InternalError, ServerTimeout, Conflict}

// Rules choose the requests that get a fault and the fault they get. Watches,
// discovery and other non-resource requests never get one.
type Rules struct {
	// Rate is the probability that a chosen request gets a fault.
	Rate float64
	// Mix weighs the faults that apply to a request to draw one. Empty
	// means TooManyRequests, InternalError and Conflict alike.
	Mix map[Fault]int
	// RetryAfter is TooManyRequests' and ServerTimeout's, in seconds (0 is 1).
	RetryAfter int
	// Reads chooses GETs (gets, lists) as well as POST, PUT, PATCH, DELETE.
	Reads bool
	// ExcludeLeases spares coordination.k8s.io leases (leader election).
	ExcludeLeases bool
	// PerRequest, when positive, is how many faults in a row a distinct
	// request (method, URL, body) may get: 1 faults first attempts only.
	PerRequest int
	// PlainText answers TooManyRequests in text/plain, exactly as the API
	// server's priority-and-fairness filter does, not with a Status.
	PlainText bool
	// Match, when set, further limits the chosen requests. It runs under
	// the proxy's lock: it must not call the Proxy.
	Match func(*http.Request) bool
}

// ProxyOptions configure a Proxy.
type ProxyOptions struct {
	// Rules are the initial rules; the zero value injects nothing.
	Rules Rules
	// Seed seeds the draws: the same requests in order get the same faults.
	Seed uint64
}

// ProxyStats counts what a Proxy did.
type ProxyStats struct {
	// Forwarded is the number of requests sent to the API server.
	Forwarded int64
	// Injected is the number of faults answered, by kind.
	Injected map[Fault]int64
}

// RetryGap is a fault with a Retry-After and the request coming again.
type RetryGap struct {
	// Fault is what the first attempt got.
	Fault Fault
	// Method, URL (path and query) and BodySHA256 identify the request.
	Method, URL, BodySHA256 string
	// RetryAfter is what the fault's Retry-After header said.
	RetryAfter time.Duration
	// Gap is the time from sending the fault to the request's next arrival.
	Gap time.Duration
}

// requestKey identifies a distinct request.
type requestKey struct{ method, url, body string }

// attempt is the last fault a distinct request got, and when.
type attempt struct {
	at                time.Time
	fault             Fault
	retryAfter, inRow int
}

// Proxy is a TLS reverse proxy in front of an API server that answers some
// requests with faults instead of forwarding them. Every forwarded request
// acts as the upstream identity; clients need no credentials. It remembers
// each faulted request until the same request comes again.
type Proxy struct {
	url string
	ca  []byte
	srv *http.Server
	rp  *httputil.ReverseProxy
	up  *rest.Config

	forwarded atomic.Int64

	mu       sync.Mutex
	rules    Rules
	rng      *rand.Rand
	injected map[Fault]int64
	last     map[requestKey]attempt // until the request comes again, or forgetAfter
	gaps     []RetryGap
	pruned   time.Time // when last was last pruned
}

// forgetAfter is how long the proxy remembers a faulted request that has
// not come again: a 409 or 500 is retried, if at all, with another body.
const forgetAfter = 10 * time.Minute

// NewProxy starts a proxy to the API server of upstream on a free loopback
// port, with a self-signed certificate made now.
func NewProxy(upstream *rest.Config, opts ProxyOptions) (*Proxy, error) {
	target, _, err := rest.DefaultServerUrlFor(upstream)
	if err != nil {
		return nil, err
	}
	transport, err := rest.TransportFor(upstream)
	if err != nil {
		return nil, err
	}
	ca, key, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", nil, []string{"localhost"}) // and its CA
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(ca, key)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		url:      "https://" + ln.Addr().String(),
		ca:       ca,
		up:       rest.CopyConfig(upstream),
		rng:      rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		injected: map[Fault]int64{},
		last:     map[requestKey]attempt{},
	}
	p.SetRules(opts.Rules)
	p.rp = &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport:     transport,
		FlushInterval: -1, // stream watches
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "faults.Proxy: "+err.Error(), http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{
		Handler:           p,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 30 * time.Second,
	}
	go func() { _ = p.srv.ServeTLS(ln, "", "") }() // HTTP/2 and HTTP/1.1
	return p, nil
}

// Close stops the proxy, ending the requests and watches going through it.
func (p *Proxy) Close() error {
	defer utilnet.CloseIdleConnectionsFor(p.rp.Transport)
	return p.srv.Close()
}

// Config returns a client configuration for the proxy, trusting its
// certificate, with the upstream's rate limits and no credentials.
func (p *Proxy) Config() *rest.Config {
	return &rest.Config{Host: p.url, TLSClientConfig: rest.TLSClientConfig{CAData: p.ca}, QPS: p.up.QPS, Burst: p.up.Burst}
}

// Kubeconfig writes a kubeconfig file for the proxy at path, for other
// processes (--kubeconfig). Its token is a placeholder the proxy drops:
// without one kubectl would prompt for a user name.
func (p *Proxy) Kubeconfig(path string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["faults-proxy"] = &clientcmdapi.Cluster{Server: p.url, CertificateAuthorityData: p.ca}
	cfg.AuthInfos["faults-proxy"] = &clientcmdapi.AuthInfo{Token: "faults-proxy"}
	cfg.Contexts["faults-proxy"] = &clientcmdapi.Context{Cluster: "faults-proxy", AuthInfo: "faults-proxy"}
	cfg.CurrentContext = "faults-proxy"
	return clientcmd.WriteToFile(*cfg, path)
}

// SetRules replaces the rules; requests arriving later follow the new ones.
func (p *Proxy) SetRules(r Rules) {
	r.Mix = maps.Clone(r.Mix)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = r
}

// SetRate changes the probability of a fault, keeping the other rules.
func (p *Proxy) SetRate(rate float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules.Rate = rate
}

// Stats returns the counts so far.
func (p *Proxy) Stats() ProxyStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return ProxyStats{Forwarded: p.forwarded.Load(), Injected: maps.Clone(p.injected)}
}

// String summarizes the counts.
func (s ProxyStats) String() string {
	return fmt.Sprintf("%d forwarded, %d TooManyRequests, %d InternalError, %d ServerTimeout, %d Conflict",
		s.Forwarded, s.Injected[TooManyRequests], s.Injected[InternalError], s.Injected[ServerTimeout], s.Injected[Conflict])
}

// RetryGaps returns, in order of arrival, every request that came again
// after a fault with a Retry-After, with the gap and the Retry-After.
func (p *Proxy) RetryGaps() []RetryGap {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]RetryGap(nil), p.gaps...)
}

// ServeHTTP forwards r or answers it with a fault.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	r.Header.Del("Authorization") // the upstream transport authenticates
	if !isWatch(r) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "faults.Proxy: read request: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		sum := sha256.Sum256(body)
		key := requestKey{r.Method, r.URL.RequestURI(), hex.EncodeToString(sum[:])}
		if a, plain, ok := p.decide(r, key, arrived); ok {
			answer(w, r, a.fault, a.retryAfter, plain)
			p.mu.Lock()
			if a, still := p.last[key]; still {
				a.at = time.Now() // the fault is sent: gaps start here
				p.last[key] = a
			}
			p.mu.Unlock()
			return
		}
	}
	p.forwarded.Add(1)
	p.rp.ServeHTTP(w, r)
}

// decide records a request coming again and draws its fault, if any, and
// whether a 429 is plain text.
func (p *Proxy) decide(r *http.Request, key requestKey, arrived time.Time) (attempt, bool, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	prev, again := p.last[key]
	if again {
		delete(p.last, key)
		if prev.retryAfter > 0 {
			p.gaps = append(p.gaps, RetryGap{Fault: prev.fault, Method: key.method, URL: key.url, BodySHA256: key.body,
				RetryAfter: time.Duration(prev.retryAfter) * time.Second, Gap: arrived.Sub(prev.at)})
		}
	}
	rules := p.rules
	if !chosen(r, rules) || (again && rules.PerRequest > 0 && prev.inRow >= rules.PerRequest) || p.rng.Float64() >= rules.Rate {
		return attempt{}, false, false
	}
	fault, ok := p.pick(rules.Mix, r.Method)
	if !ok {
		return attempt{}, false, false
	}
	a := attempt{at: arrived, fault: fault, inRow: prev.inRow + 1} // prev is zero unless again
	if fault == TooManyRequests || fault == ServerTimeout {
		a.retryAfter = max(rules.RetryAfter, 1)
	}
	if arrived.Sub(p.pruned) > forgetAfter {
		for k, old := range p.last {
			if arrived.Sub(old.at) > forgetAfter {
				delete(p.last, k)
			}
		}
		p.pruned = arrived
	}
	p.last[key] = a
	p.injected[fault]++
	return a, rules.PlainText, true
}

// pick draws a fault that applies to method from mix.
func (p *Proxy) pick(mix map[Fault]int, method string) (Fault, bool) {
	if len(mix) == 0 {
		mix = map[Fault]int{TooManyRequests: 1, InternalError: 1, Conflict: 1}
	}
	weight := func(f Fault) int {
		if f == Conflict && method != http.MethodPut && method != http.MethodPatch {
			return 0
		}
		return max(mix[f], 0)
	}
	total := 0
	for _, f := range allFaults {
		total += weight(f)
	}
	if total == 0 {
		return "", false
	}
	n := p.rng.IntN(total)
	for _, f := range allFaults {
		if n < weight(f) {
			return f, true
		}
		n -= weight(f)
	}
	panic("faults: unreachable")
}

// chosen says whether the rules choose r for a fault.
func chosen(r *http.Request, rules Rules) bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	case http.MethodGet:
		if !rules.Reads {
			return false
		}
	default:
		return false
	}
	group, resource, _, ok := resourceOf(r.URL.Path)
	switch {
	case !ok:
		return false
	case rules.ExcludeLeases && group == "coordination.k8s.io" && resource == "leases":
		return false
	}
	return rules.Match == nil || rules.Match(r)
}

// isWatch says whether r starts a watch.
func isWatch(r *http.Request) bool {
	if w := r.URL.Query().Get("watch"); w == "true" || w == "1" {
		return true
	}
	_, resource, _, ok := resourceOf(r.URL.Path)
	return ok && resource == "watch"
}

// resourceOf parses an API path: /api/v1/..., /apis/group/version/...,
// optionally namespaced. It is false for discovery and other paths.
func resourceOf(path string) (group, resource, name string, ok bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		group, rest = parts[1], parts[3:]
	default:
		return "", "", "", false
	}
	if len(rest) > 2 && rest[0] == "namespaces" && rest[2] != "status" && rest[2] != "finalize" {
		rest = rest[2:]
	}
	resource = rest[0]
	if len(rest) > 1 {
		name = rest[1]
	}
	return group, resource, name, true
}

// answer writes fault as the API server would.
func answer(w http.ResponseWriter, r *http.Request, fault Fault, retryAfter int, plainText bool) {
	group, resource, name, _ := resourceOf(r.URL.Path)
	gr := schema.GroupResource{Group: group, Resource: resource}
	injected := errors.New("injected by faults.Proxy")
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	var st *apierrors.StatusError
	switch fault {
	case TooManyRequests:
		w.Header().Set(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID, "faults-proxy")
		w.Header().Set(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID, "faults-proxy")
		if plainText {
			http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
			return
		}
		st = apierrors.NewTooManyRequests("Too many requests, please try again later (injected by faults.Proxy).", retryAfter)
	case ServerTimeout:
		st = apierrors.NewServerTimeout(gr, strings.ToLower(r.Method), retryAfter)
	case Conflict:
		st = apierrors.NewConflict(gr, name, injected)
	default:
		st = apierrors.NewInternalError(injected)
	}
	status := st.ErrStatus
	status.Kind, status.APIVersion = "Status", "v1"
	body, _ := json.Marshal(status) // a Status always encodes
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(status.Code))
	_, _ = w.Write(body)
}
