package execute_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/internal/replicagen"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/execute"
)

var errBoom = errors.New("boom")

// memory is an in-memory platform holding replicas by name. Operations on
// names in fail return errBoom and change nothing; it records every call and
// the highest number of calls in flight at once.
type memory struct {
	mu       sync.Mutex
	replicas map[string]bool
	zones    map[string]string // the zone each replica was created in
	fail     map[string]bool
	calls    []string
	inFlight int
	peak     int
	onCall   func(op, name string) // called before each operation, if set
}

var _ execute.ZonedActuator = (*memory)(nil)

func newMemory(existing ...string) *memory {
	m := &memory{replicas: map[string]bool{}, zones: map[string]string{}, fail: map[string]bool{}}
	for _, n := range existing {
		m.replicas[n] = true
	}
	return m
}

func (m *memory) do(op, name string, apply func()) error {
	m.mu.Lock()
	m.calls = append(m.calls, op+" "+name)
	m.inFlight++
	m.peak = max(m.peak, m.inFlight)
	hook := m.onCall
	m.mu.Unlock()
	if hook != nil {
		hook(op, name)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inFlight--
	if m.fail[name] {
		return errBoom
	}
	apply()
	return nil
}

func (m *memory) Create(_ context.Context, name string) error {
	return m.do(execute.OpCreate, name, func() { m.replicas[name] = true })
}

func (m *memory) CreateIn(_ context.Context, name, zone string) error {
	return m.do(execute.OpCreate, name, func() { m.replicas[name], m.zones[name] = true, zone })
}

func (m *memory) Delete(_ context.Context, r replicaset.Replica) error {
	return m.do(execute.OpDelete, r.Name, func() { delete(m.replicas, r.Name) })
}

func (m *memory) names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for n := range m.replicas {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func seq(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%02d", prefix, i)
	}
	return out
}

func replicas(names ...string) []replicaset.Replica {
	out := make([]replicaset.Replica, len(names))
	for i, n := range names {
		out[i] = replicaset.Replica{Name: n}
	}
	return out
}

func TestPlan_CreatesAll(t *testing.T) {
	m := newMemory()
	names := seq("n", 10)
	res := execute.Plan(context.Background(), m, replicaset.Plan{Create: 10}, names, execute.Options{})
	if res.Err != nil {
		t.Fatalf("Plan: %v", res.Err)
	}
	if diff := cmp.Diff(names, res.Created); diff != "" {
		t.Errorf("Created mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(names, m.names()); diff != "" {
		t.Errorf("platform holds (-want +got):\n%s", diff)
	}
}

// gate is a platform whose creates wait for the test: each announces its
// name on started, then returns what the test answers for that name.
type gate struct {
	started chan string
	mu      sync.Mutex
	replies map[string]chan error
}

func newGate() *gate {
	return &gate{started: make(chan string, 100), replies: map[string]chan error{}}
}

func (g *gate) reply(name string) chan error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.replies[name] == nil {
		g.replies[name] = make(chan error, 1)
	}
	return g.replies[name]
}

func (g *gate) Create(_ context.Context, name string) error {
	ch := g.reply(name)
	g.started <- name
	return <-ch
}

func (g *gate) Delete(context.Context, replicaset.Replica) error { return nil }

// answer makes name's create return err.
func (g *gate) answer(name string, err error) { g.reply(name) <- err }

// expect waits for exactly the given creates to start next, in any order.
func (g *gate) expect(t *testing.T, names ...string) {
	t.Helper()
	var got []string
	for range names {
		select {
		case n := <-g.started:
			got = append(got, n)
		case <-time.After(10 * time.Second):
			t.Fatalf("started %v, still waiting for the rest of %v", got, names)
		}
	}
	slices.Sort(got)
	if diff := cmp.Diff(names, got); diff != "" {
		t.Fatalf("started (-want +got):\n%s", diff)
	}
}

// plan runs execute.Plan for names in the background.
func (g *gate) plan(names []string) <-chan execute.Result {
	done := make(chan execute.Result, 1)
	go func() {
		done <- execute.Plan(context.Background(), g, replicaset.Plan{Create: len(names)}, names, execute.Options{})
	}()
	return done
}

// A slow create does not hold back the next ones: each success lets two
// more start while the slow one is still in flight.
func TestPlan_SlowStartDoesNotWaitForTheSlowest(t *testing.T) {
	g := newGate()
	done := g.plan(seq("n", 7))
	g.expect(t, "n00") // one before anything has succeeded
	g.answer("n00", nil)
	g.expect(t, "n01", "n02") // 1 + 2·1 = 3 started
	g.answer("n02", nil)      // n01 is still in flight
	g.expect(t, "n03", "n04") // 1 + 2·2 = 5 started
	for _, n := range []string{"n03", "n04", "n01"} {
		g.answer(n, nil)
	}
	g.expect(t, "n05", "n06")
	g.answer("n05", nil)
	g.answer("n06", nil)
	res := <-done
	if res.Err != nil || !cmp.Equal(res.Created, seq("n", 7)) || len(g.started) != 0 {
		t.Errorf("result %+v, %d more started; want all 7 created, no more started", res, len(g.started))
	}
}

// After a failure nothing more starts. (One at a time, so that which creates
// started is certain; TestPlan_SlowStartBound covers concurrent ones.)
func TestPlan_StopsStartingAfterAFailure(t *testing.T) {
	m := newMemory()
	m.fail["n02"] = true
	res := execute.Plan(context.Background(), m, replicaset.Plan{Create: 10}, seq("n", 10), execute.Options{MaxInFlight: 1})

	want := execute.Result{Created: []string{"n00", "n01"}, Skipped: seq("n", 10)[3:]}
	if diff := cmp.Diff(want, res, cmpopts.IgnoreFields(execute.Result{}, "Err")); diff != "" {
		t.Errorf("Result mismatch (-want +got):\n%s", diff)
	}
	var op *execute.OpError
	if !errors.As(res.Err, &op) || op.Op != execute.OpCreate || op.Name != "n02" || !errors.Is(res.Err, errBoom) {
		t.Errorf("Err = %v, want an *OpError for create n02 wrapping errBoom", res.Err)
	}
	if diff := cmp.Diff([]string{"create n00", "create n01", "create n02"}, m.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// TestPlan_SlowStartBound checks, on a platform with random latencies and
// failures, that a create starts only while fewer than
// InitialBatch + 2·(creates returned successfully) have started (the
// executor counts a success only after the call returns, so its own bound
// implies this one), that MaxInFlight holds, that every started create is
// reported created or failed and every other one skipped, and that a
// platform refusing the first create sees exactly one call.
func TestPlan_SlowStartBound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 60).Draw(t, "n")
		initial := rapid.IntRange(0, 5).Draw(t, "initial")
		limit := rapid.IntRange(0, 8).Draw(t, "inflight")
		fail := map[string]bool{}
		sleep := map[string]time.Duration{}
		for _, name := range seq("n", n) {
			fail[name] = rapid.IntRange(0, 9).Draw(t, "fail") == 0
			sleep[name] = time.Duration(rapid.IntRange(0, 200).Draw(t, "sleep")) * time.Microsecond
		}
		var mu sync.Mutex
		started, succeeded, inFlight := 0, 0, 0
		var violation string
		a := funcActuator(func(name string) error {
			mu.Lock()
			started++
			inFlight++
			if started > max(initial, 1)+2*succeeded && violation == "" {
				violation = fmt.Sprintf("create %d (%s) started after %d successes, initial %d", started, name, succeeded, initial)
			}
			if limit > 0 && inFlight > limit && violation == "" {
				violation = fmt.Sprintf("%d in flight, limit %d", inFlight, limit)
			}
			mu.Unlock()
			time.Sleep(sleep[name])
			mu.Lock()
			defer mu.Unlock()
			inFlight--
			if fail[name] {
				return errBoom
			}
			succeeded++
			return nil
		})
		res := execute.Plan(context.Background(), a, replicaset.Plan{Create: n}, seq("n", n), execute.Options{InitialBatch: initial, MaxInFlight: limit})
		if violation != "" {
			t.Fatal(violation)
		}
		failed := len(joined(res.Err))
		if len(res.Created)+failed != started || len(res.Skipped) != n-started {
			t.Fatalf("started %d of %d: created %d, failed %d, skipped %d", started, n, len(res.Created), failed, len(res.Skipped))
		}
		if n > 0 && initial <= 1 && fail["n00"] && started != 1 {
			t.Fatalf("the first create failed, yet %d were started", started)
		}
	})
}

