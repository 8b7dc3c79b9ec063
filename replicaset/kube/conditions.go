package kube

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/replicaset"
)

// Reasons of the conditions the reconciler sets. Each condition's reason
// says why it has its status; the message gives the numbers or the error.
//
// A condition held by the planner has the hold's kind as its reason
// (replicaset.HoldKind.String), and the package declares no constant for
// it: RemediationAllowed is False with TooManyUnhealthy, Suspended,
// RemediationBackoff or RemediationInFlight (replicaset.HoldTooManyUnhealthy,
// HoldSuspended, HoldRemediationBackoff, HoldInFlight), and ReplicaFailure
// is True with HookAbandoned (replicaset.HoldHookAbandoned) while hooks
// hold children past their timeout with Lifecycle.Abandon. Compare
// a condition's reason with, say, replicaset.HoldSuspended.String(). The
// constants below are the binding's own reasons: what it finds in the
// spec, the children and its own writes, and how it sums the plan up.
const (
	// ReasonNoFailure is ReplicaFailure's reason when it is False.
	ReasonNoFailure = "NoFailure"
	// ReasonInvalidSpec means the spec or template cannot be used;
	// nothing is done until it changes.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonUnknownDeletePolicy means the spec names a policy the
	// Reconciler's registry does not have; the message lists the known
	// ones.
	ReasonUnknownDeletePolicy = "UnknownDeletePolicy"
	// ReasonSelectorMismatch means the selector does not select the
	// template's labels.
	ReasonSelectorMismatch = "SelectorMismatch"
	// ReasonNeedsOrdinalNames means the policy orders by ordinal while
	// children are named randomly.
	ReasonNeedsOrdinalNames = "NeedsOrdinalNames"
	// ReasonOwnerUnconfirmed means the read of the owner from the API
	// server, before adopting, releasing or creating, failed; the pass
	// did nothing and is retried.
	ReasonOwnerUnconfirmed = "OwnerUnconfirmed"
	// ReasonFailedClaim means adopting or releasing a child failed.
	ReasonFailedClaim = "FailedClaim"
	// ReasonFailedReplicaOperation means a create or delete failed.
	ReasonFailedReplicaOperation = "FailedReplicaOperation"
	// ReasonNameTaken means a create found its name held by someone
	// else's object; the child is created under another name at once.
	ReasonNameTaken = "NameTaken"
	// ReasonScaleInProtected means protected children keep the set above
	// its desired count.
	ReasonScaleInProtected = "ScaleInProtected"
	// ReasonInvalidAnnotation means a child's annotation could not be
	// read; the message names the child and the value.
	ReasonInvalidAnnotation = "InvalidAnnotation"

	// ReasonScaling means ScalingUp or ScalingDown is True: the set is on
	// its way to the desired count; for ZonesBalanced, that the pass's
	// creates and deletes bring the zones within one of each other.
	ReasonScaling = "Scaling"
	// ReasonDesiredReplicas means ScalingUp or ScalingDown is False
	// because there is nothing to do in that direction.
	ReasonDesiredReplicas = "DesiredReplicas"
	// ReasonPaused means the owner is paused, so nothing changes (also
	// ZonesBalanced's reason when the zones are out of balance then).
	ReasonPaused = "Paused"
	// ReasonOwnerDeleting means the owner is being deleted; the garbage
	// collector removes its children (also ZonesBalanced's reason then).
	ReasonOwnerDeleting = "OwnerDeleting"
	// ReasonReplicasReady is Ready's reason when it is True.
	ReasonReplicasReady = "ReplicasReady"
	// ReasonTooFewReplicas means Ready is False because fewer children
	// live than desired.
	ReasonTooFewReplicas = "TooFewReplicas"
	// ReasonTooManyReplicas means Ready is False because more children
	// live than desired.
	ReasonTooManyReplicas = "TooManyReplicas"
	// ReasonReplicasNotReady means Ready is False because fewer children
	// than desired are ready.
	ReasonReplicasNotReady = "ReplicasNotReady"

	// ReasonZoneFailing means creates failed in a zone, or a child failed
	// there after it was made (replicaset.PhaseFailed), and new children
	// avoid it until its backoff ends; the message names it.
	ReasonZoneFailing = "ZoneFailing"
	// ReasonRebalancing means Spec.Rebalance is moving children back
	// into balance, one at a time.
	ReasonRebalancing = "Rebalancing"
	// ReasonPerPassCap means the per-pass cap deferred the creates or
	// deletes that would balance the zones; the next pass does more.
	ReasonPerPassCap = "PerPassCap"
	// ReasonUnbalanced means the zones stay out of balance and nothing
	// moves them: children are not moved between zones without
	// Spec.Rebalance, children that had to go first were not in the
	// fullest zone, or protected children sit where Rebalance cannot
	// take them from.
	ReasonUnbalanced = "Unbalanced"
	// ReasonZoneUnreachable means a listed zone's platform does not
	// answer (Spec.Unreachable): its children are unknown, and the
	// message says how many and what stands in for them.
	ReasonZoneUnreachable = "ZoneUnreachable"

	// ReasonRolloutComplete means every live child is on the owner's
	// current template and available (RolledOut is True).
	ReasonRolloutComplete = "RolloutComplete"
	// ReasonRolloutPartitioned means the rollout went as far as
	// Strategy.Partition lets it: the children it keeps aside stay on
	// older templates (RolledOut is True).
	ReasonRolloutPartitioned = "RolloutPartitioned"
	// ReasonRolloutProgressing means children are being replaced, or the
	// rollout waits for the children it made on the current template to
	// become available, or for those it deletes to go, as every healthy
	// rollout does between steps (the message then says for how many).
	ReasonRolloutProgressing = "RolloutProgressing"
	// ReasonRolloutPaused means Strategy.Paused stops the rollout.
	ReasonRolloutPaused = "RolloutPaused"
	// ReasonRolloutHeld means a bound or setting holds the rollout this
	// pass (replicaset.Hold) and nothing under way will lift it: no child
	// on the current template is coming up, or the hold is one that such
	// a child does not lift (a zone backing off, protection, OnDelete, an
	// unreachable zone). The message names it and what waits on it.
	// ScalingDown is False with it when more children live than desired,
	// beyond a rollout's surge, and the plan's Holds keep every one of
	// them this pass.
	ReasonRolloutHeld = "RolloutHeld"
	// ReasonRolloutSurge means a rolling update's surge is up: more
	// children live than desired, no more above it than Strategy.MaxSurge
	// allows, while children on older revisions remain to be replaced.
	// That is a rollout, not a fault, and no condition treats it as one:
	// ScalingDown is False with it (the rollout deletes the children it
	// replaces as their replacements become available; nothing is scaled
	// down), Ready is True with it when the desired count of children
	// are ready, and ZonesBalanced is True with it when the zones are
	// within one of each other once the children the surge replaces are
	// gone. More children above the desired count than MaxSurge is a
	// scale-down, reported as one (ScalingDown, and Ready False with
	// TooManyReplicas); so is any excess while the rollout is paused or
	// has nothing left to replace.
	ReasonRolloutSurge = "RolloutSurge"
	// ReasonRolloutInPlace means children are not ready because the
	// rollout changes them in place with a power cycle (or drains them
	// for one: AnnotationInPlaceRevision, AnnotationPreparingUpdate), no
	// more of them than Strategy.MaxUnavailable allows: Ready is True
	// with it, since a rollout that takes a child down within its bound is
	// not a fault. Children not ready for any other reason, or more than
	// MaxUnavailable, make Ready False (ReplicasNotReady).
	ReasonRolloutInPlace = "RolloutInPlace"
	// ReasonProgressDeadlineExceeded means the rollout has not moved (no
	// more children available on the current template, no fewer on older
	// ones) for Spec.ProgressDeadline. The binding only reports it: it
	// never rolls back on its own.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
)

