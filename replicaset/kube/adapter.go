package kube

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset"
)

// Spec is what an owner asks of its replica set, as its Adapter reads it.
type Spec struct {
	// Replicas is the desired number of children.
	Replicas int
	// Selector selects the owner's children. Required.
	Selector *metav1.LabelSelector
	// DeletePolicy names the deletion policy in the reconciler's Registry;
	// empty means "Random".
	DeletePolicy string
	// MinReady is how long a child must be ready to count as available.
	MinReady time.Duration
	// Paused leaves the children alone: no creates, deletes, adoptions
	// or releases; status is still reported, with the reason Paused.
	Paused bool
	// ReplaceDeleting replaces children being deleted at once instead of
	// counting them until they are gone.
	ReplaceDeleting bool
	// Zones lists the failure domains to spread children over
	// (replicaset.Spec.Zones: distinct, non-empty); empty spreads
	// nothing. A child's zone is its ZoneLabel label, unless the Adapter
	// is a [Zoner]; each new child is put in the zone the plan chose, and
	// creates avoid a zone for Reconciler.ZoneBackoff after one failed
	// there, or after a child there failed (replicaset.PhaseFailed), which
	// is then replaced in another zone (see the package documentation).
	Zones []string
	// Rebalance moves children back into balance across Zones, one at a
	// time, create before delete (replicaset.Spec.Rebalance).
	Rebalance bool
	// Unreachable lists the zones whose platform does not answer now,
	// which the Adapter's Spec knows from its own clients (a vCenter's
	// watch that lost its link, say): their children are unknown, not
	// gone, so they are never deleted, replaced or counted as gone, and at
	// most the rollout's MaxSurge (1 by default) stands in for them in
	// the other zones (replicaset.Spec.Unreachable). ZonesBalanced says
	// so, with the reason ZoneUnreachable. An owner with unreachable
	// zones is looked at again at least every UnreachableRecheck: a zone
	// answering again changes the plan, and no event about the owner or
	// its children may say so (a zone that held none of them).
	Unreachable []string
	// Rollout, when set, turns rollouts on: every child is labelled with
	// the revision of the owner's template it was made from
	// (RevisionLabel), the template's labels and annotations reach
	// existing children in place, and children made from an older
	// template are replaced under this strategy (replicaset.Compute
	// states the order and the bounds). The zero Strategy is a rolling
	// update of one surge child and none unavailable. Nil: children are
	// never replaced for their template, as before rollouts existed.
	//
	// A label the template drops is removed in place from the children
	// the binding put it on, which it records on each child in
	// AnnotationTemplateLabels; a label someone else put on a child
	// stays, and so does one a child carried before the binding recorded
	// anything (made before that annotation, or adopted). An annotation
	// the template drops stays on every child. Children without
	// RevisionLabel count as made from the current template unless the
	// Adapter is a TemplateMatcher (see RevisionLabel).
	Rollout *replicaset.Strategy
	// ProgressDeadline, with Rollout, is how long a rollout may go
	// without moving (no more children available on the current template,
	// no fewer on older ones) before RolledOut says so, with the reason
	// ProgressDeadlineExceeded, as a Deployment's progressDeadlineSeconds
	// does. It only reports: nothing is rolled back. Zero: no deadline.
	// The time of the last move is kept in memory, so a restarted
	// controller measures from its first pass.
	ProgressDeadline time.Duration
	// Remediation, when set, turns self-healing on: children that stay
	// unhealthy (as the Adapter's HealthChecker says, or not Ready without
	// one) are replaced, or restarted first with Restart (which needs an
	// Adapter that is a Restarter), under the guards replicaset.Compute
	// states. Each child's health is kept on it (AnnotationHealth), the
	// set's history on the owner (AnnotationRemediationHistory). Nil:
	// nothing is remediated, and no health is checked or written.
	Remediation *replicaset.Remediation
	// MaxUnhealthyField names, as the owner's API spells it, the field
	// the Adapter reads Remediation.MaxUnhealthy from, so that the
	// storm guard's message (ConditionRemediationAllowed) points the
	// user at it. Empty: "spec.remediation.maxUnhealthy".
	MaxUnhealthyField string
	// Lifecycle, when set, turns lifecycle hooks on: a child chosen to
	// leave, by scale-down, rollout, remediation or rebalancing, or by the
	// owner's own deletion, prepares first (AnnotationPreparing) and is
	// deleted only once its pre-delete hooks released it or timed out; a
	// new child counts as ready only once its launch gates opened. See
	// the package documentation's Lifecycle hooks section. Nil: children
	// are deleted as soon as they are chosen.
	Lifecycle *Lifecycle
}

