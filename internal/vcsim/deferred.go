package vcsim

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
	vimxml "github.com/vmware/govmomi/vim25/xml"
)

// How the gate plays a Latency: a call's round trip, and work deferred
// past the call's answer (see Latency).

// thisRef finds the managed object a SOAP request is addressed to.
var thisRef = regexp.MustCompile(`<_this type="([^"]+)">([^<]+)</_this>`)

// roundTrip waits the latency's call time without holding the gate, and
// reports false if the caller went away meanwhile.
func (g *gate) roundTrip(ctx context.Context) bool {
	d := g.latency.CallTime()
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// deferCall answers a call of method with the request body at once and
// serves it d later: a *_Task method is answered with a placeholder task,
// which ends with the served call's result or fault; ShutdownGuest is
// answered as served. It reports false, answering nothing, when it does
// not defer the call, which the caller then serves at once: a request
// naming no object, a ShutdownGuest of a VM that is not powered on (which
// vCenter refuses at once), or a gate that is closing. The gate's lock is
// held.
func (g *gate) deferCall(w http.ResponseWriter, r *http.Request, method string, body []byte, d time.Duration) bool {
	m := thisRef.FindSubmatch(body)
	if m == nil {
		return false
	}
	select {
	case <-g.stop:
		return false
	default:
	}
	this := types.ManagedObjectReference{Type: string(m[1]), Value: string(m[2])}
	var placeholder *simulator.Task
	if method == "ShutdownGuest" {
		vm, ok := g.tasks.Get(this).(*simulator.VirtualMachine)
		if !ok || vm.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOn {
			return false
		}
		writeAnswer(w, `<ShutdownGuestResponse xmlns="urn:vim25"></ShutdownGuestResponse>`)
	} else {
		placeholder = g.placeholder(this, method)
		writeAnswer(w, `<`+method+`Response xmlns="urn:vim25"><returnval type="Task">`+placeholder.Self.Value+`</returnval></`+method+`Response>`)
		if g.faults != nil {
			g.faults.countTasks(method, 1)
		}
	}
	// The caller's context ends with its answer; the clone keeps its
	// session cookie for the call served later.
	later := r.Clone(context.Background())
	g.deferred.Add(1)
	go func() {
		defer g.deferred.Done()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
		if g.faults != nil && placeholder != nil {
			// A test's hold on the task's end (Faults.HoldTasks); a
			// dropped hold ends it all the same.
			_ = g.faults.wait(g.life, taskEnd+method)
		}
		g.complete(later, method, body, placeholder)
	}()
	return true
}

// placeholder registers a running task for a call of method addressed to
// this, which the gate completes itself. The gate's lock is held.
func (g *gate) placeholder(this types.ManagedObjectReference, method string) *simulator.Task {
	// CreateTask names a "FooTask" Foo_Task, as vCenter names the task of
	// Foo_Task.
	t := simulator.CreateTask(this, strings.TrimSuffix(method, "_Task")+"Task", nil)
	g.tasks.Put(t)
	g.tasks.AtomicUpdate(g.context(), t, []types.PropertyChange{
		// vCenter lets a client cancel a running task that does long work
		// (TaskInfo.cancelable): a clone, a reconfigure, a power
		// operation's wait for its host.
		{Name: "info.cancelable", Val: true},
		{Name: "info.key", Val: t.Self.Value},
		{Name: "info.task", Val: t.Self},
		{Name: "info.startTime", Val: time.Now()},
		{Name: "info.state", Val: types.TaskInfoStateRunning},
	})
	if g.placeholders == nil {
		g.placeholders = map[types.ManagedObjectReference]bool{}
	}
	g.placeholders[t.Self] = true
	return t
}

// complete serves a deferred call, one at a time as every call, and ends
// its placeholder (if any) with the call's result or fault. A task the
// client cancelled meanwhile (CancelTask, which the simulator ends with
// RequestCanceled) is not served: vCenter rolls a cancelled task's work
// back, a clone leaving no VM.
func (g *gate) complete(r *http.Request, method string, body []byte, placeholder *simulator.Task) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.faults != nil && placeholder != nil {
		defer g.faults.taskEnded(method)
	}
	if placeholder != nil && g.cancelled(placeholder) {
		g.wake()
		return
	}
	if g.faults != nil {
		g.faults.took(method)
		defer g.faults.took("")
	}
	rec := httptest.NewRecorder()
	r.Body = io.NopCloser(bytes.NewReader(body))
	g.serve(rec, r, method)
	if placeholder == nil {
		g.wake()
		return
	}
	result, fault := g.outcome(rec.Body.Bytes())
	state := types.TaskInfoStateSuccess
	var failed any
	if fault != nil {
		state, failed = types.TaskInfoStateError, *fault
	}
	ctx := g.context()
	g.tasks.WithLock(ctx, placeholder, func() {
		if s := placeholder.Info.State; s == types.TaskInfoStateSuccess || s == types.TaskInfoStateError {
			return // cancelled
		}
		ctx.Update(placeholder, []types.PropertyChange{
			{Name: "info.completeTime", Val: time.Now()},
			{Name: "info.state", Val: state},
			{Name: "info.result", Val: result},
			{Name: "info.error", Val: failed},
		})
	})
	g.wake()
}