// conditions derives the owner's conditions from the pass.
func conditions(o *observation, d decision, out outcome, failed map[string]error, sum replicaset.Status, zones []replicaset.ZoneStatus) []metav1.Condition {
	gen := o.owner.GetGeneration()
	cond := func(t string, ok bool, reason, msg string) metav1.Condition {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen}
	}
	failReason, failMsg := failure(o, d, out)
	failure := cond(ConditionReplicaFailure, failReason != ReasonNoFailure, failReason, failMsg)

	live, want := sum.Replicas, o.spec.Replicas
	counts := fmt.Sprintf("%d of %d replicas", live, want)
	switch {
	case sum.Terminating > 0 && o.spec.ReplaceDeleting:
		counts += fmt.Sprintf(", %d terminating", sum.Terminating)
	case sum.Terminating > 0:
		counts += fmt.Sprintf(", %d terminating (counted until gone)", sum.Terminating)
	}
	if sum.Unknown > 0 {
		counts += fmt.Sprintf(", %d unknown (counted, neither replaced nor deleted until their state is known)", sum.Unknown)
	}
	held := map[hold]string{holdFailure: ConditionReplicaFailure, holdPaused: ReasonPaused, holdDeleting: ReasonOwnerDeleting}[d.hold]
	// A rollout's surge is not a scale-down: the children at the desired
	// count are what Ready and ScalingDown judge.
	surge := 0
	if d.hold != holdFailure {
		surge = rolloutSurge(o, live, oldIn(o, d.members))
	}
	counted := live - surge
	scaling := func(t string, needed bool) metav1.Condition {
		switch {
		case !needed:
			return cond(t, false, ReasonDesiredReplicas, counts)
		case held != "":
			return cond(t, false, held, counts)
		case t == ConditionScalingDown && surge > 0:
			return cond(t, false, ReasonRolloutSurge, fmt.Sprintf(
				"%s, the rollout's surge of %d (MaxSurge %d) included: not a scale-down; the replicas it replaces go as their replacements become available",
				counts, surge, o.spec.Rollout.Limits(want).Surge))
		case t == ConditionScalingDown && d.plan.Shortfall.Count > 0 && len(d.delete) == 0 && d.plan.Deferred == 0:
			return cond(t, false, ReasonScaleInProtected, d.plan.Shortfall.Reason)
		case t == ConditionScalingDown && len(d.plan.Delete) == 0 && !d.capped && holdReasons(d.plan.Holds) != "":
			return cond(t, false, ReasonRolloutHeld, counts+"; held by "+holdReasons(d.plan.Holds))
		}
		return cond(t, true, ReasonScaling, counts)
	}
	ready := fmt.Sprintf("%d of %d replicas ready", sum.Ready, want)
	var readiness metav1.Condition
	switch {
	case held != "" && (counted != want || sum.Ready < want):
		readiness = cond(ConditionReady, false, held, ready)
	case counted > want && d.plan.Shortfall.Count > 0:
		readiness = cond(ConditionReady, false, ReasonScaleInProtected, d.plan.Shortfall.Reason)
	case counted > want:
		readiness = cond(ConditionReady, false, ReasonTooManyReplicas, counts)
	case counted < want:
		readiness = cond(ConditionReady, false, ReasonTooFewReplicas, counts)
	case sum.Ready < want && cyclingInPlace(o, d.members, want-sum.Ready):
		readiness = cond(ConditionReady, true, ReasonRolloutInPlace, fmt.Sprintf(
			"%s; the %d not ready are being changed in place with a power cycle, within MaxUnavailable %d",
			ready, want-sum.Ready, o.spec.Rollout.Limits(want).Unavailable))
	case sum.Ready < want:
		readiness = cond(ConditionReady, false, ReasonReplicasNotReady, ready)
	case surge > 0:
		readiness = cond(ConditionReady, true, ReasonRolloutSurge, fmt.Sprintf("%s, %d live with the rollout's surge of %d", ready, live, surge))
	default:
		readiness = cond(ConditionReady, true, ReasonReplicasReady, ready)
	}
	conds := []metav1.Condition{
		failure,
		scaling(ConditionScalingUp, live < want),
		scaling(ConditionScalingDown, live > want),
		readiness,
	}
	if len(o.spec.Zones) > 0 {
		conds = append(conds, zonesCondition(o, d, zones, cond))
	}
	return conds
}

