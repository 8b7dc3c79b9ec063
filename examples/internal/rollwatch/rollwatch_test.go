package rollwatch

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/replicaset"
)

// setUID is the UID of the set the tests watch.
const setUID = types.UID("set-uid")

// t0 is when the tests' first VMs became ready.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// vm is a VirtualMachine of the set (or, with owner "", of nobody),
// Ready since readyAt unless that is zero, being deleted when deleting.
func vm(name string, owner types.UID, readyAt time.Time, deleting bool) *vmv1.VirtualMachine {
	v := &vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if owner != "" {
		v.OwnerReferences = []metav1.OwnerReference{{Name: "set", UID: owner, Controller: ptr.To(true)}}
	}
	if !readyAt.IsZero() {
		v.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(readyAt)}}
	}
	if deleting {
		v.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	}
	return v
}

// refused is a VirtualMachine of the set in zone whose clone vCenter
// refused.
func refused(name, zone string, uid types.UID) *vmv1.VirtualMachine {
	v := vm(name, setUID, time.Time{}, false)
	v.UID, v.Spec.Zone = uid, zone
	v.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: controllers.ReasonCreateFailed}}
	return v
}

// step is one change the tally is fed, at a moment.
type step struct {
	typ watch.EventType
	vm  *vmv1.VirtualMachine
	at  time.Time
}

// TestTally feeds the tally changes as a watch would and checks what it
// reports: a rollout within its bounds breaks none, and each way out of
// them (an available VM deleted too early, one VM too many counting those
// being deleted, a VM taken by another owner, one not yet ready for
// minReadySeconds) breaks one.
func TestTally(t *testing.T) {
	two := Bounds{Desired: 2, Limits: replicaset.Limits{Surge: 1, Unavailable: 0}}
	t1 := t0.Add(time.Minute)
	tests := []struct {
		name    string
		bounds  Bounds
		excused int
		steps   []step
		want    Report
	}{{
		name:   "a rolling update within its bounds",
		bounds: two,
		steps: append([]step(nil),
			step{watch.Added, vm("c", setUID, time.Time{}, false), t1},
			step{watch.Modified, vm("c", setUID, t1, false), t1},
			step{watch.Modified, vm("a", setUID, t0, true), t1},
			step{watch.Deleted, vm("a", setUID, t0, true), t1},
			step{watch.Added, vm("d", setUID, time.Time{}, false), t1},
			step{watch.Modified, vm("d", setUID, t1, false), t1},
			step{watch.Modified, vm("b", setUID, t0, true), t1},
			step{watch.Deleted, vm("b", setUID, t0, true), t1}),
		want: Report{Events: 9, FewestAvailable: 2, MostExisting: 3},
	}, {
		name:   "an available VM deleted before its replacement is ready",
		bounds: two,
		steps: append([]step(nil),
			step{watch.Added, vm("c", setUID, time.Time{}, false), t1},
			step{watch.Modified, vm("a", setUID, t0, true), t1}),
		want: Report{Events: 3, FewestAvailable: 1, MostExisting: 3, Breaches: 1},
	}, {
		name:   "a VM being deleted still exists",
		bounds: two,
		steps: append([]step(nil),
			step{watch.Added, vm("c", setUID, t1, false), t1},
			step{watch.Modified, vm("a", setUID, t0, true), t1},
			step{watch.Added, vm("d", setUID, time.Time{}, false), t1}),
		want: Report{Events: 4, FewestAvailable: 2, MostExisting: 4, Breaches: 1},
	}, {
		name:   "another owner's VMs are not the set's",
		bounds: two,
		steps: append([]step(nil),
			step{watch.Added, vm("x", "other", t0, false), t1},
			step{watch.Added, vm("y", "", t0, false), t1},
			step{watch.Modified, vm("b", "other", t0, false), t1}),
		want: Report{Events: 4, FewestAvailable: 1, MostExisting: 2, Breaches: 1},
	}, {
		name:   "ready for less than minReadySeconds is not available",
		bounds: Bounds{Desired: 2, Limits: replicaset.Limits{Surge: 1}, MinReady: 10 * time.Second},
		steps: append([]step(nil),
			step{watch.Added, vm("c", setUID, t1, false), t1},
			step{watch.Modified, vm("a", setUID, t0, true), t1.Add(5 * time.Second)},
			step{watch.Deleted, vm("a", setUID, t0, true), t1.Add(10 * time.Second)}),
		want: Report{Events: 4, FewestAvailable: 1, MostExisting: 3, Breaches: 1},
	}, {
		name:   "a VM whose clone vCenter refused is counted once, by zone",
		bounds: two,
		steps: append([]step(nil),
			step{watch.Added, refused("c", "zone-c", "1"), t1},
			step{watch.Modified, refused("c", "zone-c", "1"), t1},
			step{watch.Deleted, refused("c", "zone-c", "1"), t1},
			step{watch.Added, refused("d", "zone-a", "2"), t1}),
		want: Report{Events: 5, FewestAvailable: 2, MostExisting: 3, Refused: map[string]int{"zone-c": 1, "zone-a": 1}},
	}, {
		name:    "a VM made unavailable from outside, excused",
		bounds:  two,
		excused: 1,
		steps: append([]step(nil),
			step{watch.Modified, vm("a", setUID, time.Time{}, false), t1},
			step{watch.Added, vm("c", setUID, time.Time{}, false), t1},
			step{watch.Modified, vm("a", setUID, time.Time{}, true), t1},
			step{watch.Modified, vm("b", setUID, time.Time{}, false), t1}),
		want: Report{Events: 5, FewestAvailable: 0, MostExisting: 3, Breaches: 1},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// As Start does: the list (two VMs available since t0) at
			// t1, checked once, then each change.
			ta := newTally(setUID, tc.bounds)
			ta.put(watch.Added, vm("a", setUID, t0, false))
			ta.put(watch.Added, vm("b", setUID, t0, false))
			ta.check(t1, "the list")
			ta.excused = tc.excused
			for _, s := range tc.steps {
				ta.put(s.typ, s.vm)
				ta.check(s.at, string(s.typ)+" "+s.vm.Name)
			}
			got := ta.r
			got.First = nil // the descriptions are for people; Breaches counts them
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("report (-want +got):\n%s\nbreaches: %q", diff, ta.r.First)
			}
		})
	}
}

