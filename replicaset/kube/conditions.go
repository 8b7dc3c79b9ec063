package kube

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/replicaset"
)

// Reasons of the conditions the reconciler sets. Each condition's reason
// says why it has its status; the message gives the numbers or the error.
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
	// ReasonReplicaFailure means ScalingUp, ScalingDown, Ready or
	// ZonesBalanced cannot move because of what ReplicaFailure says.
	ReasonReplicaFailure = "ReplicaFailure"
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

	// ReasonZonesBalanced is ZonesBalanced's reason when it is True.
	ReasonZonesBalanced = "ZonesBalanced"
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
	// ReasonRolloutProgressing means children are being replaced.
	ReasonRolloutProgressing = "RolloutProgressing"
	// ReasonRolloutPaused means Strategy.Paused stops the rollout.
	ReasonRolloutPaused = "RolloutPaused"
	// ReasonRolloutHeld means a bound or setting holds the rollout this
	// pass (replicaset.Hold): the message names it and what waits on it.
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
	// ReasonProgressDeadlineExceeded means the rollout has not moved (no
	// more children available on the current template, no fewer on older
	// ones) for Spec.ProgressDeadline. The binding only reports it: it
	// never rolls back on its own.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
)

// conditions derives the owner's conditions from the pass.
func conditions(o *observation, d decision, out outcome, failed map[string]error, sum replicaset.Status, zones []ZoneStatus) []metav1.Condition {
	gen := o.owner.GetGeneration()
	cond := func(t string, ok bool, reason, msg string) metav1.Condition {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen}
	}
	failReason, failMsg := failure(d, out)
	failure := cond(ConditionReplicaFailure, failReason != ReasonNoFailure, failReason, failMsg)

	live, want := sum.Replicas, o.spec.Replicas
	counts := fmt.Sprintf("%d of %d replicas", live, want)
	switch {
	case sum.Terminating > 0 && o.spec.ReplaceDeleting:
		counts += fmt.Sprintf(", %d terminating", sum.Terminating)
	case sum.Terminating > 0:
		counts += fmt.Sprintf(", %d terminating (counted until gone)", sum.Terminating)
	}
	held := map[hold]string{holdFailure: ReasonReplicaFailure, holdPaused: ReasonPaused, holdDeleting: ReasonOwnerDeleting}[d.hold]
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
				"%s: %d above the desired count the rollout's surge (MaxSurge %d), not a scale-down; the replicas it replaces go as their replacements become available",
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

// rolloutSurge is how many of the live children above the owner's
// desired count are its rollout's surge, old of them being on older
// revisions: all of them when a rolling update is under way (Spec.Rollout
// a RollingUpdate, not paused, with more children on older revisions
// than its partition keeps) and they are no more than MaxSurge; none
// otherwise, the excess being a scale-down.
func rolloutSurge(o *observation, live, old int) int {
	r, want := o.spec.Rollout, o.spec.Replicas
	if r == nil || r.Type != replicaset.RollingUpdate || r.Paused || live <= want {
		return 0
	}
	lim := r.Limits(want)
	if old <= lim.Partition || live-want > lim.Surge {
		return 0
	}
	return live - want
}

// oldIn counts the members that live on an older revision than the
// owner's template (a child without a revision counts as current).
func oldIn(o *observation, members []child) int {
	n := 0
	for _, m := range members {
		if r := &m.replica; !r.Deleting && isOld(o, r) {
			n++
		}
	}
	return n
}

// isOld reports whether r is on an older revision than the owner's
// template.
func isOld(o *observation, r *replicaset.Replica) bool {
	return o.spec.Rollout != nil && r.Revision != "" && r.Revision != o.revision
}

