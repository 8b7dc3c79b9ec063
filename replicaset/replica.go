package replicaset

import (
	"cmp"
	"time"
)

// Phase is where a replica is in its life cycle, as far as the binding that
// observed it can tell.
type Phase int

// The phases a replica can be in. The zero value is PhaseUnknown, so a
// binding that cannot tell reports the truth by saying nothing.
const (
	// PhaseUnknown means the binding could not tell the replica's phase.
	PhaseUnknown Phase = iota
	// PhasePending means the replica exists but is not yet provisioned
	// (for a VM: not yet cloned or not yet powered on).
	PhasePending
	// PhaseRunning means the replica is provisioned and running.
	PhaseRunning
	// PhaseFailed means the replica failed and will not run without help.
	PhaseFailed
)

// String returns the phase's name, as used in Plan.String.
func (p Phase) String() string { return enumName(p, phaseNames[:], "Phase") }

var phaseNames = [...]string{PhaseUnknown: "Unknown", PhasePending: "Pending", PhaseRunning: "Running", PhaseFailed: "Failed"}

// Replica is the planner's view of one replica: everything a scale decision
// or a deletion policy may depend on, and nothing else. Bindings build it
// from what they observed (a Kubernetes object, a vSphere VM); the planner
// never modifies it.
type Replica struct {
	// Name identifies the replica within its set. It must be non-empty and
	// unique among the replicas passed to Compute.
	Name string
	// UID is the replica's unique identifier, if the platform has one
	// (a Kubernetes UID, a vSphere instance UUID). Non-empty UIDs must be
	// unique among the replicas passed to Compute.
	UID string
	// CreatedAt is when the replica was created. The zero time means
	// unknown, and sorts before every real time.
	CreatedAt time.Time

	// Deleting reports that the replica is already being deleted (a
	// Kubernetes deletionTimestamp, a VM being destroyed). The planner never
	// deletes it again.
	Deleting bool
	// MarkedForDeletion reports that someone asked for this replica to be
	// removed first on the next scale-down (in the Kubernetes binding, an
	// annotation). Its place is stated in the package documentation's
	// Deletion order section.
	MarkedForDeletion bool
	// Protected reports that the replica is protected from scale-in: the
	// planner never chooses it, and reports a Shortfall when that prevents
	// reaching the desired count.
	Protected bool
	// DeletionCost is a hint for the deletion policy: among replicas it
	// would otherwise rank alike, those with a lower cost are deleted first
	// (as Kubernetes' controller.kubernetes.io/pod-deletion-cost). Compute
	// reads it only through the policy's Rank: the deletionpolicy package's
	// policies honour it, and a Ranker of your own decides whether to. The
	// default is 0.
	DeletionCost int64

	// Phase is the replica's life-cycle phase.
	Phase Phase
	// Ready reports that the replica is ready to serve.
	Ready bool
	// LaunchGated reports that a launch gate of the replica is still
	// closed (Spec.Lifecycle): something outside the set, such as a load
	// balancer's registration, has not yet said the replica may serve. A
	// gated replica is neither ready nor available, whatever Ready says,
	// and is judged by its start-up window (Remediation) until the gate
	// opens. The package documentation's Lifecycle hooks section states
	// the rules.
	LaunchGated bool
	// Unreachable reports that the platform cannot tell the replica's
	// state now, though its zone answers: a VM whose datastore went away
	// or whose host is disconnected, a Pod whose node stopped reporting.
	// Compute plans it as a replica of an unreachable zone (the package
	// documentation's Unreachable zones section): counted, never deleted,
	// never chosen, listed in Plan.Unknown.
	Unreachable bool
	// ReadySince is when the replica last became ready. It matters only when
	// Ready is true and the spec has a non-zero MinReady.
	ReadySince time.Time

	// Ordinal is the replica's index in an ordinal naming scheme (web-0,
	// web-1, …). It is meaningful only when HasOrdinal is true.
	Ordinal int
	// HasOrdinal reports whether Ordinal is set.
	HasOrdinal bool

	// Zone is the failure domain the replica runs in (Spec.Zones); empty
	// when unknown or when the set does not spread.
	Zone string

	// Revision is the revision the replica was made from (Spec.Revision);
	// empty when unknown, which counts as the wanted revision.
	Revision string

	// InPlace says how the replica could be brought onto Spec.Revision
	// without replacing it, when it is on an older revision: the
	// binding's judgement of its change (for a VM, the hardware it has
	// against the template's, and whether hot-add is on). Read only under
	// an in-place Strategy.Method. The zero value, InPlaceNone, has it
	// replaced. A binding whose in-place update of the replica failed for
	// good reports InPlaceNone, with the failure in InPlaceBlocker, so
	// that the method's fallback applies.
	InPlace InPlace
	// InPlaceBlocker says, in a phrase a person can act on, what keeps
	// the replica from a live update (InPlacePowerCycle: "memory lowered
	// from 8192 to 4096 MiB") or from any in-place update (InPlaceNone:
	// "another template VM"). Plan.Holds quotes it when UpdateInPlaceOnly
	// holds the replica.
	InPlaceBlocker string

	// Preparing is set while the replica prepares to leave: a pass chose
	// it for deletion (Plan.Prepare) and its pre-delete hooks run
	// (Spec.Lifecycle). Nil: it is not preparing. The binding records it
	// on the replica, so that a restarted controller goes on where the
	// last one was.
	Preparing *Preparing

	// Health is what a health check says of the replica, nil when
	// nothing is known; read only when the spec has a Remediation. A
	// pointer, so that sets without health pay 8 bytes a replica for it.
	Health *Health
}

