package vcsim

import (
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"net/url"

	"github.com/vmware/govmomi/simulator"

	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// Credentials the simulator accepts; any other login is refused. The
// simulator listens on the loopback interface only.
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
	m.Service.Listen = &url.URL{Host: "127.0.0.1:0", User: url.UserPassword(Username, Password)}
	s := m.Service.NewServer()
	u := *s.URL
	u.User = nil
	return &Sim{
		Model:  m,
		Server: s,
		URL:    u.String(),
		CA:     pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}),
	}, nil
}

// Close stops the server and removes the model.
func (s *Sim) Close() {
	s.Server.Close()
	s.Model.Remove()
}

// Config returns a provider configuration for the simulator that verifies
// TLS against its certificate and places VMs in cluster DC0_C1 on LocalDS_0,
// cloned from DC0_H0_VM0.
func (s *Sim) Config() vsphere.Config {
	return vsphere.Config{
		URL:          s.URL,
		Username:     Username,
		Password:     Password,
		CABundle:     s.CA,
		Datacenter:   "DC0",
		Folder:       "/DC0/vm",
		ResourcePool: "/DC0/host/DC0_C1",
		Datastore:    "LocalDS_0",
		Template:     "DC0_H0_VM0",
	}
}
