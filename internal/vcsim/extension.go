package vcsim

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
)

// tunnelHost is the host a request sent through vCenter's SDK tunnel
// names: the tunnel is an HTTP proxy on vCenter's port 80 whose CONNECT
// target is sdkTunnel:8089, vpxd's own endpoint, which sees the client's
// certificate (vCenter's reverse proxy on port 443 ends TLS itself and
// passes no client certificate on).
const tunnelHost = "sdkTunnel:8089"

// StartTunnel starts the simulator's SDK tunnel, the HTTP proxy through
// which a client logs in by certificate (LoginExtensionByCertificate), and
// puts its port in s.URL where govmomi's soap.Client.Tunnel finds it (the
// GOVMOMI_TUNNEL_PROXY_PORT query parameter; a real vCenter's tunnel is on
// port 80 of its host). It takes CONNECT to sdkTunnel:8089 only, as
// vCenter's does, and stops with the simulator.
//
// govmomi's simulator.Server.StartTunnel is not used: it answers the
// CONNECT before it takes the connection over and drops what the server
// had read ahead of it, so a client's TLS hello sometimes arrives without
// its first byte.
func (s *Sim) StartTunnel() error {
	if s.tunnel != nil {
		return nil
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		return err
	}
	t, err := StartTunnel(u.Host)
	if err != nil {
		return err
	}
	s.tunnel = t
	s.URL = t.On(u.String())
	return nil
}

// Tunnel is an SDK tunnel: an HTTP proxy on a loopback port that joins a
// CONNECT to sdkTunnel:8089 to an address of its own.
type Tunnel struct {
	srv  *http.Server
	port int
}

// StartTunnel starts an SDK tunnel to addr. A test that points a client's
// tunnel (Tunnel.On) at something other than the simulator, a server
// with another certificate, say, shows what the client verifies there.
func StartTunnel(addr string) (*Tunnel, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("vcsim: start the SDK tunnel: %w", err)
	}
	t := &Tunnel{srv: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { tunnel(w, r, addr) })},
		port: l.Addr().(*net.TCPAddr).Port}
	go func() { _ = t.srv.Serve(l) }()
	return t, nil
}

// On returns sdkURL with the tunnel's port in its query, where govmomi's
// soap.Client.Tunnel finds it.
func (t *Tunnel) On(sdkURL string) string {
	u, err := url.Parse(sdkURL)
	if err != nil {
		return sdkURL
	}
	q := u.Query()
	q.Set("GOVMOMI_TUNNEL_PROXY_PORT", strconv.Itoa(t.port))
	u.RawQuery = q.Encode()
	return u.String()
}

// Close stops the tunnel.
func (t *Tunnel) Close() error { return t.srv.Close() }

// tunnel serves one CONNECT to sdkTunnel:8089 by joining the client to
// the simulator at addr.
func tunnel(w http.ResponseWriter, r *http.Request, addr string) {
	if r.Method != http.MethodConnect || r.Host != tunnelHost {
		http.Error(w, "vcsim: the SDK tunnel takes CONNECT "+tunnelHost+" only", http.StatusForbidden)
		return
	}
	dst, err := net.Dial("tcp", addr)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	src, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		_ = dst.Close()
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if _, err := src.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		_ = src.Close()
		_ = dst.Close()
		return
	}
	go func() {
		_, _ = io.Copy(src, dst)
		_ = src.Close()
	}()
	go func() {
		_, _ = io.Copy(dst, buf.Reader) // what the server read ahead, then the rest
		_ = dst.Close()
	}()
}

// SetExtensionCertificate registers der (an X.509 certificate, DER
// encoded) as the one extension key logs in with, as
// ExtensionManager.SetExtensionCertificate does, replacing any before; an
// empty der removes the key. It needs a serialized simulator.
//
// With a serialized simulator the gate answers LoginExtensionByCertificate
// as vSphere's API reference for SessionManager says vCenter does
// (govmomi's simulator takes any certificate for any key):
// NoClientCertificate when the client sent no certificate (and when the
// call did not come through the SDK tunnel, since vCenter's port 443
// passes none on), InvalidLogin when the key is not registered or the
// certificate is not the one registered for it.
func (s *Sim) SetExtensionCertificate(key string, der []byte) error {
	if s.gate == nil {
		return fmt.Errorf("vcsim: SetExtensionCertificate needs a serialized simulator")
	}
	s.gate.mu.Lock()
	defer s.gate.mu.Unlock()
	if s.gate.extensions == nil {
		s.gate.extensions = map[string][]byte{}
	}
	if len(der) == 0 {
		delete(s.gate.extensions, key)
	} else {
		s.gate.extensions[key] = bytes.Clone(der)
	}
	return nil
}

// extensionKey finds the key a LoginExtensionByCertificate call names.
var extensionKey = regexp.MustCompile(`<extensionKey>([^<]*)</extensionKey>`)

// refusesCertificate answers a LoginExtensionByCertificate call that
// vCenter would refuse, and reports whether it did. The gate's lock is
// held.
func (g *gate) refusesCertificate(w http.ResponseWriter, r *http.Request, method string, body []byte) bool {
	if method != "LoginExtensionByCertificate" {
		return false
	}
	if r.Host != tunnelHost || r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		writeFault(w, "NoClientCertificate", "A client certificate is required: log in through the SDK tunnel ("+tunnelHost+").")
		return true
	}
	key := ""
	if m := extensionKey.FindSubmatch(body); m != nil {
		key = html.UnescapeString(string(m[1]))
	}
	want, ok := g.extensions[key]
	if !ok || !bytes.Equal(want, r.TLS.PeerCertificates[0].Raw) {
		writeFault(w, "InvalidLogin", "Cannot complete login due to an incorrect user name or password.")
		return true
	}
	return false
}

// writeFault answers a call with a SOAP fault carrying the vim25 fault of
// type kind, which has no fields of its own, and message.
func writeFault(w http.ResponseWriter, kind, message string) {
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.WriteHeader(http.StatusInternalServerError)
	_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenc="http://schemas.xmlsoap.org/soap/encoding/" xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<soapenv:Body><soapenv:Fault><faultcode>ServerFaultCode</faultcode><faultstring>`+html.EscapeString(message)+`</faultstring><detail><`+kind+`Fault xmlns="urn:vim25" xsi:type="`+kind+`"></`+kind+`Fault></detail></soapenv:Fault></soapenv:Body></soapenv:Envelope>
`)
}
