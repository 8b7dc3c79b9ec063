package vmprovider_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vmprovidertest"
)

// The tests of lifecycle hooks run in a synctest bubble: synctest.Wait
// returns once every callback the Set started is blocked on its latch or
// has returned and its result is recorded, so each pass sees what the
// test made happen before it.

// latch holds every call of a lifecycle callback (its call method) until
// the test answers it (give), its ctx ends, or the test ends (end).
type latch struct {
	mu      sync.Mutex
	calls   map[string]int        // by VM name
	answers map[string]chan error // by VM name
	ended   map[string]error      // by VM name: ctx.Err() of a call its ctx ended
	over    chan struct{}
}

func newLatch() *latch {
	return &latch{calls: map[string]int{}, answers: map[string]chan error{}, ended: map[string]error{}, over: make(chan struct{})}
}

// answer is the channel the calls for name take their result from. l.mu
// is held.
func (l *latch) answer(name string) chan error {
	if l.answers[name] == nil {
		l.answers[name] = make(chan error, 1)
	}
	return l.answers[name]
}

func (l *latch) call(ctx context.Context, vm vmprovider.VM) error {
	l.mu.Lock()
	l.calls[vm.Name]++
	delete(l.ended, vm.Name)
	ch := l.answer(vm.Name)
	l.mu.Unlock()
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		l.mu.Lock()
		l.ended[vm.Name] = ctx.Err()
		l.mu.Unlock()
		return ctx.Err()
	case <-l.over:
		return errors.New("test over")
	}
}

// give makes the call for name that is blocked, or the next one, return
// err.
func (l *latch) give(name string, err error) {
	l.mu.Lock()
	ch := l.answer(name)
	l.mu.Unlock()
	ch <- err
}

// counts returns how many times the callback was called, by VM name.
func (l *latch) counts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for k, v := range l.calls {
		out[k] = v
	}
	return out
}

// ctxEnded returns what ctx.Err() said when the last call for name
// returned because its ctx ended; nil when it did not.
func (l *latch) ctxEnded(name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ended[name]
}

// end releases every call still blocked, as the test ends: a bubble must
// end with no goroutine blocked.
func (l *latch) end() { close(l.over) }

// hookSet returns a Set of owner "uid-hooks" with lc, on a Fake that
// keeps the clock's time, named web-0, web-1, and so on, and scaled down
// from the highest ordinal.
func hookSet(c *clock, lc *vmprovider.Lifecycle) (*vmprovider.Set, *vmprovidertest.Fake) {
	f := &vmprovidertest.Fake{Now: c.now}
	return &vmprovider.Set{
		Provider:  f,
		Template:  vmprovider.Spec{Owner: vmprovider.Owner{UID: "uid-hooks"}, PowerOn: true},
		Policy:    deletionpolicy.HighestOrdinal{},
		Names:     naming.Indexed{Base: "web"},
		Lifecycle: lc,
	}, f
}

func holds(p replicaset.Plan, by replicaset.HoldKind) int {
	for _, h := range p.Holds {
		if h.By == by {
			return h.Waiting
		}
	}
	return 0
}

// TestSetHooks_PreDeleteHoldsUntilReleased: a scale-down 3 → 1 prepares
// web-2 and web-1 and calls PreDelete once for each; while it holds them
// no pass deletes them, and Status counts them preparing; each is deleted
// by the first pass after its PreDelete returned nil, and PreDelete is
// never called again.
func TestSetHooks_PreDeleteHoldsUntilReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &clock{now}
		l := newLatch()
		defer l.end()
		s, f := hookSet(c, &vmprovider.Lifecycle{PreDelete: l.call, Lifecycle: replicaset.Lifecycle{Timeout: 10 * time.Minute}})
		scale(t, s, c, 3)
		p := scale(t, s, c, 1)
		if diff := cmp.Diff([]string{"web-2", "web-1"}, replicaNames(p.Prepare)); diff != "" || len(p.Delete) > 0 {
			t.Fatalf("3 → 1: %v; prepared (-want +got):\n%s", p, diff)
		}
		synctest.Wait()
		want := map[string]int{"web-1": 1, "web-2": 1}
		if diff := cmp.Diff(want, l.counts()); diff != "" {
			t.Fatalf("PreDelete calls (-want +got):\n%s", diff)
		}
		for range 3 {
			c.t = c.t.Add(2 * time.Minute)
			p := scale(t, s, c, 1)
			if len(p.Delete)+len(p.Prepare) > 0 || holds(p, replicaset.HoldPreDelete) != 2 {
				t.Fatalf("at +%v, PreDelete holding both: %v; want nothing deleted, 2 held", c.t.Sub(now), p)
			}
		}
		if got := names(t, f, "uid-hooks"); len(got) != 3 {
			t.Fatalf("VMs while PreDelete holds: %v", got)
		}
		st, err := s.Status(context.Background(), c.t)
		if err != nil || st.Replicas != 3 || st.Preparing != 2 || st.Ready != 3 {
			t.Fatalf("Status while PreDelete holds: %+v, %v; want 3 replicas, 2 preparing, 3 ready", st, err)
		}

		l.give("web-2", nil)
		synctest.Wait()
		p = scale(t, s, c, 1)
		if diff := cmp.Diff([]string{"web-2"}, replicaNames(p.Delete)); diff != "" {
			t.Fatalf("the pass after web-2 was released: %v; deleted (-want +got):\n%s", p, diff)
		}
		if diff := cmp.Diff([]string{"web-0", "web-1"}, names(t, f, "uid-hooks")); diff != "" {
			t.Fatalf("VMs (-want +got):\n%s", diff)
		}
		l.give("web-1", nil)
		synctest.Wait()
		scale(t, s, c, 1)
		for range 2 {
			scale(t, s, c, 1)
		}
		synctest.Wait()
		if diff := cmp.Diff([]string{"web-0"}, names(t, f, "uid-hooks")); diff != "" {
			t.Errorf("VMs once both were released (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, l.counts()); diff != "" {
			t.Errorf("PreDelete calls in all (-want +got):\n%s", diff)
		}
		if st, err := s.Status(context.Background(), c.t); err != nil || st.Preparing != 0 {
			t.Errorf("Status once they are gone: %+v, %v; want none preparing", st, err)
		}
	})
}