// funcActuator creates by calling itself; it never deletes.
type funcActuator func(name string) error

func (f funcActuator) Create(_ context.Context, name string) error { return f(name) }

func (funcActuator) Delete(context.Context, replicaset.Replica) error { return nil }

// A platform that refuses everything costs one call, not one per replica.
func TestPlan_RefusingPlatformCostsOneCall(t *testing.T) {
	m := newMemory()
	names := seq("n", 100)
	for _, n := range names {
		m.fail[n] = true
	}
	res := execute.Plan(context.Background(), m, replicaset.Plan{Create: 100}, names, execute.Options{})
	if len(m.calls) != 1 || len(res.Skipped) != 99 || res.Err == nil {
		t.Errorf("calls %d, skipped %d, err %v; want 1 call, 99 skipped, an error", len(m.calls), len(res.Skipped), res.Err)
	}
}

func TestPlan_DeletesAllAndJoinsEveryError(t *testing.T) {
	m := newMemory("a", "b", "c", "d")
	m.fail["b"], m.fail["d"] = true, true
	plan := replicaset.Plan{Delete: replicas("d", "a", "b", "c")}
	res := execute.Plan(context.Background(), m, plan, nil, execute.Options{MaxInFlight: 1})

	if diff := cmp.Diff([]string{"a", "c"}, res.Deleted); diff != "" {
		t.Errorf("Deleted mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"delete d", "delete a", "delete b", "delete c"}, m.calls); diff != "" {
		t.Errorf("with MaxInFlight 1, deletes run in plan order (-want +got):\n%s", diff)
	}
	const msg = "delete d: boom\ndelete b: boom"
	if res.Err == nil || res.Err.Error() != msg {
		t.Errorf("Err = %v, want %q", res.Err, msg)
	}
	if diff := cmp.Diff([]string{"b", "d"}, m.names()); diff != "" {
		t.Errorf("platform holds (-want +got):\n%s", diff)
	}
}

func TestPlan_MaxInFlight(t *testing.T) {
	m := newMemory()
	var gate sync.WaitGroup
	gate.Add(1)
	started := make(chan struct{}, 64)
	m.onCall = func(string, string) { started <- struct{}{}; gate.Wait() }
	done := make(chan execute.Result)
	go func() {
		done <- execute.Plan(context.Background(), m, replicaset.Plan{Delete: replicas(seq("d", 20)...)}, nil, execute.Options{MaxInFlight: 3})
	}()
	for range 3 {
		<-started
	}
	select {
	case <-started:
		t.Error("a fourth delete started while three were in flight")
	default:
	}
	gate.Done()
	res := <-done
	if res.Err != nil || len(res.Deleted) != 20 || m.peak != 3 {
		t.Errorf("err %v, deleted %d, peak %d; want nil, 20, 3", res.Err, len(res.Deleted), m.peak)
	}
}

func TestPlan_ContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	m := newMemory()
	m.onCall = func(_, name string) {
		if name == "n02" {
			cancel()
		}
	}
	res := execute.Plan(ctx, m, replicaset.Plan{Create: 10}, seq("n", 10), execute.Options{MaxInFlight: 1}) // one at a time: n02 is the last started
	if diff := cmp.Diff(seq("n", 3), res.Created); diff != "" {
		t.Errorf("Created mismatch (-want +got):\n%s", diff)
	}
	if len(res.Skipped) != 7 || !errors.Is(res.Err, context.Canceled) {
		t.Errorf("skipped %d, err %v; want 7 skipped and context.Canceled", len(res.Skipped), res.Err)
	}

	// Already ended: nothing is attempted, deletes included.
	m = newMemory("a")
	res = execute.Plan(ctx, m, replicaset.Plan{Delete: replicas("a")}, nil, execute.Options{})
	if len(m.calls) != 0 || !cmp.Equal(res.Skipped, []string{"a"}) || !errors.Is(res.Err, context.Canceled) {
		t.Errorf("after cancel: calls %v, result %+v; want nothing attempted", m.calls, res)
	}
}