// TestBoundsOf checks that the bounds are the set's strategy as the
// planner resolves it, defaults and rounding included.
func TestBoundsOf(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { return ptr.To(intstr.Parse(s)) }
	tests := []struct {
		name     string
		replicas int32
		strategy vmv1.UpdateStrategy
		want     replicaset.Limits
	}{
		{"the default: one surge VM, none unavailable", 4, vmv1.UpdateStrategy{}, replicaset.Limits{Surge: 1}},
		{"percentages: surge rounds up, unavailable down", 9, vmv1.UpdateStrategy{MaxSurge: pct("25%"), MaxUnavailable: pct("25%")}, replicaset.Limits{Surge: 3, Unavailable: 2}},
		{"both zero: one unavailable", 3, vmv1.UpdateStrategy{MaxSurge: pct("0"), MaxUnavailable: pct("0")}, replicaset.Limits{Unavailable: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set := &vmv1.VirtualMachineReplicaSet{Spec: vmv1.VirtualMachineReplicaSetSpec{
				Replicas: ptr.To(tc.replicas), Strategy: tc.strategy, MinReadySeconds: 5,
				Selector: &vmv1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			}}
			got, err := BoundsOf(set)
			want := Bounds{Desired: int(tc.replicas), Limits: tc.want, MinReady: 5 * time.Second}
			if err != nil || got != want {
				t.Errorf("BoundsOf(%+v) = %+v, %v; want %+v", tc.strategy, got, err, want)
			}
		})
	}
}
