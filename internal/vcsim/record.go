package vcsim

import (
	"fmt"
	"slices"
	"sync"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

// Recording keeps the requests of one SOAP method's calls to a simulator
// serialized by Faults (Faults.Record), as the client sent them. A test
// asserts on it what the protocol carries where the simulator does not act
// on it: govmomi v0.56.0's simulator ignores a clone's disk move type and
// snapshot ("TODO: consider VirtualMachineCloneSpec.DiskMoveType" in its
// CloneVM_Task), so only the request shows whether a clone was asked to be
// linked.
type Recording struct {
	f      *Faults
	method string

	mu     sync.Mutex
	bodies [][]byte
}

// Record keeps the body of every call of method that reaches the gate
// from now on, whatever becomes of it (served, failed, ignored, held or
// dropped), in the order the calls arrive, until the returned recording
// is stopped (Recording.Stop). A later Record of the same method replaces this one for
// the calls that come after it. It is safe to call at any time.
func (f *Faults) Record(method string) *Recording {
	r := &Recording{f: f, method: method}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.records == nil {
		f.records = map[string]*Recording{}
	}
	f.records[method] = r
	return r
}

// Stop ends the recording for later calls; what it kept stays readable.
func (r *Recording) Stop() {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	if r.f.records[r.method] == r {
		delete(r.f.records, r.method)
	}
}

// record keeps body if a recording is on method.
func (f *Faults) record(method string, body []byte) {
	f.mu.Lock()
	r := f.records[method]
	f.mu.Unlock()
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bodies = append(r.bodies, slices.Clone(body))
}

// Bodies returns the SOAP envelopes recorded so far, in the order the
// calls reached the gate.
func (r *Recording) Bodies() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.bodies)
}

// Requests decodes the calls recorded so far into their vim25 request
// types, as the simulator decodes them: a *types.CloneVM_Task for
// CloneVM_Task, a *types.CreateSnapshot_Task for CreateSnapshot_Task.
func (r *Recording) Requests() ([]any, error) {
	var out []any
	for i, b := range r.Bodies() {
		m, err := simulator.UnmarshalBody(types.TypeFunc(), b)
		if err != nil {
			return nil, fmt.Errorf("vcsim: decode recorded call %d: %w", i, err)
		}
		out = append(out, m.Body)
	}
	return out, nil
}
