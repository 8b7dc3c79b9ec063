package vmprovider_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vmprovidertest"
)

// drainCall is one call of PreDelete, as the test saw it.
type drainCall struct {
	run      int             // the Set (the program's run) that made it
	ctx      context.Context // the ctx it was given
	since    time.Time       // the pass that made it
	answer   chan error
	answered bool // the test answered it
	returned bool
	released bool  // it returned nil
	ctxErr   error // ctx.Err(), when it returned because its ctx ended
	takeBack bool  // a scale-up took its VM back
}

// drains records the PreDelete calls of a property run, by instance UUID.
type drains struct {
	mu         sync.Mutex
	calls      map[string][]*drainCall
	auto       bool     // new calls return nil at once
	violations []string // what the callbacks saw that they must not
}

// preDelete is the PreDelete of run, which ends its calls still blocked
// when stop is closed (the program stopped).
func (d *drains) preDelete(run int, stop <-chan struct{}) func(context.Context, vmprovider.VM) error {
	return func(ctx context.Context, vm vmprovider.VM) error {
		d.mu.Lock()
		for _, c := range d.calls[vm.InstanceUUID] {
			if c.run == run && !c.returned && c.ctx.Err() == nil {
				d.violations = append(d.violations, fmt.Sprintf("PreDelete called for %s while a call for it runs", vm.Name))
			}
		}
		c := &drainCall{run: run, ctx: ctx, answer: make(chan error, 1)}
		d.calls[vm.InstanceUUID] = append(d.calls[vm.InstanceUUID], c)
		auto := d.auto
		d.mu.Unlock()
		var err, ctxErr error
		if !auto {
			select {
			case err = <-c.answer:
			case <-ctx.Done():
				err, ctxErr = ctx.Err(), ctx.Err()
			case <-stop:
				err = errors.New("the program stopped")
			}
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		c.returned, c.released, c.ctxErr = true, err == nil, ctxErr
		return err
	}
}

// latest returns the last call run made for the VM uuid, or nil. d.mu is
// held.
func (d *drains) latest(run int, uuid string) *drainCall {
	cs := d.calls[uuid]
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i].run == run {
			return cs[i]
		}
	}
	return nil
}

// listing returns owner's VMs in f, name by instance UUID.
func listing(t *rapid.T, f *vmprovidertest.Fake, owner string) map[string]string {
	vms, err := f.List(context.Background(), owner)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, vm := range vms {
		out[vm.InstanceUUID] = vm.Name
	}
	return out
}

