package vcsim_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/internal/vcsim"
)

// TestFaults_Hold: a held clone waits at the gate while other calls are
// served (the gate is not held); released, it is served; dropped, its
// client gets no answer and the simulator never clones; the hold over,
// clones go through at once.
func TestFaults_Hold(t *testing.T) {
	f := &vcsim.Faults{}
	s, c := start(t, f.Serialized)
	ctx := context.Background()
	vm, folder := template(t, c)
	clone := func(name string) <-chan error {
		out := make(chan error, 1)
		go func() {
			task, err := vm.Clone(ctx, folder, name, types.VirtualMachineCloneSpec{})
			if err == nil {
				err = task.Wait(ctx)
			}
			out <- err
		}()
		return out
	}
	held := func(h *vcsim.Held, name string) <-chan error {
		t.Helper()
		done := clone(name)
		select {
		case <-h.Caught():
		case err := <-done:
			t.Fatalf("clone %s with its method held: ended with %v, want it held", name, err)
		case <-time.After(time.Minute):
			t.Fatalf("clone %s was never caught by the hold", name)
		}
		// Served meanwhile: the hold does not hold the gate.
		if got := clones(t, s); slices.Contains(got, name) {
			t.Fatalf("clone %s held, yet the simulator holds %v", name, got)
		}
		return done
	}

	h := f.Hold("CloneVM_Task")
	done := held(h, "clone-released")
	h.Release()
	if err := <-done; err != nil {
		t.Errorf("released clone: %v", err)
	}

	h = f.Hold("CloneVM_Task")
	done = held(h, "clone-dropped")
	h.Drop()
	if err := <-done; err == nil {
		t.Errorf("dropped clone: answered without error")
	}
	if err := <-clone("clone-after"); err != nil {
		t.Errorf("clone after the holds: %v", err)
	}
	if got, want := clones(t, s), []string{"clone-after", "clone-released"}; !slices.Equal(got, want) {
		t.Errorf("clones %v, want %v: a dropped call was served, or a released one was not", got, want)
	}
	if h.Count() != 1 {
		t.Errorf("the second hold caught %d calls, want 1", h.Count())
	}
}

// TestFaults_Serving: while a clone whose task takes 3 s holds the gate,
// Serving names it and how long it has held it, longer at each look; then
// nothing. (The task's length is the window the test looks in: any look
// in it will do, so only a machine stalled for most of 3 s could miss it.)
func TestFaults_Serving(t *testing.T) {
	simulator.TaskDelay.MethodDelay = map[string]int{"CloneVm": 3000} // the clone task's name
	t.Cleanup(func() { simulator.TaskDelay.MethodDelay = nil })
	f := &vcsim.Faults{}
	_, c := start(t, f.Serialized)
	ctx := context.Background()
	vm, folder := template(t, c)
	if m, d := f.Serving(); m != "" {
		t.Errorf("Serving() = %q, %v with no call in flight, want nothing", m, d)
	}
	done := make(chan error, 1)
	go func() {
		_, err := vm.Clone(ctx, folder, "clone-slow", types.VirtualMachineCloneSpec{})
		done <- err
	}()
	var looks []time.Duration // how long Serving said the clone held the gate
	for len(looks) < 2 {
		select {
		case err := <-done:
			t.Fatalf("the clone ended (%v) before Serving named it twice, with %v", err, looks)
		case <-time.After(10 * time.Millisecond):
		}
		if m, d := f.Serving(); m == "CloneVM_Task" && d > 0 && (len(looks) == 0 || d > looks[0]) {
			looks = append(looks, d)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if m, d := f.Serving(); m != "" {
		t.Errorf("Serving() = %q, %v after the clone, want nothing", m, d)
	}
}