func TestPlan_NameCount(t *testing.T) {
	m := newMemory()
	res := execute.Plan(context.Background(), m, replicaset.Plan{Create: 2}, []string{"a"}, execute.Options{})
	if !errors.Is(res.Err, execute.ErrNameCount) || len(m.calls) != 0 {
		t.Errorf("err %v, calls %v; want ErrNameCount and no calls", res.Err, m.calls)
	}
}

// TestPlan_Properties drives the planner and the executor together against
// a platform that fails on demand: every name is accounted for exactly once
// (created, failed or skipped), the platform holds exactly what the result
// says, and the loop converges once failures stop.
func TestPlan_Properties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newMemory()
		spec := replicagen.Spec().Draw(t, "spec")
		policy := deletionpolicy.Random{Seed: rapid.Uint64().Draw(t, "seed")}
		serial := 0
		for pass := 0; pass < 200; pass++ {
			failing := pass < 10 && rapid.Bool().Draw(t, "failing")
			var current []replicaset.Replica
			for _, n := range m.names() {
				current = append(current, replicaset.Replica{Name: n, Zone: m.zones[n]})
			}
			p, err := replicaset.Compute(spec, current, policy, replicagen.Now())
			if err != nil {
				t.Fatalf("Compute: %v", err)
			}
			if p.IsZero() {
				if len(current) != spec.Desired {
					t.Fatalf("converged at %d, want %d", len(current), spec.Desired)
				}
				return
			}
			names := make([]string, p.Create)
			for i := range names {
				serial++
				names[i] = fmt.Sprintf("r%04d", serial)
			}
			m.fail = map[string]bool{}
			for _, n := range append(slices.Clone(names), m.names()...) {
				m.fail[n] = failing && rapid.IntRange(0, 3).Draw(t, "fail") == 0
			}
			before := m.names()
			res := execute.Plan(context.Background(), m, p, names, execute.Options{MaxInFlight: rapid.IntRange(0, 4).Draw(t, "inflight")})

			failed := 0
			for _, n := range names {
				if m.fail[n] && slices.Contains(res.Created, n) {
					t.Fatalf("%s failed but is reported created", n)
				}
			}
			for _, e := range joined(res.Err) {
				var op *execute.OpError
				if !errors.As(e, &op) {
					t.Fatalf("error %v is not an *OpError", e)
				}
				failed++
			}
			if got := len(res.Created) + len(res.Deleted) + len(res.Skipped) + failed; got != p.Create+len(p.Delete) {
				t.Fatalf("%d outcomes for %d operations: %+v", got, p.Create+len(p.Delete), res)
			}
			want := slices.Concat(before, res.Created)
			want = slices.DeleteFunc(want, func(n string) bool { return slices.Contains(res.Deleted, n) })
			slices.Sort(want)
			if diff := cmp.Diff(want, m.names(), cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("platform does not hold what the result says (-want +got):\n%s", diff)
			}
		}
		t.Fatalf("not converged after 200 passes")
	})
}