// failure gives ReplicaFailure's reason and message: the most pressing
// problem, with the children's annotation problems added after it.
func failure(o *observation, d decision, out outcome) (reason, msg string) {
	var unknown *deletionpolicy.UnknownPolicyError
	switch {
	case d.hold == holdFailure && errors.As(d.failure, &unknown):
		reason, msg = ReasonUnknownDeletePolicy, unknown.Error()
	case d.hold == holdFailure && errors.Is(d.failure, ErrSelectorMismatch):
		reason, msg = ReasonSelectorMismatch, d.failure.Error()
	case d.hold == holdFailure && errors.Is(d.failure, ErrNeedsOrdinalNames):
		reason, msg = ReasonNeedsOrdinalNames, d.failure.Error()
	case d.hold == holdFailure:
		reason, msg = ReasonInvalidSpec, d.failure.Error()
	case out.confirmErr != nil:
		reason, msg = ReasonOwnerUnconfirmed, out.confirmErr.Error()
	case out.claimErr != nil:
		reason, msg = ReasonFailedClaim, out.claimErr.Error()
	case onlyTaken(out.acted.Err):
		reason, msg = ReasonNameTaken, out.acted.Err.Error()
	case out.acted.Err != nil:
		reason, msg = ReasonFailedReplicaOperation, out.acted.Err.Error()
	case d.plan.Shortfall.Count > 0:
		reason, msg = ReasonScaleInProtected, d.plan.Shortfall.Reason
	case len(d.plan.Lifecycle.Abandoned) > 0:
		reason, msg = replicaset.HoldHookAbandoned.String(), abandonedMessage(o, d)
	case len(d.warnings) > 0:
		return ReasonInvalidAnnotation, listNote(d.warnings, "; ", maxNote)
	default:
		return ReasonNoFailure, ""
	}
	if len(d.warnings) > 0 {
		msg += "; " + listNote(d.warnings, "; ", maxNote)
	}
	return reason, msg
}

