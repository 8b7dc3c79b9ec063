package controllers_test

import (
	"context"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
)

// TestUnreadableVMsKept: when vCenter can no longer read two of a set's
// three VMs (their datastore gone), their VirtualMachines say so (Ready
// Unknown, VMUnreadable) and the set neither deletes them nor makes VMs
// under their names: one VM stands in (the surge), and a scale-down to one
// takes known VMs only. Once vCenter reads them again, the one VM too
// many is scaled down as any excess is, and the set settles on three.
func TestUnreadableVMsKept(t *testing.T) {
	const ns = "unreadable"
	e, sim := start(t, ns)
	ctx := context.Background()
	createSet(t, e, ns, 3)
	names := settle(t, e, sim, ns, 3)
	lost := names[:2]
	restore, err := sim.Inaccessible(ctx, ns+"-"+lost[0], ns+"-"+lost[1])
	if err != nil {
		t.Fatal(err)
	}
	unreadable := func(st vmcheck.State) bool {
		for _, name := range lost {
			var vm vmv1.VirtualMachine
			if err := e.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &vm); err != nil {
				return false
			}
			c := meta.FindStatusCondition(vm.Status.Conditions, "Ready")
			if c == nil || c.Status != metav1.ConditionUnknown || c.Reason != controllers.ReasonVMUnreadable {
				return false
			}
		}
		return true
	}
	// K = max(0, 3−2) + min(2, 1, 3) = 2 known VMs: one stands in.
	st := waitState(t, e, sim, ns, "unreadable, with one VM standing in", func(st vmcheck.State) bool {
		return unreadable(st) && len(st.Live) == 4 && len(st.VCenter) == 4 && len(st.Deleting) == 0
	})
	for _, name := range lost {
		if !slices.Contains(st.Live, name) {
			t.Fatalf("unreadable %s is gone from %v", name, st.Live)
		}
	}
	// The set's status counts the two apart: live, unknown, not ready.
	st = waitState(t, e, sim, ns, "the set counting two unknown", func(st vmcheck.State) bool {
		return st.Set != nil && st.Set.Status.UnknownReplicas == 2
	})
	if s := st.Set.Status; s.Replicas != 4 || s.ReadyReplicas > 2 {
		t.Errorf("set status: %d replicas, %d ready, %d unknown; want 4 live, at most the 2 known ready, 2 unknown",
			s.Replicas, s.ReadyReplicas, s.UnknownReplicas)
	}
	set := &vmv1.VirtualMachineReplicaSet{}
	if err := e.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "test-rs"}, set); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(set.DeepCopy())
	set.Spec.Replicas = ptr.To[int32](1) // K = max(0, 1−2) + min(2, 1, 1) = 1
	if err := e.Client.Patch(ctx, set, patch); err != nil {
		t.Fatal(err)
	}
	waitState(t, e, sim, ns, "scaled down to the unreadable two and one known", func(st vmcheck.State) bool {
		return unreadable(st) && len(st.Live) == 3 && len(st.VCenter) == 3 && len(st.Deleting) == 0 &&
			slices.Contains(st.Live, lost[0]) && slices.Contains(st.Live, lost[1])
	})
	set = &vmv1.VirtualMachineReplicaSet{}
	if err := e.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "test-rs"}, set); err != nil {
		t.Fatal(err)
	}
	patch = client.MergeFrom(set.DeepCopy())
	set.Spec.Replicas = ptr.To[int32](3) // K = 1 + min(2, 1, 3) = 2 known again
	if err := e.Client.Patch(ctx, set, patch); err != nil {
		t.Fatal(err)
	}
	waitState(t, e, sim, ns, "back at three with the unreadable two", func(st vmcheck.State) bool {
		return unreadable(st) && len(st.Live) == 4 && len(st.VCenter) == 4 &&
			slices.Contains(st.Live, lost[0]) && slices.Contains(st.Live, lost[1])
	})
	// Read again, the four are one too many: an ordinary scale-down
	// takes one, and the set settles on three, each VM once in vCenter,
	// none unknown.
	restore()
	settle(t, e, sim, ns, 3)
	waitState(t, e, sim, ns, "no replica unknown", func(st vmcheck.State) bool { return st.Set != nil && st.Set.Status.UnknownReplicas == 0 })
}