// Available reports whether r counts as available at now: it is ready
// (and not Unreachable), not being deleted, and has been ready for at
// least minReady. A replica whose
// ReadySince is unknown (zero) is available only when minReady is zero.
//
// The boundary is inclusive: a replica ready since t is available at exactly
// t+minReady, so a caller that requeues for that instant sees it available
// on that pass.
func (r Replica) Available(minReady time.Duration, now time.Time) bool {
	return available(&r, minReady, now)
}

// available is Replica.Available on a pointer, for loops over many
// replicas: a Replica is 200 bytes to copy.
func available(r *Replica, minReady time.Duration, now time.Time) bool {
	if !r.ready() || r.Deleting {
		return false
	}
	if minReady <= 0 {
		return true
	}
	if r.ReadySince.IsZero() {
		return false
	}
	return !now.Before(r.ReadySince.Add(minReady))
}

// ready reports whether r is ready, no launch gate holds it, and the
// platform can tell (not Unreachable).
func (r *Replica) ready() bool { return r.Ready && !r.LaunchGated && !r.Unreachable }

// Env is what a deletion policy may know beside the replica itself: the
// moment the pass is computed for, the availability window and the owner's
// seed. All come from the caller, so ranking never reads a clock or a
// random source.
type Env struct {
	// Now is the time of the pass.
	Now time.Time
	// MinReady is how long a replica must have been ready to count as
	// available (Spec.MinReady).
	MinReady time.Duration
	// Seed is Spec.Seed: the owner's own seed, for policies with
	// randomness.
	Seed uint64
}

// Rank is a replica's place in a policy's deletion order. Ranks compare
// element by element, first element first; a lower rank is deleted earlier.
// Policies fill as many elements as they need and leave the rest zero.
type Rank [4]int64

// Compare returns -1, 0 or +1 as r sorts before, with, or after o.
func (r Rank) Compare(o Rank) int {
	for i := range r {
		if c := cmp.Compare(r[i], o[i]); c != 0 {
			return c
		}
	}
	return 0
}

// Ranker is a deletion policy as Compute consults it. Compute calls Rank once
// per candidate replica and orders candidates by it within the deletion
// order the package documentation states (Deletion order). The deletionpolicy package
// implements it.
//
// Rank must be a pure function of its arguments: the same replica and Env
// must always give the same Rank, or a retried pass could choose a different
// victim.
type Ranker interface {
	// Rank returns r's place in the deletion order.
	Rank(r Replica, env Env) Rank
}