// MergeConditions sets s's conditions into existing with
// meta.SetStatusCondition, which keeps the transition time of a condition
// whose status did not change, and removes ZonesBalanced when s has none
// (the spec no longer lists zones), RemediationAllowed when s has none
// (the spec no longer asks for remediation) and Draining when s has none
// (the spec no longer has a Lifecycle). Adapters call it from SetStatus.
func (s Status) MergeConditions(existing *[]metav1.Condition) {
	for _, c := range s.Conditions {
		meta.SetStatusCondition(existing, c)
	}
	if meta.FindStatusCondition(s.Conditions, ConditionZonesBalanced) == nil {
		meta.RemoveStatusCondition(existing, ConditionZonesBalanced)
	}
	if meta.FindStatusCondition(s.Conditions, ConditionRemediationAllowed) == nil {
		meta.RemoveStatusCondition(existing, ConditionRemediationAllowed)
	}
	if meta.FindStatusCondition(s.Conditions, ConditionDraining) == nil {
		meta.RemoveStatusCondition(existing, ConditionDraining)
	}
}

// cyclingInPlace reports whether the missing children that keep the
// owner short of ready are a rollout's power cycles within its
// MaxUnavailable: every live member that is not ready is being changed in
// place or drained for that (AnnotationInPlaceRevision,
// AnnotationPreparingUpdate), and missing is at most MaxUnavailable.
func cyclingInPlace(o *observation, members []child, missing int) bool {
	if o.spec.Rollout == nil || o.spec.Rollout.Method == replicaset.UpdateReplace || missing > o.spec.Rollout.Limits(o.spec.Replicas).Unavailable {
		return false
	}
	cycling := 0
	for _, c := range members {
		if c.replica.Deleting || c.replica.Ready && !c.replica.LaunchGated {
			continue
		}
		a := c.obj.GetAnnotations()
		if a[AnnotationPreparingUpdate] != o.revision && a[AnnotationInPlaceRevision] != o.revision {
			return false // not ready for another reason, or a stale mark
		}
		cycling++
	}
	return cycling >= missing
}
