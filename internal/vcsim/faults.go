package vcsim

import (
	"bytes"
	"html"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

// Faults makes a serialized simulator answer some calls with an
// InvalidState fault instead of serving them, as a vCenter refuses an
// operation on a VM in the wrong state. A call fails with the probability
// last given to SetProbability (none until then) when its SOAP method is
// one of Methods; a failed call changes nothing in the inventory and starts
// no task.
//
// It stands in for the simulator's own FaultInjector, which in govmomi
// v0.56.0 updates its rules' counters and random source while it holds only
// a read lock, so the race detector reports the simulator rather than the
// code under test once calls or its statistics are read concurrently. Here
// the decision is made under the gate's lock and the count is atomic.
//
// Refuse makes every call of one method that names one managed object
// fail, whatever the probability: a zone whose clones all fail. Deny
// makes them fail with NoPermission, as for an account that lacks a
// privilege on the object. Ignore
// answers them as served without serving them: a guest that never acts on
// a shutdown request. Hold keeps the calls of one method waiting until the
// test lets them go. Record keeps the requests of one method's calls, for
// a test to read what the client asked.
//
// It also counts the calls that reach the gate, by method, and the tasks
// they start (Calls, Counts); a Faults without Methods injects nothing and
// only counts. With Latency set, the gate also plays it (see Latency).
//
// Set the fields before the simulator starts and do not change them after.
type Faults struct {
	// Methods lists the SOAP methods that may fail, such as
	// "CloneVM_Task".
	Methods []string
	// Seed seeds the random source, for repeatable runs.
	Seed uint64
	// FailFirst makes the first call of one of Methods made while the
	// probability is above zero fail whatever the draw, so that a short
	// run meets at least one fault at every seed.
	FailFirst bool
	// Latency, if not nil, is the latency the gate plays; a call it delays
	// is counted when it arrives, and a fault injected in it is answered
	// after its round trip.
	Latency *Latency

	// callCount counts the calls reaching the gate, failed or served.
	callCount

	mu       sync.Mutex
	p        float64
	rng      *rand.Rand
	refused  map[refusal]bool
	denied   map[refusal][]string
	ignored  map[refusal]bool
	holds    map[string]*Held
	records  map[string]*Recording
	injected atomic.Int64
}

// refusal is a method refused (Refuse) or ignored (Ignore) for calls
// naming one managed object.
type refusal struct {
	method string
	ref    types.ManagedObjectReference
}

// Refuse makes every call of method whose request names ref (as an
// argument, such as a clone's target resource pool) fail, until the
// returned function is called; it is safe to call at any time.
func (f *Faults) Refuse(method string, ref types.ManagedObjectReference) (lift func()) {
	return addRule(f, &f.refused, refusal{method, ref}, true)
}

// Deny makes every call of method whose request names ref fail with
// NoPermission, as vCenter answers an account that lacks privileges on
// ref, until the returned function is called: the fault's
// missingPrivileges name ref and privileges (vSphere 8's form), its
// object and privilegeId the first of them (the older form). It is safe
// to call at any time.
func (f *Faults) Deny(method string, ref types.ManagedObjectReference, privileges ...string) (lift func()) {
	return addRule(f, &f.denied, refusal{method, ref}, privileges)
}

// Ignore makes every call of method whose request names ref succeed
// without being served, until the returned function is called: the
// client gets the empty answer of a method that returns nothing, and the
// simulator never sees the call. It plays a request vCenter accepted whose
// effect never comes: ShutdownGuest to a guest that does not shut down (a
// hung guest, or one that ignores the ACPI request), which a real vCenter
// also answers at once, leaving the VM powered on. Use it only for methods
// that return nothing. It is safe to call at any time.
func (f *Faults) Ignore(method string, ref types.ManagedObjectReference) (lift func()) {
	return addRule(f, &f.ignored, refusal{method, ref}, true)
}

// addRule sets rule r to v in *rules (made on first use) under f's lock,
// and returns the function that removes it.
func addRule[V any](f *Faults, rules *map[refusal]V, r refusal, v V) (lift func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if *rules == nil {
		*rules = map[refusal]V{}
	}
	(*rules)[r] = v
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(*rules, r)
	}
}

// SetProbability sets the chance that a call of one of Methods fails, from
// 0 (none, the start) to 1 (every one); it is safe to call at any time.
func (f *Faults) SetProbability(p float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.p = p
}

