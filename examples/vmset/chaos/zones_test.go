package chaos_test

import (
	"context"
	"fmt"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmware/govmomi/vim25/types"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
)

// zoneOutage spreads a set with Rebalance over three zones while vCenter
// refuses every clone into zone-c's cluster, scaling 0→9→3→9: each step
// converges on its count in the other two zones. Then zone-c recovers and
// Rebalance moves the set to 3/3/3 without its available VMs ever dropping
// below nine.
func zoneOutage(t *seeded, e *testenv.Env) row {
	begin := time.Now()
	ctx := context.Background()
	ns := namespace(t, e, "chaos-zone-outage")
	vcf := &vcsim.Faults{}
	sim := vcsimtest.StartFaulty(t, vcf)
	if err := sim.AddCluster(ctx, vcsim.ThirdCluster); err != nil {
		t.Fatal(err)
	}
	lift := vcf.Refuse("CloneVM_Task", poolOf(t, sim, "/DC0/host/DC0_C2/Resources"))
	op := &operator{t: t, e: e, ns: ns, sim: sim, zones: vcsim.Zones(), zoneBackoff: 2 * time.Second}
	op.start()

	set := &vmv1.VirtualMachineReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: setName},
		Spec: vmv1.VirtualMachineReplicaSetSpec{
			Replicas:  ptr.To[int32](0),
			Selector:  &vmv1.LabelSelector{MatchLabels: map[string]string{"app": setName}},
			Zones:     []string{"zone-a", "zone-b", "zone-c"},
			Rebalance: true,
			Template: vmv1.VirtualMachineTemplate{
				Metadata: vmv1.TemplateMetadata{Labels: map[string]string{"app": setName}},
				Spec:     vmv1.VirtualMachineSpec{CPUs: 1, MemoryMiB: 256},
			},
		},
	}
	if err := e.Client.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	w := watchChildren(e, ns, set.UID)
	prev := 0
	for _, desired := range []int{9, 3, 9} {
		// Rebalance may surge one VM into zone-c whenever its backoff
		// ends; the clone fails and the VM goes.
		w.bound.Store(int64(max(prev, desired) + 1))
		patch := client.MergeFrom(set.DeepCopy())
		set.Spec.Replicas = ptr.To(int32(desired))
		if err := e.Client.Patch(ctx, set, patch); err != nil {
			t.Fatal(err)
		}
		converge(t, e, sim, ns, desired)
		w.bound.Store(int64(desired + 1)) // settled: a surge at most from now on
		prev = desired
		if got, err := readSpread(sim.Config(), ns); err != nil || got["DC0_C2"] != 0 {
			t.Errorf("%d VMs with zone-c refusing clones: per cluster %v (%v), want none in DC0_C2", desired, got, err)
		}
	}
	refused := vcf.Injected()
	if refused == 0 {
		t.Errorf("no clone into zone-c was refused: the scenario exercised nothing")
	}

	lift()
	lowest := watchAvailable(e, ns, set.UID)
	want := map[string]int{"DC0_C0": 3, "DC0_C1": 3, "DC0_C2": 3}
	var got map[string]int
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		var err error
		got, err = readSpread(sim.Config(), ns)
		return err == nil && maps.Equal(got, want), nil
	})
	if err != nil {
		t.Errorf("after zone-c recovered, Rebalance did not reach 3/3/3 in vCenter: %v%s", got, stacks())
	}
	converge(t, e, sim, ns, 9)
	low := lowest.stop()
	w.stop()
	op.stop()
	if low < 9 {
		t.Errorf("while rebalancing, available VMs dropped to %d, want never below 9", low)
	}

	r := row{name: "zone-outage", steps: "0→9→3→9, recover", maxChildren: int(w.max.Load()), final: "converged 3/3/3",
		injected: fmt.Sprintf("zone-c refused %d clones during 0→9→3→9, then recovered; available while rebalancing ≥ %d", refused, low)}
	r.leaked, r.duplicates = leaksAndDuplicates(t, e, sim, ns)
	if over := w.over.Load(); over > 0 {
		t.Errorf("a watcher saw %d more live children than desired plus one surge", over)
	}
	if r.leaked+r.duplicates > 0 {
		t.Errorf("%d leaked vSphere VMs, %d duplicates", r.leaked, r.duplicates)
	}
	if t.Failed() {
		r.final = "FAILED"
	}
	r.took = time.Since(begin)
	return r
}

// poolOf is the resource pool at path in the simulator, read over the API.
func poolOf(t testing.TB, sim *vcsimtest.Sim, path string) types.ManagedObjectReference {
	t.Helper()
	ref, err := sim.ResourcePool(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// availability polls the API server for the set's available VMs (Ready
// True, not being deleted) and keeps the fewest it saw.
type availability struct {
	lowest        atomic.Int64
	done, stopped chan struct{}
}

func watchAvailable(e *testenv.Env, ns string, uid ktypes.UID) *availability {
	a := &availability{done: make(chan struct{}), stopped: make(chan struct{})}
	a.lowest.Store(1 << 30)
	go func() {
		defer close(a.stopped)
		for {
			select {
			case <-a.done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			var l vmv1.VirtualMachineList
			if err := e.Client.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
				continue
			}
			n := int64(0)
			for _, vm := range l.Items {
				ref := metav1.GetControllerOfNoCopy(&vm)
				if ref != nil && ref.UID == uid && vm.DeletionTimestamp == nil && meta.IsStatusConditionTrue(vm.Status.Conditions, "Ready") {
					n++
				}
			}
			if n < a.lowest.Load() {
				a.lowest.Store(n)
			}
		}
	}()
	return a
}

// stop ends the polling and returns the fewest available VMs seen.
func (a *availability) stop() int64 {
	close(a.done)
	<-a.stopped
	return a.lowest.Load()
}
