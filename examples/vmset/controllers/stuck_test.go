package controllers_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/vmware/govmomi/simulator"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
)

// TestStuckDeletion scales 3→1 while one VirtualMachine is stuck in
// deletion because vCenter refuses to destroy its VM. The stuck replica
// still counts and goes first, so exactly one more is deleted and nothing is
// created; once vCenter lets go, one VM is left on both sides.
func TestStuckDeletion(t *testing.T) {
	const ns = "stuck"
	e, sim := start(t, ns)
	ctx := context.Background()
	createSet(t, e, ns, 3)
	three := settle(t, e, sim, ns, 3)

	stuck := &vmv1.VirtualMachine{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: three[0]}, stuck); err != nil {
		t.Fatal(err)
	}
	sim.Model.Service.AddFaultRule(&simulator.FaultInjectionRule{
		MethodName: "Destroy_Task", ObjectType: "*", ObjectName: controllers.VSphereName(stuck), Probability: 1,
		FaultType: simulator.FaultTypeInvalidState, Message: "held by the test", Enabled: true,
	})
	if _, err := e.Kubectl(ctx, "delete", "vm", stuck.Name, "-n", ns, "--wait=false"); err != nil {
		t.Fatal(err)
	}
	// The stuck VM counts toward the three: nothing replaces it.
	waitState(t, e, sim, ns, "holding 2 live and 1 stuck VM", func(st vmcheck.State) bool {
		return slices.Equal(st.Deleting, []string{stuck.Name}) && len(st.LiveOn) == 2 && len(st.VCenter) == 3 &&
			st.Set.Status.TerminatingReplicas == 1 && st.Set.Status.ReadyReplicas == 2
	})
	time.Sleep(time.Second) // room for a wrong replacement to show
	if st := waitState(t, e, sim, ns, "still 3 VMs", func(vmcheck.State) bool { return true }); len(st.Want) != 3 {
		t.Fatalf("a stuck replica was replaced: %v", st)
	}

	if _, err := e.Kubectl(ctx, "scale", "vmreplicaset", "test-rs", "-n", ns, "--replicas=1"); err != nil {
		t.Fatal(err)
	}
	var maxObjects int
	st := waitState(t, e, sim, ns, "1 live VM beside the stuck one", func(st vmcheck.State) bool {
		maxObjects = max(maxObjects, len(st.Want))
		return len(st.Live) == 1 && len(st.LiveOn) == 1 && slices.Equal(st.Deleting, []string{stuck.Name}) &&
			len(st.VCenter) == 2 && st.Set.Status.ObservedGeneration == st.Set.Generation
	})
	if maxObjects > 3 || !slices.Contains(three, st.Live[0]) {
		t.Errorf("scaling 3→1 with a stuck VM: saw up to %d objects, survivor %v of %v; want ≤ 3, one of the originals", maxObjects, st.Live, three)
	}

	sim.Model.Service.ClearFaultRules()
	if got := settle(t, e, sim, ns, 1); !slices.Equal(got, st.Live) {
		t.Errorf("after vCenter let go: %v, want the survivor %v", got, st.Live)
	}
}