// TestSetHooks_Timeout: PreDelete never returns. At its timeout, counted
// from the pass that chose the VM, without Abandon it deletes the VM and
// cancels PreDelete's ctx first; with Abandon it keeps it, held, its ctx
// alive, until PreDelete releases it after all.
func TestSetHooks_Timeout(t *testing.T) {
	for _, abandon := range []bool{false, true} {
		t.Run(map[bool]string{false: "Continue", true: "Abandon"}[abandon], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := &clock{now}
				l := newLatch()
				defer l.end()
				const timeout = 5 * time.Minute
				s, f := hookSet(c, &vmprovider.Lifecycle{PreDelete: l.call, Lifecycle: replicaset.Lifecycle{Timeout: timeout, Abandon: abandon}})
				scale(t, s, c, 2)
				chosen := c.t.Add(time.Minute)
				c.t = chosen
				if p := scale(t, s, c, 1); len(p.Prepare) != 1 {
					t.Fatalf("2 → 1: %v, want web-1 prepared", p)
				}
				synctest.Wait()
				c.t = chosen.Add(timeout - time.Second)
				if p := scale(t, s, c, 1); len(p.Delete) > 0 || !p.Lifecycle.NextCheck.Equal(chosen.Add(timeout)) {
					t.Fatalf("a second before the timeout: %v, next check %v; want nothing deleted, the next check at the timeout",
						p, p.Lifecycle.NextCheck)
				}
				c.t = chosen.Add(timeout)
				p := scale(t, s, c, 1)
				synctest.Wait()
				if !abandon {
					if diff := cmp.Diff([]string{"web-1"}, replicaNames(p.Delete)); diff != "" || len(p.Lifecycle.TimedOut) != 1 {
						t.Fatalf("at the timeout: %v; deleted (-want +got):\n%s", p, diff)
					}
					if err := l.ctxEnded("web-1"); !errors.Is(err, context.Canceled) {
						t.Errorf("PreDelete's ctx at the timeout: %v, want it cancelled", err)
					}
					if diff := cmp.Diff([]string{"web-0"}, names(t, f, "uid-hooks")); diff != "" {
						t.Errorf("VMs (-want +got):\n%s", diff)
					}
					return
				}
				for range 3 {
					if len(p.Delete) > 0 || holds(p, replicaset.HoldHookAbandoned) != 1 {
						t.Fatalf("at +%v, past the timeout: %v; want web-1 kept, held as abandoned", c.t.Sub(chosen), p)
					}
					c.t = c.t.Add(time.Hour)
					p = scale(t, s, c, 1)
				}
				if err := l.ctxEnded("web-1"); err != nil {
					t.Fatalf("PreDelete's ctx past the timeout: %v, want it alive", err)
				}
				if got := names(t, f, "uid-hooks"); len(got) != 2 {
					t.Fatalf("VMs past the timeout: %v, want both", got)
				}
				l.give("web-1", nil)
				synctest.Wait()
				if p := scale(t, s, c, 1); !slices.Equal(replicaNames(p.Delete), []string{"web-1"}) {
					t.Errorf("once PreDelete released it: %v, want web-1 deleted", p)
				}
			})
		})
	}
}

