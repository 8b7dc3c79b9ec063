package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
)

// cacheGauge gathers vmset_cache_objects from reg, by resource; nil when
// reg has no sample of it.
func cacheGauge(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]float64
	for _, mf := range mfs {
		if mf.GetName() != "vmset_cache_objects" {
			continue
		}
		out = map[string]float64{}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "resource" {
					out[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}

// TestCacheObjects counts the sets and VirtualMachines in a cache of the
// API server as the manager's is made: before it starts, once it has
// synced, as objects come and go, and after counting stops.
func TestCacheObjects(t *testing.T) {
	e := env.Require(t)
	ctx, cancel := context.WithCancel(context.Background())
	c, err := cache.New(e.Config, cache.Options{Scheme: vmcheck.Scheme(), DefaultTransform: cache.TransformStripManagedFields()})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	stop, err := countCachedObjects(ctx, c, reg)
	if err != nil {
		t.Fatal(err)
	}
	// Counted twice, as two managers in one process would count a cache
	// they shared: it counts once.
	stopAgain, err := countCachedObjects(ctx, c, reg)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]float64{"virtualmachinereplicasets": 0, "virtualmachines": 0}, cacheGauge(t, reg)); diff != "" {
		t.Errorf("before the cache started (-want +got):\n%s", diff)
	}
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("cache: %v", err)
		}
	})
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache never synced")
	}

	ns := fmt.Sprintf("cache-objects-%d", time.Now().UnixNano())
	create := func(obj client.Object) {
		t.Helper()
		if err := e.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	create(newSet(ns, "a", 1)) // no controller runs: the sets make no VMs
	create(newSet(ns, "b", 2))
	vms := make([]*vmv1.VirtualMachine, 3)
	for i := range vms {
		vms[i] = &vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vm-" + string(rune('a'+i))},
			Spec: vmv1.VirtualMachineSpec{CPUs: 1, MemoryMiB: 256}}
		create(vms[i])
	}
	matchesServer(t, reg, ns, "after creating 2 sets and 3 VMs", 2, 3)
	if err := e.Client.Delete(ctx, vms[0]); err != nil {
		t.Fatal(err)
	}
	matchesServer(t, reg, ns, "after deleting a VM", 2, 2)

	stop()
	if got := cacheGauge(t, reg); got == nil {
		t.Error("one count stopped, the other's is gone too")
	}
	stopAgain()
	if got := cacheGauge(t, reg); got != nil {
		t.Errorf("after counting stopped: %v, want no sample", got)
	}
}

// matchesServer waits until ns holds sets sets and vms VMs, and the
// gauge counts what the API server holds of each resource in every
// namespace.
func matchesServer(t *testing.T, reg prometheus.Gatherer, ns, what string, sets, vms int) {
	t.Helper()
	e := env.Require(t)
	var want, got map[string]float64
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var sl vmv1.VirtualMachineReplicaSetList
		var vl vmv1.VirtualMachineList
		if err := e.Client.List(ctx, &sl); err != nil {
			return false, err
		}
		if err := e.Client.List(ctx, &vl); err != nil {
			return false, err
		}
		in := func(objs []client.Object) int {
			n := 0
			for _, o := range objs {
				if o.GetNamespace() == ns {
					n++
				}
			}
			return n
		}
		var setObjs, vmObjs []client.Object
		for i := range sl.Items {
			setObjs = append(setObjs, &sl.Items[i])
		}
		for i := range vl.Items {
			vmObjs = append(vmObjs, &vl.Items[i])
		}
		if in(setObjs) != sets || in(vmObjs) != vms {
			return false, nil // a deleted VM is still going
		}
		want = map[string]float64{"virtualmachinereplicasets": float64(len(sl.Items)), "virtualmachines": float64(len(vl.Items))}
		got = cacheGauge(t, reg)
		return cmp.Equal(want, got), nil
	})
	if err != nil {
		t.Fatalf("%s: the gauge counts %v, the API server holds %v: %v", what, got, want, err)
	}
}