// holdReasons names the first kind of holds and gives every reason, but
// those of new children waiting for room (HoldMaxSurge), as RolledOut
// does; "" when no other hold is left.
func holdReasons(holds []replicaset.Hold) string {
	var why []string
	kind := ""
	for _, h := range holds {
		if h.By == replicaset.HoldMaxSurge {
			continue
		}
		if kind == "" {
			kind = h.By.String()
		}
		why = append(why, h.Reason)
	}
	if kind == "" {
		return ""
	}
	return kind + ": " + strings.Join(why, "; ")
}

// surgeBalanced reports whether a rollout's surge is all that keeps the
// listed zones from being within one of each other, now or once the pass's
// plan is carried out, and how many children the surge is. In each of the
// two states, the children above the desired count (when they are a
// rollout's surge, see rolloutSurge) are taken away as the rollout will
// take them: as many children on older revisions, each from the fullest
// zone that holds one; the rest must then be within one of each other,
// with none outside the listed zones. It is false when neither state has
// a surge.
func surgeBalanced(o *observation, d decision) (surge int, ok bool) {
	idx := make(map[string]int, len(o.spec.Zones))
	for i, z := range o.spec.Zones {
		idx[z] = i
	}
	n := len(o.spec.Zones)
	zone := func(z string) int {
		if i, ok := idx[z]; ok {
			return i
		}
		return n // every child outside the listed zones
	}
	live, old := make([]int, n+1), make([]int, n+1)
	for _, m := range d.members {
		if r := &m.replica; !r.Deleting {
			live[zone(r.Zone)]++
			if isOld(o, r) {
				old[zone(r.Zone)]++
			}
		}
	}
	now := evenButSurge(o, live, old)
	if now < 0 {
		return 0, false
	}
	for _, r := range append(slices.Clip(d.plan.Delete), d.replaced...) {
		live[zone(r.Zone)]--
		if isOld(o, &r) {
			old[zone(r.Zone)]--
		}
	}
	for _, z := range d.plan.CreateZones {
		live[zone(z)]++
	}
	after := evenButSurge(o, live, old)
	if after < 0 || now == 0 && after == 0 {
		return 0, false
	}
	return max(now, after), true
}

// evenButSurge takes a rollout's surge away from live, children per zone
// (the listed zones, then one count for every child outside them), old
// of them on older revisions, as surgeBalanced says, and returns the
// surge, or -1 when the zones are then not within one of each other.
func evenButSurge(o *observation, live, old []int) int {
	live, old = slices.Clone(live), slices.Clone(old)
	total, olds := 0, 0
	for i := range live {
		total, olds = total+live[i], olds+old[i]
	}
	surge := rolloutSurge(o, total, olds)
	last := len(live) - 1
	// from picks where a child with a count in c goes: outside the
	// listed zones first, then from the fullest listed zone; -1 when
	// none has one.
	from := func(c []int) int {
		if c[last] > 0 {
			return last
		}
		at := -1
		for i := range last {
			if c[i] > 0 && (at < 0 || live[i] > live[at]) {
				at = i
			}
		}
		return at
	}
	for range surge {
		at := from(old) // those it replaces; past them, new children
		if at < 0 {
			at = from(live)
		}
		if at < 0 {
			break
		}
		live[at]--
		old[at] = max(0, old[at]-1)
	}
	listed := live[:last]
	if live[last] > 0 || len(listed) > 0 && slices.Max(listed)-slices.Min(listed) > 1 {
		return -1
	}
	return surge
}

// failure gives ReplicaFailure's reason and message: the most pressing
// problem, with the children's annotation problems added after it.
func failure(d decision, out outcome) (reason, msg string) {
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
// (the spec no longer lists zones). Adapters call it from SetStatus.
func (s Status) MergeConditions(existing *[]metav1.Condition) {
	for _, c := range s.Conditions {
		meta.SetStatusCondition(existing, c)
	}
	if meta.FindStatusCondition(s.Conditions, ConditionZonesBalanced) == nil {
		meta.RemoveStatusCondition(existing, ConditionZonesBalanced)
	}
}