// Status is what the reconciler reports; the Adapter copies it into the
// owner's status.
type Status struct {
	// Replicas counts live children (not being deleted).
	Replicas int32
	// FullyLabeledReplicas counts live children whose labels match the
	// template's labels.
	FullyLabeledReplicas int32
	// ReadyReplicas counts live, ready children.
	ReadyReplicas int32
	// AvailableReplicas counts live children ready for at least MinReady.
	AvailableReplicas int32
	// TerminatingReplicas counts children being deleted.
	TerminatingReplicas int32
	// UnknownReplicas counts live children whose state is unknown: their
	// zone is unreachable (Spec.Unreachable), or the Adapter described
	// them as replicaset.Replica.Unreachable (a VM its vCenter cannot
	// read). They are counted in Replicas, never in ReadyReplicas or
	// AvailableReplicas, and are neither replaced nor deleted.
	UnknownReplicas int32
	// ObservedGeneration is the owner generation this status describes.
	ObservedGeneration int64
	// Selector is the selector in string form, for the scale subresource.
	Selector string
	// Zones, when the spec lists zones, is the status per zone, with each
	// zone's backoff and whether it is unreachable: each listed zone in
	// order, then any other zone a live child is in. Nil when the spec
	// lists none. replicaset.Spread renders it on one line ("a=2 b=1
	// c=1"), for a printer column.
	Zones []replicaset.ZoneStatus
	// UpdatedReplicas counts live children made from the owner's current
	// template (with Spec.Rollout), or all live children (without).
	UpdatedReplicas int32
	// UpdatedReadyReplicas counts those of them that are ready.
	UpdatedReadyReplicas int32
	// UpdatedAvailableReplicas counts those of them that are available.
	UpdatedAvailableReplicas int32
	// UpdateRevision is the revision of the owner's current template
	// (RevisionLabel), with Spec.Rollout; empty without.
	UpdateRevision string
	// CurrentRevision is the revision the owner is rolling from: the
	// older revision most live children carry, or UpdateRevision once
	// none does (replicaset.RolloutStatus.Current), with Spec.Rollout;
	// empty without.
	CurrentRevision string
	// UnhealthyReplicas counts live children that are unhealthy
	// (replicaset.HealthStatus.Unhealthy), with Spec.Remediation; zero
	// without.
	UnhealthyReplicas int32
	// RemediationsAllowed is how many more children may be remediated
	// now (replicaset.HealthStatus.Allowed), with Spec.Remediation; zero
	// without.
	RemediationsAllowed int32
	// PreparingReplicas counts live children that prepare to leave
	// (AnnotationPreparing), with Spec.Lifecycle; zero without. They are
	// counted in Replicas too.
	PreparingReplicas int32
	// Conditions are ReplicaFailure, ScalingUp, ScalingDown and Ready,
	// ZonesBalanced when the spec lists zones, and RolledOut with
	// Spec.Rollout, RemediationAllowed with Spec.Remediation, Draining
	// with Spec.Lifecycle, each with
	// a reason saying why (see the Reason constants).
	Conditions []metav1.Condition
}

// Adapter tells the reconciler what only the owner's and the child's kinds
// know.
type Adapter[O, C client.Object] interface {
	// Spec reads the owner's spec. The owner is the cache's own object:
	// read it, never modify it. An error is invalid user input: the
	// reconciler reports it in a condition and does not retry; return
	// with it as much of the spec as could be read (Replicas, Zones),
	// which status and conditions still report against.
	Spec(owner O) (Spec, error)
	// NewChild returns a new child built from the owner's template:
	// labels, annotations and spec, copied, never shared with the owner
	// (the cache's own object). The reconciler sets its name, namespace
	// and controller reference.
	NewChild(owner O) (C, error)
	// Describe fills in what the child's kind knows of its replica:
	// Phase, Ready and ReadySince, and Unreachable when the child's
	// state is unknown (a VM its platform cannot read: counted, never
	// replaced nor deleted, reported in Status.UnknownReplicas). The
	// child is the cache's own object: read it, never modify it.
	Describe(child C, r *replicaset.Replica)
	// SetStatus copies s into the owner's status (on a copy of the
	// cache's object). The binding writes it as
	// a merge patch against the status it read, which leaves out fields
	// that did not change: a zero on an owner that has no status yet is not
	// sent, so give required status fields a default in the CRD
	// (+kubebuilder:default=0), as the example's VirtualMachineReplicaSet
	// does.
	SetStatus(owner O, s Status)
}
