package vcsimtest

import (
	"net/url"
	"testing"

	"github.com/vmware/govmomi/simulator"

	"github.com/replicakit/replicakit/internal/netcut"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// Credentials the simulator accepts.
const (
	Username = vcsim.Username
	Password = vcsim.Password
)

// Sim is a running simulator.
type Sim = vcsim.Sim

// Start runs a simulator for the test and stops it when the test ends. It
// serves one call at a time (vcsim.Serialized), so that the race detector
// reports the code under test, not the simulator's own races, and changes
// VMs' CPUs, memory and hot-plug settings as vCenter does (vcsim.Hotplug).
// Each setup function may change the model before the server starts.
func Start(t testing.TB, setup ...func(*simulator.Model)) *Sim {
	t.Helper()
	s, err := vcsim.New(append([]func(*simulator.Model){vcsim.Serialized, vcsim.Hotplug}, setup...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// StartFaulty is Start with faults injected at the gate that serializes
// the simulator (see vcsim.Faults).
func StartFaulty(t testing.TB, faults *vcsim.Faults, setup ...func(*simulator.Model)) *Sim {
	t.Helper()
	s, err := vcsim.New(append([]func(*simulator.Model){faults.Serialized, vcsim.Hotplug}, setup...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// StartConcurrent runs a simulator that serves calls concurrently, for
// benchmarks that measure a client's concurrency (they run without the race
// detector), with vcsim.Hotplug; it stops when the benchmark ends.
func StartConcurrent(b *testing.B) *Sim {
	b.Helper()
	s, err := vcsim.New(vcsim.Hotplug)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	return s
}

// BehindLink puts a netcut link between clients and sim for the test: it
// returns sim's configuration with its URL on the link, which the test cuts
// and heals to cut sim off as a network partition would. The link closes
// when the test ends.
func BehindLink(t testing.TB, sim *Sim) (vsphere.Config, *netcut.Proxy) {
	t.Helper()
	cfg := sim.Config()
	u, err := url.Parse(sim.URL)
	if err != nil {
		t.Fatal(err)
	}
	link, err := netcut.Start(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = link.Close() })
	u.Host = link.Addr()
	cfg.URL = u.String()
	return cfg, link
}
