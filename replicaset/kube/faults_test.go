package kube_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/replicakit/replicakit/internal/faults"
)

// writeCounter counts every write the manager's client sends.
type writeCounter struct{ n atomic.Int64 }

func (w *writeCounter) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			w.n.Add(1)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			w.n.Add(1)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			w.n.Add(1)
			return c.Patch(ctx, obj, p, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			w.n.Add(1)
			return c.Delete(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			w.n.Add(1)
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			w.n.Add(1)
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	}
}

// TestReconciler_SteadyStateWritesNothing converges, then makes the owner
// reconcile again with nothing to change: no write at all.
func TestReconciler_SteadyStateWritesNothing(t *testing.T) {
	var writes writeCounter
	c, ns := startManager(t, func(o *ctrl.Options) { o.NewClient = faults.NewClient(writes.funcs()) })
	w := widget(ns, "steady", 3)
	if err := c.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	converge(t, c, w, 3)
	time.Sleep(time.Second) // let the passes triggered by our own writes finish
	before := writes.n.Load()
	// A label change triggers a reconcile without changing the spec.
	patch := []byte(`{"metadata":{"labels":{"poke":"1"}}}`)
	if err := c.Patch(context.Background(), w, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if n := writes.n.Load() - before; n != 0 {
		t.Errorf("a steady-state reconcile issued %d writes, want 0", n)
	}
	if before == 0 {
		t.Error("the counter saw no writes at all: it is not wired to the manager's client")
	}
}

// TestReconciler_Faults scales through 0→5→2→6→0→8→1→0 while 20% of creates,
// deletes and status patches fail and lists lag. Every step converges
// exactly, and a watcher reading the API server never sees more live
// children than the larger of the previous and the new desired count.
func TestReconciler_Faults(t *testing.T) {
	n, lag := faults.New(0.2, 42), faults.NewLag(200*time.Millisecond, 42)
	c, ns := startManager(t, func(o *ctrl.Options) {
		o.NewClient = faults.NewClient(n.Funcs())
		o.NewCache = lag.NewCache()
	})
	w := widget(ns, "chaos", 0)
	if err := c.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	uid := w.GetUID()      // scale decodes into w, so the watcher must not read it
	var bound atomic.Int64 // the most live children allowed right now
	var worst atomic.Int64 // the most live children seen beyond the bound
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			var l corev1.ConfigMapList
			if err := c.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
				continue
			}
			live := int64(0)
			for _, cm := range l.Items {
				if ref := metav1.GetControllerOf(&cm); ref != nil && ref.UID == uid && cm.DeletionTimestamp == nil {
					live++
				}
			}
			if over := live - bound.Load(); over > worst.Load() {
				worst.Store(over)
			}
		}
	}()
	prev := int64(0)
	for _, desired := range []int64{5, 2, 6, 0, 8, 1, 0} {
		bound.Store(max(prev, desired))
		scale(t, c, w, desired)
		converge(t, c, w, int(desired))
		prev = desired
	}
	close(stop)
	<-watched
	if over := worst.Load(); over > 0 {
		t.Errorf("overshoot: the watcher saw %d more live children than desired", over)
	}
	if n.Injected() == 0 || lag.Reads.Load() == 0 {
		t.Errorf("injected %v and %d lagging watch reads; the test exercised nothing", n, lag.Reads.Load())
	}
	t.Logf("injected %v; %d watch reads lagged", n, lag.Reads.Load())
	want := []string{"SuccessfulCreate", "SuccessfulDelete"}
	if n.Create.Load() > 0 {
		want = append(want, "FailedCreate")
	}
	if n.Delete.Load() > 0 {
		want = append(want, "FailedDelete")
	}
	waitEvents(t, c, w, want...)
}
