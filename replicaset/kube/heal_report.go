package kube

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/replicakit/replicakit/replicaset"
)

// ConditionRemediationAllowed says, with Spec.Remediation, whether
// unhealthy children may be remediated now: True (reason
// RemediationAllowed), or False with the reason naming the guard that
// stops it, which is the planner's hold of that guard
// (replicaset.HoldTooManyUnhealthy, HoldSuspended, HoldRemediationBackoff,
// HoldInFlight: their String, TooManyUnhealthy, Suspended,
// RemediationBackoff, RemediationInFlight), or why the pass holds
// (ReplicaFailure, Paused, OwnerDeleting). Absent without
// Spec.Remediation.
//
// The guards' reasons mean: TooManyUnhealthy, more children are
// unhealthy than Remediation.MaxUnhealthy allows
// (replicaset.HealthStatus.Storm), so the fault is taken to be outside
// them and none is remediated but those asked for (AnnotationRemediate);
// Suspended, Remediation.MaxFailures replacements in a row never became
// healthy, and nothing is remediated until a child started since is
// healthy; RemediationBackoff, remediation waits after a replacement that
// failed (Remediation.Backoff, doubling); RemediationInFlight,
// Remediation.MaxInFlight remediations are under way and more wait until
// they end.
//
// Its reason when it is True is its own name, RemediationAllowed: the
// guards let unhealthy children be remediated now; the message says how
// many more may be.
const ConditionRemediationAllowed = "RemediationAllowed"

// remediationCondition is ConditionRemediationAllowed for the pass.
func remediationCondition(o *observation, d decision) metav1.Condition {
	c := metav1.Condition{Type: ConditionRemediationAllowed, Status: metav1.ConditionFalse, ObservedGeneration: o.owner.GetGeneration()}
	h := d.plan.Health
	counts := fmt.Sprintf("%d unhealthy, %d remediations under way, %d more allowed", h.Unhealthy, h.InFlight, h.Allowed)
	held := map[hold]string{holdFailure: ConditionReplicaFailure, holdPaused: ReasonPaused, holdDeleting: ReasonOwnerDeleting}[d.hold]
	history, _ := historyFor(o)
	switch {
	case held != "":
		c.Reason, c.Message = held, "nothing is remediated while the pass holds"
	case h.Storm:
		c.Reason, c.Message = replicaset.HoldTooManyUnhealthy.String(), counts+": "+stormMessage(o.spec, h)
	case h.Suspended:
		c.Reason, c.Message = replicaset.HoldSuspended.String(), fmt.Sprintf("%s: %d replacements in a row never became healthy", counts, history.Failures)
	case !h.BackoffUntil.IsZero():
		c.Reason, c.Message = replicaset.HoldRemediationBackoff.String(), fmt.Sprintf("%s: waiting until %s after %d failed replacements, the last at %s",
			counts, h.BackoffUntil.UTC().Format(time.RFC3339), history.Failures, history.Last.UTC().Format(time.RFC3339))
	case h.Allowed == 0:
		c.Reason, c.Message = replicaset.HoldInFlight.String(), counts
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ConditionRemediationAllowed, counts
	}
	return c
}

// defaultMaxUnhealthyField is where Spec.MaxUnhealthyField points when
// the Adapter names no field.
const defaultMaxUnhealthyField = "spec.remediation.maxUnhealthy"

// stormMessage says, in the owner's words, why the storm guard holds,
// after the counts (how many are unhealthy): the limit as a number and
// how it came from a percentage ("40% of 5 is 2"), and the field's path.
func stormMessage(s Spec, h replicaset.HealthStatus) string {
	field := cmp.Or(s.MaxUnhealthyField, defaultMaxUnhealthyField)
	amount, set := s.Remediation.MaxUnhealthy, s.Remediation.MaxUnhealthy.IsSet()
	if !set {
		amount = replicaset.DefaultMaxUnhealthy
	}
	var how []string
	if v := amount.String(); strings.HasSuffix(v, "%") {
		pct, _ := strconv.Atoi(strings.TrimSuffix(v, "%"))
		switch floor := pct * s.Replicas / 100; {
		case max(floor, 1) != h.MaxUnhealthy:
			// The planner resolved it for fewer: some children unknown.
			how = append(how, fmt.Sprintf("%s of the children it can see is %d", v, h.MaxUnhealthy))
		case floor < 1:
			how = append(how, fmt.Sprintf("%s of %d, rounded down, is 0, and at least 1", v, s.Replicas))
		default:
			how = append(how, fmt.Sprintf("%s of %d is %d", v, s.Replicas, h.MaxUnhealthy))
		}
	}
	if !set {
		how = append(how, "its default")
	}
	why := ""
	if len(how) > 0 {
		why = " (" + strings.Join(how, ", ") + ")"
	}
	return fmt.Sprintf("more than the %d %s allows%s, so the fault is taken to be outside the children and none is remediated",
		h.MaxUnhealthy, field, why)
}

// healEvents lists one event per child remediated in the pass: each
// replaced child the pass deleted (Remediating), each child it restarted
// (Restarting), naming the child and its health reason.
func healEvents(d decision, out outcome) []note {
	var evs []note
	for _, r := range d.plan.Replace {
		prepared := slices.ContainsFunc(d.plan.Prepare, func(x replicaset.Replica) bool { return x.UID == r.UID }) &&
			slices.Contains(out.updated, r.Name)
		if !slices.Contains(out.acted.Deleted, r.Name) && !prepared || len(d.replaced) > 0 {
			continue // not deleted; or failed, without remediation (ReplacingFailed)
		}
		reason := healthReason(r.Health)
		if r.Health == nil && r.Phase == replicaset.PhaseFailed {
			reason = "failed"
		}
		evs = append(evs, note{corev1.EventTypeWarning, "Remediating", "Delete",
			fmt.Sprintf("Replacing unhealthy child %s: %s", r.Name, reason), memberObject(d, r.Name)})
	}
	for _, x := range out.restarted {
		evs = append(evs, note{corev1.EventTypeWarning, "Restarting", "Restart",
			fmt.Sprintf("Restarted unhealthy child %s: %s", x.from.GetName(), x.reason), x.from})
	}
	return evs
}

// healthReason is h's reason, or what stands for it.
func healthReason(h *replicaset.Health) string {
	switch {
	case h == nil:
		return "unknown"
	case h.RemediateNow && h.Reason == "":
		return "asked for (" + AnnotationRemediate + ")"
	case h.Reason == "":
		return "failed"
	}
	return h.Reason
}

// nextCheck shortens requeue to when the plan's health windows or backoff
// end (replicaset.HealthStatus.NextCheck), when that is sooner.
func nextCheck(d decision, now time.Time, requeue time.Duration) time.Duration {
	at := d.plan.Health.NextCheck
	if l := d.plan.Lifecycle.NextCheck; !l.IsZero() && (at.IsZero() || l.Before(at)) {
		at = l
	}
	if at.IsZero() {
		return requeue
	}
	after := max(at.Sub(now), soon)
	if requeue == 0 || after < requeue {
		return after
	}
	return requeue
}