// Serialized is a setup function for New that serializes the simulator as
// the package's Serialized does and injects f's faults at its gate.
func (f *Faults) Serialized(m *simulator.Model) {
	serialize(m, f, f.Latency)
}

// Injected returns how many calls have failed so far; it is safe to call at
// any time.
func (f *Faults) Injected() int64 {
	return f.injected.Load()
}

// fail decides whether a call of method with the request body fails and,
// if so, answers it with the fault.
func (f *Faults) fail(w http.ResponseWriter, method string, body []byte) bool {
	f.mu.Lock()
	for r, privileges := range f.denied {
		if r.names(method, body) {
			f.mu.Unlock()
			f.injected.Add(1)
			w.Header().Set("Content-Type", "text/xml; charset=utf-8")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, noPermissionFault(r.ref, privileges))
			return true
		}
	}
	hit := false
	for r := range f.refused {
		hit = hit || r.names(method, body)
	}
	if !hit && slices.Contains(f.Methods, method) {
		if f.rng == nil {
			f.rng = rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15))
		}
		hit = f.rng.Float64() < f.p || f.FailFirst && f.p > 0 && f.injected.Load() == 0
	}
	f.mu.Unlock()
	if !hit {
		return false
	}
	f.injected.Add(1)
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.WriteHeader(http.StatusInternalServerError)
	_, _ = io.WriteString(w, invalidStateFault)
	return true
}

// ignore decides whether a call of method with the request body is
// ignored (Ignore) and, if so, answers it as served.
func (f *Faults) ignore(w http.ResponseWriter, method string, body []byte) bool {
	f.mu.Lock()
	hit := false
	for r := range f.ignored {
		hit = hit || r.names(method, body)
	}
	f.mu.Unlock()
	if !hit {
		return false
	}
	writeAnswer(w, `<`+method+`Response xmlns="urn:vim25"></`+method+`Response>`)
	return true
}

// names reports whether a call of method with the request body is one r
// applies to: its method, naming r's object as an argument.
func (r refusal) names(method string, body []byte) bool {
	return r.method == method && bytes.Contains(body, []byte(`type="`+r.ref.Type+`">`+r.ref.Value+`<`))
}

// noPermissionFault is the answer to a denied call: a SOAP fault carrying
// vim25's NoPermission for ref and privileges, with vCenter's message.
// Its fields are those of vSphere's API reference for vim.fault.NoPermission,
// as govmomi's vim25/types generates them from it: missingPrivileges (an
// entity and its privilege IDs, since vSphere 7.0.3.2), and object and
// privilegeId, deprecated as of vSphere 8.0. The gate sends both forms.
func noPermissionFault(ref types.ManagedObjectReference, privileges []string) string {
	obj := `type="` + html.EscapeString(ref.Type) + `">` + html.EscapeString(ref.Value)
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenc="http://schemas.xmlsoap.org/soap/encoding/" xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<soapenv:Body><soapenv:Fault><faultcode>ServerFaultCode</faultcode><faultstring>Permission to perform this operation was denied.</faultstring><detail><NoPermissionFault xmlns="urn:vim25" xsi:type="NoPermission">`)
	b.WriteString(`<object ` + obj + `</object>`)
	if len(privileges) > 0 {
		b.WriteString(`<privilegeId>` + html.EscapeString(privileges[0]) + `</privilegeId>`)
	}
	b.WriteString(`<missingPrivileges><entity ` + obj + `</entity>`)
	for _, id := range privileges {
		b.WriteString(`<privilegeIds>` + html.EscapeString(id) + `</privilegeIds>`)
	}
	b.WriteString(`</missingPrivileges></NoPermissionFault></detail></soapenv:Fault></soapenv:Body></soapenv:Envelope>
`)
	return b.String()
}

// invalidStateFault is the answer to a failed call: a SOAP fault carrying
// vim25's InvalidState, as vCenter sends it.
const invalidStateFault = `<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenc="http://schemas.xmlsoap.org/soap/encoding/" xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<soapenv:Body><soapenv:Fault><faultcode>ServerFaultCode</faultcode><faultstring>injected by vcsim.Faults</faultstring><detail><InvalidStateFault xmlns="urn:vim25" xsi:type="InvalidState"></InvalidStateFault></detail></soapenv:Fault></soapenv:Body></soapenv:Envelope>
`