// TestSetHooks_NeverDeletesEarly drives a Set with a PreDelete pass after
// pass: desired counts change at random, the clock moves on, each call of
// PreDelete is released, fails or hangs at random, and the program
// restarts at random (a new Set over the same VMs, its old calls ended).
// Deletions are observed through the Fake, by instance UUID, across each
// pass. At every pass:
//
//   - no VM is deleted unless the Set's latest PreDelete call for it (not
//     since taken back) returned nil before the pass, or Continue
//     holds and the pass is at or past the timeout from the pass that made
//     the call, which then has its ctx cancelled;
//   - PreDelete is called once for each VM in Plan.Prepare, and never for
//     a VM while a call for it runs;
//   - a VM taken back (Plan.Cancel) has its call's ctx cancelled, if it
//     still ran;
//   - each error PreDelete returned is in the next pass's error, wrapping
//     ErrHookFailed, and the error holds nothing else.
//
// At the end, with every call released and the timeouts passed, the Set
// ends at its count with none preparing, except, with Abandon, VMs
// whose PreDelete failed.
func TestSetHooks_NeverDeletesEarly(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		rapid.SyncTest(rt, func(t *rapid.T) {
			c := &clock{now}
			timeout := time.Duration(rapid.IntRange(1, 8).Draw(t, "timeoutMinutes")) * time.Minute
			abandon := rapid.Bool().Draw(t, "abandon")
			owner := vmprovider.Owner{UID: "uid-prop"}
			f := &vmprovidertest.Fake{Now: c.now}
			d := &drains{calls: map[string][]*drainCall{}}
			run, stop := 0, make(chan struct{})
			defer func() { close(stop) }()
			newSet := func() *vmprovider.Set {
				return &vmprovider.Set{
					Provider: f,
					Template: vmprovider.Spec{Owner: owner, PowerOn: true},
					Policy:   deletionpolicy.Random{Seed: 5},
					Names:    naming.Indexed{Base: "web"},
					Lifecycle: &vmprovider.Lifecycle{PreDelete: d.preDelete(run, stop),
						Lifecycle: replicaset.Lifecycle{Timeout: timeout, Abandon: abandon}},
				}
			}
			s := newSet()
			prepares := map[string]int{} // by UUID: Plan.Prepare of this run
			failed := 0                  // errors given to this run's calls since its last pass

			pass := func(desired int) replicaset.Plan {
				before := listing(t, f, owner.UID)
				plan, _, err := s.Scale(context.Background(), desired, c.t)
				synctest.Wait()
				after := listing(t, f, owner.UID)
				d.mu.Lock()
				defer d.mu.Unlock()
				if len(d.violations) > 0 {
					t.Fatalf("at +%v: %v", c.t.Sub(now), d.violations)
				}
				reported := 0
				if err != nil {
					for line := range strings.Lines(err.Error()) {
						if !strings.HasPrefix(line, "PreDelete of VM ") || !strings.Contains(line, vmprovider.ErrHookFailed.Error()) {
							t.Fatalf("at +%v: Scale(%d) error %q, want only PreDelete's errors", c.t.Sub(now), desired, line)
						}
						reported++
					}
				}
				if reported != failed || (failed > 0) != errors.Is(err, vmprovider.ErrHookFailed) {
					t.Fatalf("at +%v: Scale(%d) reported %d errors of PreDelete (%v), want the %d it returned", c.t.Sub(now), desired, reported, err, failed)
				}
				failed = 0
				for uuid, name := range before {
					if _, ok := after[uuid]; ok {
						continue
					}
					call := d.latest(run, uuid)
					switch {
					case call == nil || call.takeBack:
						t.Fatalf("at +%v: %s deleted, PreDelete never called for it since it was chosen", c.t.Sub(now), name)
					case call.released && !call.since.IsZero():
					case !abandon && !c.t.Before(call.since.Add(timeout)):
					default:
						t.Fatalf("at +%v: %s deleted, its PreDelete (called at +%v) not released, its timeout %v not passed (abandon %v)",
							c.t.Sub(now), name, call.since.Sub(now), timeout, abandon)
					}
					if !call.returned {
						t.Fatalf("at +%v: %s deleted, its PreDelete still running: its ctx was not cancelled", c.t.Sub(now), name)
					}
				}
				for _, r := range plan.Cancel {
					call := d.latest(run, r.UID)
					if call == nil {
						t.Fatalf("at +%v: %s taken back, never prepared", c.t.Sub(now), r.Name)
					}
					if !call.returned || !call.answered && !errors.Is(call.ctxErr, context.Canceled) {
						t.Fatalf("at +%v: %s taken back, its PreDelete still running or not cancelled (%+v)", c.t.Sub(now), r.Name, *call)
					}
					call.takeBack = true
				}
				for _, r := range plan.Prepare {
					prepares[r.UID]++
				}
				for uuid, cs := range d.calls {
					n := 0
					for _, call := range cs {
						if call.run != run {
							continue
						}
						n++
						if call.since.IsZero() {
							call.since = c.t
						}
					}
					if n != prepares[uuid] {
						t.Fatalf("at +%v: PreDelete called %d times for %s, prepared %d times", c.t.Sub(now), n, before[uuid], prepares[uuid])
					}
				}
				return plan
			}

			desired := rapid.IntRange(0, 5).Draw(t, "desired")
			steps := rapid.IntRange(5, 40).Draw(t, "steps")
			for range steps {
				d.mu.Lock()
				var waiting []*drainCall
				for _, uuid := range sortedKeys(d.calls) {
					if call := d.latest(run, uuid); call != nil && !call.returned && !call.answered {
						waiting = append(waiting, call)
					}
				}
				d.mu.Unlock()
				for _, call := range waiting {
					switch rapid.IntRange(0, 3).Draw(t, "answer") {
					case 0:
						call.answered = true
						call.answer <- nil
					case 1:
						call.answered = true
						call.answer <- errors.New("drain refused")
						failed++
					}
				}
				synctest.Wait()
				switch rapid.IntRange(0, 9).Draw(t, "event") {
				case 0, 1, 2:
					desired = rapid.IntRange(0, 5).Draw(t, "desired")
				case 3:
					close(stop)
					synctest.Wait()
					run, stop = run+1, make(chan struct{})
					s, prepares, failed = newSet(), map[string]int{}, 0
				}
				c.t = c.t.Add(time.Duration(rapid.IntRange(0, 6).Draw(t, "halfMinutes")) * 30 * time.Second)
				pass(desired)
			}

			// Release everything, let the timeouts pass, and settle.
			d.mu.Lock()
			d.auto = true
			for _, cs := range d.calls {
				for _, call := range cs {
					if call.run == run && !call.returned && !call.answered {
						call.answered = true
						call.answer <- nil
					}
				}
			}
			d.mu.Unlock()
			synctest.Wait()
			c.t = c.t.Add(timeout)
			for range 8 {
				pass(desired)
			}
			st, err := s.Status(context.Background(), c.t)
			if err != nil || st.Replicas-st.Preparing != desired || !abandon && st.Preparing > 0 {
				t.Fatalf("settled at %d: Status %+v, %v; want %d not preparing, and none preparing with Continue", desired, st, err, desired)
			}
		})
	})
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
