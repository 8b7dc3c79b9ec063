package reliability

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/rollwatch"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/replicaset"
)

// killDuringAdoption makes three VirtualMachines that no one owns, with a
// set's labels, waits for their VMs, creates the set (five replicas) and
// kills the leader once it has adopted one of them. The set must end
// with the same three, adopted, and two VMs of its own.
func (f *fleet) killDuringAdoption(t *testing.T) takeover {
	t.Helper()
	ctx := context.Background()
	ns := f.namespace("leader-adopt")
	set := newSet(ns, "adopt", 5)
	set.Spec.Zones = nil // the orphans are in no zone
	orphans := map[string]types.UID{}
	for i := range 3 {
		vm := &vmv1.VirtualMachine{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("orphan-%d", i), Labels: set.Spec.Template.Metadata.Labels},
			Spec:       templateA,
		}
		if err := f.e.Client.Create(ctx, vm); err != nil {
			t.Fatal(err)
		}
		orphans[vm.Name] = vm.UID
	}
	f.converge(ns, "", 3, 2*time.Minute)
	leader := f.leader()
	if err := f.e.Client.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	// A new set: none available to begin with, never more than five.
	b := rollwatch.Bounds{Desired: 5, Limits: replicaset.Limits{Unavailable: 5}}
	stopWatch := f.watchSet(t, set, b)
	adopted := func(l []vmv1.VirtualMachine) int {
		n := 0
		for _, vm := range l {
			if ref := metav1.GetControllerOfNoCopy(&vm); ref != nil && ref.UID == set.UID && orphans[vm.Name] == vm.UID {
				n++
			}
		}
		return n
	}
	var atKill int
	err := f.watchVMs(ns, time.Minute, func(vms []*vmv1.VirtualMachine) bool {
		l := make([]vmv1.VirtualMachine, len(vms))
		for i, vm := range vms {
			l[i] = *vm
		}
		atKill = adopted(l)
		return atKill > 0
	})
	if err != nil {
		t.Fatalf("the set never adopted an orphan: %v", err)
	}
	r := f.kill(t, leader, fmt.Sprintf("mid-adoption (%d of 3 adopted)", atKill), ns, set.Name, 5)
	rep := stopWatch()
	r.most, r.bound, r.breaches = rep.MostExisting, b.MaxExisting(), rep.Breaches
	if rep.Breaches > 0 {
		t.Errorf("the watch saw the bounds (%v) broken: %v", b, rep.First)
	}
	var l vmv1.VirtualMachineList
	if err := f.e.Client.List(ctx, &l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if got := adopted(l.Items); got != 3 {
		t.Errorf("the set controls %d of the three orphans, each as it was made, want all three: %v", got, l.Items)
	}
	return r
}
