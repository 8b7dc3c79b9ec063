package vcsimtest

import (
	"testing"

	"github.com/vmware/govmomi/simulator"

	"github.com/replicakit/replicakit/internal/vcsim"
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
// reports the code under test, not the simulator's own races. Each setup
// function may change the model before the server starts.
func Start(t testing.TB, setup ...func(*simulator.Model)) *Sim {
	t.Helper()
	s, err := vcsim.New(append([]func(*simulator.Model){vcsim.Serialized}, setup...)...)
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
	s, err := vcsim.New(append([]func(*simulator.Model){faults.Serialized}, setup...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// StartConcurrent runs a simulator that serves calls concurrently, for
// benchmarks that measure a client's concurrency (they run without the race
// detector); it stops when the benchmark ends.
func StartConcurrent(b *testing.B) *Sim {
	b.Helper()
	s, err := vcsim.New()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	return s
}