// joined unpacks an errors.Join result.
func joined(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// TestPlan_Zones: each create goes to its planned zone, a failure names
// its zone in the OpError and in FailedZones, and a plan with zones is
// refused by an actuator that cannot place by zone.
func TestPlan_Zones(t *testing.T) {
	m := newMemory()
	m.fail["r2"] = true
	p := replicaset.Plan{Create: 3, CreateZones: []string{"a", "b", "c"}}
	res := execute.Plan(context.Background(), m, p, []string{"r1", "r2", "r3"}, execute.Options{InitialBatch: 3})
	if diff := cmp.Diff([]string{"b"}, res.FailedZones); diff != "" {
		t.Errorf("FailedZones (-want +got):\n%s", diff)
	}
	var op *execute.OpError
	if !errors.As(res.Err, &op) || op.Name != "r2" || op.Zone != "b" {
		t.Errorf("Err = %v; want an *OpError for r2 in zone b", res.Err)
	}
	if diff := cmp.Diff(map[string]string{"r1": "a", "r3": "c"}, m.zones); diff != "" {
		t.Errorf("zones created in (-want +got):\n%s", diff)
	}

	short := replicaset.Plan{Create: 2, CreateZones: []string{"a"}}
	if res := execute.Plan(context.Background(), m, short, []string{"r4", "r5"}, execute.Options{}); !errors.Is(res.Err, execute.ErrNameCount) {
		t.Errorf("2 creates in 1 zone: %v; want ErrNameCount", res.Err)
	}

	plain := funcActuator(func(string) error { t.Fatal("create called"); return nil })
	if res := execute.Plan(context.Background(), plain, p, []string{"r1", "r2", "r3"}, execute.Options{}); !errors.Is(res.Err, execute.ErrNoZones) {
		t.Errorf("plan with zones on a plain actuator: %v; want ErrNoZones", res.Err)
	}
}