// TestSetHooks_ScaleUpTakesBack: a scale-up while web-2 prepares takes it
// back instead of creating a VM, and PreDelete's ctx is cancelled; what
// the cancelled call returns is not reported. Chosen again, web-2
// prepares anew, and PreDelete is called again.
func TestSetHooks_ScaleUpTakesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &clock{now}
		l := newLatch()
		defer l.end()
		s, f := hookSet(c, &vmprovider.Lifecycle{PreDelete: l.call})
		scale(t, s, c, 3)
		scale(t, s, c, 2)
		synctest.Wait()
		p := scale(t, s, c, 3)
		if diff := cmp.Diff([]string{"web-2"}, replicaNames(p.Cancel)); diff != "" || p.Create != 0 {
			t.Fatalf("2 → 3 while web-2 prepares: %v; taken back (-want +got):\n%s", p, diff)
		}
		synctest.Wait()
		if err := l.ctxEnded("web-2"); !errors.Is(err, context.Canceled) {
			t.Fatalf("PreDelete's ctx once web-2 was taken back: %v, want it cancelled", err)
		}
		p = scale(t, s, c, 3) // fails the test if the cancelled call's error is reported
		if !p.IsZero() || len(p.Holds) > 0 {
			t.Fatalf("the pass after: %v, want nothing to do", p)
		}
		if st, err := s.Status(context.Background(), c.t); err != nil || st.Replicas != 3 || st.Preparing != 0 {
			t.Fatalf("Status after the take-back: %+v, %v; want 3 replicas, none preparing", st, err)
		}
		if got := names(t, f, "uid-hooks"); len(got) != 3 {
			t.Fatalf("VMs: %v", got)
		}
		if p := scale(t, s, c, 2); !slices.Equal(replicaNames(p.Prepare), []string{"web-2"}) {
			t.Fatalf("3 → 2 again: %v, want web-2 prepared anew", p)
		}
		synctest.Wait()
		if n := l.counts()["web-2"]; n != 2 {
			t.Errorf("PreDelete called %d times for web-2, want 2: once per preparation", n)
		}
	})
}

// TestSetHooks_PreDeleteError: an error from PreDelete is reported once,
// in the next Scale's error, wrapping ErrHookFailed; the VM stays held
// until its timeout, and PreDelete is not called again.
func TestSetHooks_PreDeleteError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &clock{now}
		l := newLatch()
		defer l.end()
		s, f := hookSet(c, &vmprovider.Lifecycle{PreDelete: l.call, Lifecycle: replicaset.Lifecycle{Timeout: 5 * time.Minute}})
		scale(t, s, c, 2)
		scale(t, s, c, 1)
		synctest.Wait()
		l.give("web-1", errors.New("drain refused"))
		synctest.Wait()
		c.t = c.t.Add(time.Minute)
		p, _, err := s.Scale(context.Background(), 1, c.t)
		if !errors.Is(err, vmprovider.ErrHookFailed) || !strings.Contains(err.Error(), "drain refused") || !strings.Contains(err.Error(), `"web-1"`) {
			t.Fatalf("the pass after PreDelete failed: error %v; want it, wrapping ErrHookFailed", err)
		}
		if len(p.Delete) > 0 || holds(p, replicaset.HoldPreDelete) != 1 {
			t.Fatalf("the pass after PreDelete failed: %v; want web-1 held", p)
		}
		if p := scale(t, s, c, 1); len(p.Delete) > 0 {
			t.Fatalf("the pass after: %v; want web-1 still held", p)
		}
		c.t = c.t.Add(4 * time.Minute)
		if p := scale(t, s, c, 1); !slices.Equal(replicaNames(p.Delete), []string{"web-1"}) {
			t.Fatalf("at the timeout: %v; want web-1 deleted", p)
		}
		if diff := cmp.Diff([]string{"web-0"}, names(t, f, "uid-hooks")); diff != "" {
			t.Errorf("VMs (-want +got):\n%s", diff)
		}
		if n := l.counts()["web-1"]; n != 1 {
			t.Errorf("PreDelete called %d times for web-1, want 1", n)
		}
	})
}

// TestSetHooks_NilPreDelete: a Lifecycle without PreDelete releases a VM
// at once: it prepares in one pass and goes in the next.
func TestSetHooks_NilPreDelete(t *testing.T) {
	c := &clock{now}
	s, f := hookSet(c, &vmprovider.Lifecycle{})
	scale(t, s, c, 2)
	if p := scale(t, s, c, 1); !slices.Equal(replicaNames(p.Prepare), []string{"web-1"}) || len(p.Delete) > 0 {
		t.Fatalf("2 → 1: %v, want web-1 prepared", p)
	}
	if p := scale(t, s, c, 1); !slices.Equal(replicaNames(p.Delete), []string{"web-1"}) {
		t.Fatalf("the next pass: %v, want web-1 deleted", p)
	}
	if diff := cmp.Diff([]string{"web-0"}, names(t, f, "uid-hooks")); diff != "" {
		t.Errorf("VMs (-want +got):\n%s", diff)
	}
}
