package vcsim

import (
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"

	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// Credentials the simulator accepts unless Credentials gives others; any
// other login is refused. The simulator listens on the loopback interface
// only.
const (
	Username = "administrator@vsphere.local"
	Password = "vcsim-Secr3t-pw"
)

// Sim is a running simulator.
type Sim struct {
	// Model is the simulated inventory.
	Model *simulator.Model
	// Server serves it.
	Server *simulator.Server
	// URL is the SDK endpoint, without credentials.
	URL string
	// CA is the PEM of the server's certificate, to verify TLS with.
	CA []byte
	// Username and Password are the credentials it accepts.
	Username, Password string

	gate   *gate   // the serializing gate, if a setup function installed one
	tunnel *Tunnel // the SDK tunnel, once StartTunnel has started it
}

// Credentials is a setup function for New that makes the simulator accept
// username and password instead of Username and Password, as a second
// vCenter with credentials of its own.
func Credentials(username, password string) func(*simulator.Model) {
	return func(m *simulator.Model) {
		m.Service.Listen = &url.URL{User: url.UserPassword(username, password)}
	}
}

// New starts a simulator on a free loopback port. The inventory has
// datacenter DC0 with clusters DC0_C0 and DC0_C1, a standalone host, and VMs
// such as DC0_H0_VM0 to clone from. Each setup function may change the model
// (its DelayConfig, say) before the server starts. Close stops it.
func New(setup ...func(*simulator.Model)) (*Sim, error) {
	m := simulator.VPX()
	m.Cluster = 2
	if err := m.Create(); err != nil {
		return nil, fmt.Errorf("vcsim: create model: %w", err)
	}
	for _, f := range setup {
		f(m)
	}
	m.Service.TLS = new(tls.Config)
	user := url.UserPassword(Username, Password)
	if l := m.Service.Listen; l != nil && l.User != nil {
		user = l.User
	}
	m.Service.Listen = &url.URL{Host: "127.0.0.1:0", User: user}
	s := m.Service.NewServer()
	u := *s.URL
	u.User = nil
	password, _ := user.Password()
	return &Sim{
		Model:    m,
		Server:   s,
		URL:      u.String(),
		CA:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}),
		Username: user.Username(),
		Password: password,
		gate:     gateOf(m),
	}, nil
}

// gateOf returns the gate serving m's SOAP calls, or nil.
func gateOf(m *simulator.Model) *gate {
	if m.Service.ServeMux == nil {
		return nil
	}
	h, _ := m.Service.ServeMux.Handler(&http.Request{Method: http.MethodPost, URL: &url.URL{Path: vim25.Path}})
	g, _ := h.(*gate)
	return g
}

// Close stops the server and removes the model, first dropping the calls
// a Latency deferred that are still waiting.
func (s *Sim) Close() {
	if s.gate != nil {
		s.gate.close()
	}
	if s.tunnel != nil {
		_ = s.tunnel.Close()
	}
	s.Server.Close()
	s.Model.Remove()
}

// Config returns a provider configuration for the simulator that verifies
// TLS against its certificate and places VMs in cluster DC0_C1 on LocalDS_0,
// cloned from DC0_H0_VM0.
func (s *Sim) Config() vsphere.Config {
	return vsphere.Config{
		URL:          s.URL,
		Username:     s.Username,
		Password:     s.Password,
		CABundle:     s.CA,
		Datacenter:   "DC0",
		Folder:       "/DC0/vm",
		ResourcePool: "/DC0/host/DC0_C1",
		Datastore:    "LocalDS_0",
		Template:     "DC0_H0_VM0",
	}
}
