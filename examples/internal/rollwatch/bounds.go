package rollwatch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/replicaset"
)

// Bounds are what a set's rollout must keep to.
type Bounds struct {
	// Desired is the set's spec.replicas.
	Desired int
	// Limits are the set's strategy resolved for Desired.
	Limits replicaset.Limits
	// MinReady is the set's minReadySeconds: how long a VM must have been
	// ready to be available.
	MinReady time.Duration
}

// MinAvailable is the fewest available VMs the rollout may leave:
// Desired − Limits.Unavailable.
func (b Bounds) MinAvailable() int { return b.Desired - b.Limits.Unavailable }

// MaxExisting is the most VMs the rollout may have, counting those being
// deleted: Desired + Limits.Surge.
func (b Bounds) MaxExisting() int { return b.Desired + b.Limits.Surge }

// String states the bounds for a person.
func (b Bounds) String() string {
	return fmt.Sprintf("available ≥ %d (replicas %d − maxUnavailable %d), existing ≤ %d (replicas %d + maxSurge %d)",
		b.MinAvailable(), b.Desired, b.Limits.Unavailable, b.MaxExisting(), b.Desired, b.Limits.Surge)
}

// BoundsOf returns the bounds of set's spec, read as the operator reads it
// (controllers.ReplicaSetAdapter) and resolved as its planner resolves them
// (replicaset.Strategy.Limits).
func BoundsOf(set *vmv1.VirtualMachineReplicaSet) (Bounds, error) {
	// A Reset, as Setup gives the operator's adapter, so that a set
	// restarting unhealthy VMs reads as the operator reads it; only its
	// Spec is called.
	a := controllers.ReplicaSetAdapter{Zones: set.Spec.Zones,
		Reset: func(context.Context, *vmv1.VirtualMachine) error { return errors.New("rollwatch resets nothing") }}
	spec, err := a.Spec(set)
	if err != nil {
		return Bounds{}, err
	}
	if spec.Rollout == nil {
		return Bounds{}, errors.New("rollwatch: the operator reads no rollout strategy for the set")
	}
	return Bounds{Desired: spec.Replicas, Limits: spec.Rollout.Limits(spec.Replicas), MinReady: spec.MinReady}, nil
}

// Report is what a Watcher saw.
type Report struct {
	// Events counts the changes it checked, the first list included.
	Events int
	// FewestAvailable and MostExisting are the extremes it saw.
	FewestAvailable, MostExisting int
	// Breaches counts the changes after which a bound was broken, and
	// First describes the first few of them.
	Breaches int
	First    []string
	// Gaps counts the times the watch could not resume where it stopped
	// and listed again: what happened in between was not seen.
	Gaps int
	// Refused counts, by spec.zone, the set's VirtualMachines seen failing
	// because vCenter refused to clone their VM (the Ready reason
	// controllers.ReasonCreateFailed), each once.
	Refused map[string]int
}

// maxFirst is how many breaches a Report describes.
const maxFirst = 5

// vmState is what the tally keeps of one of the set's VirtualMachines.
type vmState struct {
	deleting   bool
	ready      bool
	readySince time.Time
}

// tally is the set's VirtualMachines as the watch has seen them so far,
// and the report of what it saw; it is fed one change at a time and does
// no I/O.
type tally struct {
	owner   types.UID
	bounds  Bounds
	excused int // VMs made unavailable from outside (Watcher.Excuse)
	vms     map[string]vmState
	refused map[types.UID]bool // the VMs counted in r.Refused
	r       Report
}

// newTally returns an empty tally of the VirtualMachines owner controls,
// checked against b.
func newTally(owner types.UID, b Bounds) *tally {
	return &tally{owner: owner, bounds: b, vms: map[string]vmState{}, refused: map[types.UID]bool{}, r: Report{Refused: map[string]int{}}}
}

// put records vm as it is now: the set's while the set controls it, gone
// when deleted or controlled by someone else.
func (t *tally) put(typ watch.EventType, vm *vmv1.VirtualMachine) {
	ref := metav1.GetControllerOfNoCopy(vm)
	if typ == watch.Deleted || ref == nil || ref.UID != t.owner {
		delete(t.vms, vm.Name)
		return
	}
	s := vmState{deleting: vm.DeletionTimestamp != nil}
	c := meta.FindStatusCondition(vm.Status.Conditions, "Ready")
	switch {
	case c == nil:
	case c.Status == metav1.ConditionTrue:
		s.ready, s.readySince = true, c.LastTransitionTime.Time
	case c.Reason == controllers.ReasonCreateFailed && !t.refused[vm.UID]:
		t.refused[vm.UID] = true
		t.r.Refused[vm.Spec.Zone]++
	}
	t.vms[vm.Name] = s
}

// check counts the set's VMs at now, after the change what, against the
// bounds.
func (t *tally) check(now time.Time, what string) {
	avail, exist := 0, len(t.vms)
	for _, s := range t.vms {
		if s.ready && !s.deleting && (t.bounds.MinReady <= 0 || !now.Before(s.readySince.Add(t.bounds.MinReady))) {
			avail++
		}
	}
	if t.r.Events == 0 {
		t.r.FewestAvailable, t.r.MostExisting = avail, exist
	}
	t.r.Events++
	t.r.FewestAvailable, t.r.MostExisting = min(t.r.FewestAvailable, avail), max(t.r.MostExisting, exist)
	var broken []string
	if floor := t.bounds.MinAvailable() - t.excused; avail < floor {
		broken = append(broken, fmt.Sprintf("%d available, below %d", avail, floor))
	}
	if exist > t.bounds.MaxExisting() {
		broken = append(broken, fmt.Sprintf("%d existing, above %d", exist, t.bounds.MaxExisting()))
	}
	if len(broken) == 0 {
		return
	}
	t.r.Breaches++
	if len(t.r.First) < maxFirst {
		t.r.First = append(t.r.First, fmt.Sprintf("after %s: %s; the set's VMs: %s", what, strings.Join(broken, ", "), t.describe(now)))
	}
}

// describe lists the set's VMs as the tally sees them at now, by name.
func (t *tally) describe(now time.Time) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(t.vms)) {
		s := t.vms[name]
		switch {
		case s.deleting:
			name += " (deleting)"
		case s.ready && t.bounds.MinReady > 0 && now.Before(s.readySince.Add(t.bounds.MinReady)):
			name += " (ready, not yet available)"
		case s.ready:
			name += " (available)"
		default:
			name += " (not ready)"
		}
		parts = append(parts, name)
	}
	return strings.Join(parts, ", ")
}
