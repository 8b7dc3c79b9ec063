package vcsim

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"sync"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/types"
)

// Serialized is a setup function for New that makes the simulator serve one
// SOAP call at a time and run every task a call starts to its end before it
// serves the next call.
//
// govmomi v0.56.0's simulator writes some object properties from task
// goroutines without the lock its PropertyCollector takes to read them (a
// clone names the new VM while a concurrent RetrievePropertiesEx reads it,
// for one), so under the race detector a test that reads VMs while others
// are created fails on a race inside the simulator, whatever the code under
// test does. Serialized takes the simulator's own concurrency out of the
// picture; clients still send requests concurrently, and their bounds (the
// provider's MaxTasks, say) still hold, since a request waits at the gate
// in flight. Tests use it through vcsimtest, and the example operator's
// embedded simulator uses it; the end-to-end benchmarks serve calls
// concurrently.
func Serialized(m *simulator.Model) {
	serialize(m, nil, nil)
}

// serialize installs the gate, which consults faults (if not nil) before it
// passes each call on and plays latency (if not nil).
func serialize(m *simulator.Model, faults *Faults, latency *Latency) {
	svc := m.Service
	if svc.ServeMux == nil {
		svc.ServeMux = http.NewServeMux()
	}
	g := &gate{sdk: svc.ServeSDK, tasks: m.Map(), faults: faults, latency: latency, stop: make(chan struct{})}
	g.life, g.endLife = context.WithCancel(context.Background())
	if latency != nil {
		g.changed = make(chan struct{})
	}
	// The simulator registers its SOAP handler for every method on these
	// paths when the server starts; a POST pattern is more specific, so
	// every SOAP call comes here first.
	for _, p := range []string{vim25.Path, vim25.Path + "/vimService"} {
		svc.ServeMux.Handle("POST "+p, g)
	}
}

// gate serves SOAP calls one at a time.
type gate struct {
	mu      sync.Mutex
	sdk     http.HandlerFunc
	tasks   *simulator.Registry
	faults  *Faults
	latency *Latency

	// The tasks the gate answered deferred calls with (deferred.go), which
	// it completes itself and never waits for; under mu.
	placeholders map[types.ManagedObjectReference]bool
	stop         chan struct{} // closed by close: deferred calls are dropped
	life         context.Context
	endLife      context.CancelFunc // called by close: held task ends let go
	stopOnce     sync.Once
	deferred     sync.WaitGroup // deferred calls waiting or being served

	// changed, with a latency, is closed and replaced (under mu) each time
	// a call other than a long poll has been served, waking the long polls
	// waiting for updates (longpoll.go) at once, as vCenter answers them;
	// without one it is nil and they look every longPollInterval.
	changed chan struct{}

	// extensions are the certificates (DER) extensions log in with, by
	// key (SetExtensionCertificate); under mu.
	extensions map[string][]byte
}

// taskReturn finds the task a *_Task method returns.
var taskReturn = regexp.MustCompile(`<returnval type="Task">([^<]+)</returnval>`)

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		http.Error(w, "vcsim: read the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	method := ""
	if m := soapMethod.FindSubmatch(body); m != nil {
		method = string(m[1])
	}
	if g.faults != nil {
		g.faults.count(method, body)
		g.faults.record(method, body)
		if !g.faults.wait(r.Context(), method) {
			panic(http.ErrAbortHandler) // no answer: the connection closes
		}
	}
	if g.latency != nil && !g.roundTrip(r.Context()) {
		panic(http.ErrAbortHandler)
	}
	if method == "WaitForUpdatesEx" {
		g.waitForUpdates(w, r, body)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.faults != nil {
		g.faults.took(method)
		defer g.faults.took("")
		if g.faults.fail(w, method, body) || g.faults.ignore(w, method, body) || g.faults.answerPrivileges(w, method, body) {
			return
		}
	}
	if g.refuses(w, method, body) || g.refusesCertificate(w, r, method, body) {
		return
	}
	if g.latency != nil && defers(method) {
		if d := g.latency.TaskTime(method, body); d > 0 && g.deferCall(w, r, method, body, d) {
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	n := g.serve(w, r, method)
	g.wake()
	if g.faults != nil {
		g.faults.countTasks(method, n)
	}
}

// wake wakes the long polls waiting for updates, if the gate plays a
// latency. The gate's lock is held.
func (g *gate) wake() {
	if g.changed != nil {
		close(g.changed)
		g.changed = make(chan struct{})
	}
}

// keepsTask lists the methods that start a task without returning it: the
// simulator plays a guest's shutdown or standby in a task of its own
// (powering the VM off or suspending it a moment after the answer), which
// the gate waits for as for a returned one, so that the next call finds
// the VM off (or suspended).
var keepsTask = map[string]bool{"ShutdownGuest": true, "StandbyGuest": true}

// serve passes one call of method to the simulator and waits for the
// tasks it started, then for any task those started in turn (a destroy
// deletes the VM's files in a task of its own, which would otherwise run
// on into the next call), but not for the gate's own placeholders. It
// returns how many tasks the call returned. The gate's lock is held.
func (g *gate) serve(w http.ResponseWriter, r *http.Request, method string) int {
	tee := &teeWriter{ResponseWriter: w}
	g.sdk(tee, r)
	returned := taskReturn.FindAllSubmatch(tee.body.Bytes(), -1)
	for _, m := range returned {
		ref := types.ManagedObjectReference{Type: "Task", Value: string(m[1])}
		if t, ok := g.tasks.Get(ref).(*simulator.Task); ok {
			t.Wait() // reads the task's state under the simulator's lock
		}
	}
	if len(returned) == 0 && !keepsTask[method] {
		return 0
	}
	for _, o := range g.tasks.AllReference("Task") {
		if t, ok := o.(*simulator.Task); ok && !g.placeholders[t.Self] {
			t.Wait()
		}
	}
	return len(returned)
}

// teeWriter keeps a copy of the response body.
type teeWriter struct {
	http.ResponseWriter
	body bytes.Buffer
}

func (t *teeWriter) Write(b []byte) (int, error) {
	t.body.Write(b)
	return t.ResponseWriter.Write(b)
}
