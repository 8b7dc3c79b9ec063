package controllers_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// readyWatch counts, from a watch of the API server independent of the
// operator, the set's VirtualMachines that are live and Ready, and keeps
// the fewest it saw and the most live ones.
type readyWatch struct {
	mu              sync.Mutex
	ready, live     map[string]bool
	fewest, mostAll int
}

func watchReady(t *testing.T, ns string, start []string) *readyWatch {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: vmcheck.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	var l vmv1.VirtualMachineList
	if err := c.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	wi, err := c.Watch(ctx, &vmv1.VirtualMachineList{}, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: l.ResourceVersion}})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	x := &readyWatch{ready: map[string]bool{}, live: map[string]bool{}}
	for _, n := range start {
		x.ready[n], x.live[n] = true, true
	}
	x.fewest, x.mostAll = len(x.ready), len(x.live)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range wi.ResultChan() {
			vm, ok := ev.Object.(*vmv1.VirtualMachine)
			if !ok {
				continue
			}
			x.mu.Lock()
			gone := ev.Type == watch.Deleted || vm.DeletionTimestamp != nil
			x.live[vm.Name] = !gone
			x.ready[vm.Name] = !gone && meta.IsStatusConditionTrue(vm.Status.Conditions, "Ready")
			n, all := 0, 0
			for name := range x.ready {
				if x.ready[name] {
					n++
				}
			}
			for name := range x.live {
				if x.live[name] {
					all++
				}
			}
			x.fewest, x.mostAll = min(x.fewest, n), max(x.mostAll, all)
			x.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); wi.Stop(); <-done })
	return x
}

// TestRollout: changing a set's template (its VMs' memory) rolls its VMs
// one at a time, under the default strategy (one surge VM, none
// unavailable): an independent watch never sees fewer than 3 Ready
// VirtualMachines nor more than 4 live ones, every VM ends new, on the new
// template and labelled with the set's revision, vCenter holds exactly
// them, and kubectl shows UP-TO-DATE 3 and each VM's revision.
func TestRollout(t *testing.T) {
	const ns = "rollout"
	e, sim := start(t, ns)
	ctx := context.Background()
	createSet(t, e, ns, 3)
	old := settle(t, e, sim, ns, 3)
	st := waitState(t, e, sim, ns, "labelled with a revision", func(st vmcheck.State) bool {
		return st.Set != nil && st.Set.Status.UpdateRevision != "" && st.Set.Status.UpdatedReplicas == 3
	})
	rev := st.Set.Status.UpdateRevision

	x := watchReady(t, ns, old)
	var set vmv1.VirtualMachineReplicaSet
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "test-rs"}, &set); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(set.DeepCopy())
	set.Spec.Template.Spec.MemoryMiB = 1024
	if err := e.Client.Patch(ctx, &set, patch); err != nil {
		t.Fatal(err)
	}
	st = waitState(t, e, sim, ns, "rolled to the new template", func(st vmcheck.State) bool {
		if !st.Settled(3) || st.Set.Status.UpdateRevision == rev || st.Set.Status.UpdatedReplicas != 3 {
			return false
		}
		for _, n := range st.Live {
			if slices.Contains(old, n) {
				return false
			}
		}
		c := meta.FindStatusCondition(st.Set.Status.Conditions, kube.ConditionRolledOut)
		return c != nil && c.Reason == kube.ReasonRolloutComplete && st.Set.Status.CurrentRevision == st.Set.Status.UpdateRevision
	})
	newRev := st.Set.Status.UpdateRevision
	var vms vmv1.VirtualMachineList
	if err := e.Client.List(ctx, &vms, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, vm := range vms.Items {
		if vm.Spec.MemoryMiB != 1024 || vm.Labels[kube.RevisionLabel] != newRev {
			t.Errorf("%s: memory %d MiB, revision %q; want 1024 and %q", vm.Name, vm.Spec.MemoryMiB, vm.Labels[kube.RevisionLabel], newRev)
		}
	}
	// vCenter records each VM's revision beside its owner's mark.
	p, err := vsphere.New(ctx, sim.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close(ctx) }()
	for _, vm := range vms.Items {
		got, err := p.Get(ctx, controllers.VSphereName(&vm))
		if err != nil || got.Revision != newRev {
			t.Errorf("vCenter VM of %s: revision %q, %v; want %q", vm.Name, got.Revision, err, newRev)
		}
	}
	x.mu.Lock()
	fewest, most := x.fewest, x.mostAll
	x.mu.Unlock()
	if fewest < 3 || most > 4 {
		t.Errorf("the watch saw %d Ready VirtualMachines at the fewest and %d live at the most; want at least 3 and at most 4", fewest, most)
	}

	out, err := e.Kubectl(ctx, "get", "vmreplicaset", "test-rs", "-n", ns, "--no-headers")
	if f := strings.Fields(out); err != nil || len(f) < 4 || f[3] != "3" {
		t.Errorf("kubectl get vmreplicaset: %q, %v; want UP-TO-DATE 3", out, err)
	}
	out, err = e.Kubectl(ctx, "get", "vm", "-n", ns, "--no-headers")
	if err != nil || strings.Count(out, newRev) != 3 {
		t.Errorf("kubectl get vm: %q, %v; want each VM's revision %s", out, err, newRev)
	}
}