// cancelled reports whether the client cancelled t. The gate's lock is
// held.
func (g *gate) cancelled(t *simulator.Task) bool {
	done := false
	g.tasks.WithLock(g.context(), t, func() {
		done = t.Info.State == types.TaskInfoStateSuccess || t.Info.State == types.TaskInfoStateError
	})
	return done
}

// outcome reads the result or fault of a served *_Task call from its
// answer: its task's, once serve has waited for it, or the call's own
// SOAP fault. The gate's lock is held.
func (g *gate) outcome(answer []byte) (types.AnyType, *types.LocalizedMethodFault) {
	if m := taskReturn.FindSubmatch(answer); m != nil {
		t, ok := g.tasks.Get(types.ManagedObjectReference{Type: "Task", Value: string(m[1])}).(*simulator.Task)
		if !ok {
			return nil, systemError("vcsim: the deferred call's task " + string(m[1]) + " is gone")
		}
		var result types.AnyType
		var fault *types.LocalizedMethodFault
		g.tasks.WithLock(g.context(), t, func() { result, fault = t.Info.Result, t.Info.Error })
		return result, fault
	}
	return nil, faultOf(answer)
}

// faultOf decodes the SOAP fault a call was answered with.
func faultOf(answer []byte) *types.LocalizedMethodFault {
	var body struct {
		Fault *soap.Fault `xml:"http://schemas.xmlsoap.org/soap/envelope/ Fault,omitempty"`
	}
	dec := vimxml.NewDecoder(bytes.NewReader(answer))
	dec.TypeFunc = types.TypeFunc()
	if err := dec.Decode(&soap.Envelope{Body: &body}); err != nil || body.Fault == nil {
		return systemError("vcsim: the deferred call's answer is neither a task nor a fault")
	}
	f, ok := methodFault(body.Fault.VimFault())
	if !ok {
		return systemError(body.Fault.String)
	}
	return &types.LocalizedMethodFault{Fault: f, LocalizedMessage: body.Fault.String}
}

// methodFault returns a decoded fault as a method fault: the decoder makes
// a value (types.ManagedObjectNotFound), whose pointer is the fault.
func methodFault(v any) (types.BaseMethodFault, bool) {
	if f, ok := v.(types.BaseMethodFault); ok {
		return f, true
	}
	if v == nil {
		return nil, false
	}
	p := reflect.New(reflect.TypeOf(v))
	p.Elem().Set(reflect.ValueOf(v))
	f, ok := p.Interface().(types.BaseMethodFault)
	return f, ok
}

func systemError(reason string) *types.LocalizedMethodFault {
	return &types.LocalizedMethodFault{Fault: &types.SystemError{Reason: reason}, LocalizedMessage: reason}
}

// context returns a simulator context for the gate's own updates, as the
// simulator's registry makes for its own.
func (g *gate) context() *simulator.Context {
	return &simulator.Context{Context: context.Background(), Map: g.tasks}
}

// close drops the deferred calls still waiting and waits for those being
// served; the gate defers no call after it.
func (g *gate) close() {
	g.stopOnce.Do(func() {
		g.mu.Lock()
		close(g.stop)
		g.endLife()
		g.mu.Unlock()
	})
	g.deferred.Wait()
}

// writeAnswer writes a SOAP answer whose body holds inner.
func writeAnswer(w http.ResponseWriter, inner string) {
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	_, _ = io.WriteString(w, xml.Header+`<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/">`+
		`<soapenv:Body>`+inner+`</soapenv:Body></soapenv:Envelope>`)
}
