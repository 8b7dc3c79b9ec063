package kube

import (
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/execute"
)

// waitRequeue is how soon an owner whose expectations are unmet is looked
// at again, should no watch event come first.
const waitRequeue = time.Second

// UnreachableRecheck is how often an owner with unreachable zones
// (Spec.Unreachable) is looked at again, should no event come first.
const UnreachableRecheck = 10 * time.Second

// soon is the requeue of a pass that left work for the next one at once
// (the per-pass cap, a name found taken).
const soon = time.Millisecond

// verdict is what a pass says after acting: the owner's status, its events,
// which expectations to drop, which names were found taken, and when to
// look again. settle computes it without any I/O.
type verdict struct {
	status Status
	events []note
	// forgive lists created or adopted names that will never show up;
	// forgiveUIDs lists deleted or released UIDs that will not go.
	forgive     []string
	forgiveUIDs []string
	taken       []string
	// zones is the zones' part of the owner's History after the pass
	// (History.After): the zones still backing off and those that failed
	// in it, and whether its creates failed.
	zones replicaset.History
	// publish says to write status. A pass whose writes all succeeded,
	// and a pass waiting for the cache to show earlier writes, leave it to
	// the pass that sees those writes: what they observed is already
	// stale, and that pass is sure to come (the writes' own watch events
	// start it).
	publish bool
	requeue time.Duration
	// retry is returned to controller-runtime, which retries with
	// backoff; terminal is returned as a terminal error (not retried).
	retry    error
	terminal error
}

// note is one event to record on the owner.
type note struct {
	kind, reason, action, text string
	// related is the child the event is about, when it is about one: the
	// event's related object. Events of one owner, reason and action are
	// a series (client-go's events recorder keys them so, not by their
	// text), so an event per child needs its child to tell it apart.
	related client.Object
}

// settle turns the observation, the decision and what apply did into the
// pass's verdict.
func settle(o *observation, d decision, out outcome) verdict {
	var v verdict
	failed := failures(out.acted)
	v.forgive, v.forgiveUIDs, v.taken = forgiveness(d, out, failed)
	v.zones = zonesAfter(o, d, out)
	v.status = status(o, d, out, failed, v.zones.ZoneBackoff)
	acted := out.ran || len(out.adopted) > 0 || len(out.released) > 0 || len(out.updated) > 0 || len(out.restarted) > 0 || d.historyChanged
	// A delete that left a changed child wrote nothing: the pass that
	// sees the change would only come with that child's event.
	clean := out.claimErr == nil && out.acted.Err == nil && out.updateErr == nil && len(out.changed) == 0 &&
		out.restartErr == nil && out.historyErr == nil && out.finalizerErr == nil
	// A gone owner has no status to write; a pass that could not confirm
	// its owner writes what it saw, with the error.
	v.publish = !(acted && clean) && d.hold != holdWaiting && !out.ownerGone
	v.events = append(eventsOf(d, out, failed), healEvents(d, out)...)
	v.events = append(v.events, lifecycleEvents(d, out, o.spec.Lifecycle != nil)...)

	takenOnly := onlyTaken(out.acted.Err)
	switch {
	case out.ownerGone:
	case out.confirmErr != nil:
		v.retry = out.confirmErr
	case out.claimErr != nil:
		v.retry = out.claimErr
	case out.acted.Err != nil && !takenOnly:
		v.retry = errors.Join(out.acted.Err, out.updateErr)
	case out.updateErr != nil || out.restartErr != nil || out.historyErr != nil || out.finalizerErr != nil:
		v.retry = errors.Join(out.updateErr, out.restartErr, out.historyErr, out.finalizerErr)
	case d.hold == holdFailure:
		v.terminal = d.failure
	case takenOnly || d.hold == holdNone && d.capped || out.finalizerRetry:
		v.requeue = soon
	case d.hold == holdWaiting:
		v.requeue = waitRequeue
	default:
		if after, ok := nextAvailable(replicasOf(d.members), o.spec.MinReady, o.now); ok {
			v.requeue = after
		}
		// A rollout's progress deadline passing changes its status, and
		// no event will say so.
		if o.spec.Rollout != nil {
			rs := replicaset.RolloutStatus{UpdatedAvailable: int(v.status.UpdatedAvailableReplicas),
				Old: int(v.status.Replicas - v.status.UpdatedReplicas), Complete: meta.IsStatusConditionTrue(v.status.Conditions, ConditionRolledOut)}
			if stuck, at := stalled(o, rs); !stuck && !at.IsZero() && (v.requeue == 0 || at.Sub(o.now) < v.requeue) {
				v.requeue = at.Sub(o.now)
			}
		}
		// A zone's backoff ending changes the plan (creates may go
		// there again; Rebalance may move children back), and no
		// event will say so.
		for _, b := range v.zones.ZoneBackoff {
			if after := b.Until.Sub(o.now); v.requeue == 0 || after < v.requeue {
				v.requeue = after
			}
		}
		// Nor of a zone answering again.
		if len(o.spec.Unreachable) > 0 && (v.requeue == 0 || UnreachableRecheck < v.requeue) {
			v.requeue = UnreachableRecheck
		}
		// A child left because it changed: its watch event starts the
		// next pass, which plans with the change; this is the fallback.
		if len(out.changed) > 0 && (v.requeue == 0 || waitRequeue < v.requeue) {
			v.requeue = waitRequeue
		}
		// Nor of a health window or a remediation backoff ending.
		v.requeue = nextCheck(d, o.now, v.requeue)
	}
	return v
}

// zonesAfter is the zones' part of the owner's History once the pass was
// carried out: the zones that failed in it (its failing members', its
// creates') back off, and its creates failed when fewer were made than
// it set out to make. A pass that ran no plan made no creates.
func zonesAfter(o *observation, d decision, out outcome) replicaset.History {
	var carried replicaset.Plan
	if out.ran {
		carried = d.toExecute()
	}
	failed := slices.Concat(d.failedZones, out.acted.FailedZones)
	return o.zones.After(carried, len(out.acted.Created), failed, o.backoffFor, o.now)
}

// failures maps each failed operation's name to its error.
func failures(res execute.Result) map[string]error {
	out := map[string]error{}
	for _, e := range unjoin(res.Err) {
		var op *execute.OpError
		if errors.As(e, &op) {
			out[op.Name] = e
		}
	}
	return out
}

// forgiveness decides which expectations apply set will never be met: a
// create that was skipped, refused or found its name taken (and that name
// is remembered as taken), a delete that failed, and every write of a step
// that did not run. A create that failed without a clear answer stays
// expected: the cache, or the expectations' TTL, settles it.
func forgiveness(d decision, out outcome, failed map[string]error) (forgive, uids, taken []string) {
	if out.ownerGone || out.confirmErr != nil {
		return nil, nil, nil // nothing was expected
	}
	adopted, released := set(out.adopted), set(out.released)
	for _, c := range d.adopt {
		if !adopted[c.GetName()] {
			forgive = append(forgive, c.GetName())
		}
	}
	for _, c := range d.release {
		if !released[c.GetName()] {
			uids = append(uids, string(c.GetUID()))
			continue
		}
		// A released child keeps its name, and read no longer sees it.
		taken = append(taken, c.GetName())
	}
	created, deleted := set(out.acted.Created), set(out.acted.Deleted)
	for _, n := range d.create {
		err := failed[n]
		var unsure *unsureError
		switch {
		case created[n], errors.As(err, &unsure):
		case errors.Is(err, ErrNameTaken):
			forgive, taken = append(forgive, n), append(taken, n)
		default:
			forgive = append(forgive, n)
		}
	}
	for _, r := range d.delete {
		if !deleted[r.Name] {
			uids = append(uids, r.UID)
		}
	}
	return forgive, uids, taken
}

// onlyTaken reports whether err holds failures and every one is a name
// found taken: the pass then starts again at once, without backoff, under
// new names.
func onlyTaken(err error) bool {
	errs := unjoin(err)
	for _, e := range errs {
		if !errors.Is(e, ErrNameTaken) {
			return false
		}
	}
	return len(errs) > 0
}

// status counts the members the pass observed.
func status(o *observation, d decision, out outcome, failed map[string]error, backoff []replicaset.ZoneBackoff) Status {
	st := Status{ObservedGeneration: o.owner.GetGeneration()}
	if o.selector != nil {
		st.Selector = o.selector.String()
	}
	members := statusReplicas(o, replicasOf(d.members))
	unknownIn(o, members)
	sum := replicaset.Summarize(members, o.spec.MinReady, o.now)
	st.Zones = zoneStatus(o, members, backoff)
	st.Replicas, st.ReadyReplicas = int32(sum.Replicas), int32(sum.Ready)
	st.AvailableReplicas, st.TerminatingReplicas = int32(sum.Available), int32(sum.Terminating)
	st.UnknownReplicas = int32(sum.Unknown)
	if o.template != nil {
		template := labels.SelectorFromSet(o.template)
		for _, c := range d.members {
			if !c.replica.Deleting && template.Matches(labels.Set(c.obj.GetLabels())) {
				st.FullyLabeledReplicas++
			}
		}
	}
	st.Conditions = conditions(o, d, out, failed, sum, st.Zones)
	if o.spec.Remediation != nil {
		st.UnhealthyReplicas, st.RemediationsAllowed = int32(d.plan.Health.Unhealthy), int32(d.plan.Health.Allowed)
		st.Conditions = append(st.Conditions, remediationCondition(o, d))
	}
	if o.spec.Lifecycle != nil {
		st.PreparingReplicas = int32(sum.Preparing)
		st.Conditions = append(st.Conditions, drainingCondition(o, d))
	}
	if o.spec.Rollout == nil {
		st.UpdatedReplicas, st.UpdatedReadyReplicas, st.UpdatedAvailableReplicas = st.Replicas, st.ReadyReplicas, st.AvailableReplicas
		return st
	}
	spec := replicaset.Spec{Desired: o.spec.Replicas, MinReady: o.spec.MinReady, Revision: o.revision, Strategy: *o.spec.Rollout}
	rs := replicaset.SummarizeRollout(spec, members, o.now)
	st.UpdatedReplicas, st.UpdatedReadyReplicas = int32(rs.Updated), int32(rs.UpdatedReady)
	st.UpdatedAvailableReplicas, st.UpdateRevision = int32(rs.UpdatedAvailable), o.revision
	st.CurrentRevision = rs.Current
	st.Conditions = append(st.Conditions, rolledOut(o, d, rs))
	return st
}

// eventsOf lists the pass's events: one per kind of outcome.
func eventsOf(d decision, out outcome, failed map[string]error) []note {
	var evs []note
	add := func(kind, reason, action, text string) {
		evs = append(evs, note{kind, reason, action, text, nil})
	}
	if len(d.warnings) > 0 {
		add(corev1.EventTypeWarning, "InvalidAnnotation", "Describe", listNote(d.warnings, "; ", maxNote))
	}
	deleted := set(out.acted.Deleted)
	var replacing []string
	for _, r := range d.replaced {
		if deleted[r.Name] {
			replacing = append(replacing, r.Name+" (zone "+r.Zone+")")
		}
	}
	if len(replacing) > 0 {
		add(corev1.EventTypeWarning, "ReplacingFailed", "Delete",
			"Deleted children that failed in their zone, to be replaced in zones not backing off: "+listNote(replacing, ", ", maxNote))
	}
	if len(out.adopted) > 0 {
		add(corev1.EventTypeNormal, "SuccessfulAdopt", "Adopt", "Adopted "+listNote(out.adopted, ", ", maxNote))
	}
	if len(out.released) > 0 {
		add(corev1.EventTypeNormal, "SuccessfulRelease", "Release",
			"Released "+listNote(out.released, ", ", maxNote)+": labels no longer match")
	}
	if out.claimErr != nil {
		add(corev1.EventTypeWarning, "FailedClaim", "Claim", listNote(messages(unjoin(out.claimErr)), "; ", maxNote))
	}
	if res := out.acted; len(res.Created) > 0 {
		add(corev1.EventTypeNormal, "SuccessfulCreate", "Create",
			fmt.Sprintf("Created %s: %s", count(len(res.Created)), listNote(res.Created, ", ", maxNote)))
	}
	if res := out.acted; len(res.Deleted) > 0 {
		add(corev1.EventTypeNormal, "SuccessfulDelete", "Delete",
			fmt.Sprintf("Deleted %s: %s", count(len(res.Deleted)), listNote(res.Deleted, ", ", maxNote)))
	}
	var failedCreate, failedDelete []string
	for _, n := range d.create {
		if err, ok := failed[n]; ok {
			failedCreate = append(failedCreate, err.Error())
		}
	}
	for _, r := range d.delete {
		if err, ok := failed[r.Name]; ok {
			failedDelete = append(failedDelete, err.Error())
		}
	}
	if len(failedCreate) > 0 {
		add(corev1.EventTypeWarning, "FailedCreate", "Create", listNote(failedCreate, "; ", maxNote))
	}
	if len(failedDelete) > 0 {
		add(corev1.EventTypeWarning, "FailedDelete", "Delete", listNote(failedDelete, "; ", maxNote))
	}
	return evs
}

// count says "1 child" or "n children".
func count(n int) string {
	if n == 1 {
		return "1 child"
	}
	return fmt.Sprintf("%d children", n)
}

func replicasOf(cs []child) []replicaset.Replica {
	out := make([]replicaset.Replica, len(cs))
	for i, c := range cs {
		out[i] = c.replica
	}
	return out
}

func set(items []string) map[string]bool {
	m := make(map[string]bool, len(items))
	for _, it := range items {
		m[it] = true
	}
	return m
}

func messages(errs []error) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// nextAvailable returns how long after now the next live, ready but not
// yet available replica becomes available, so that the pass requeues
// exactly then. ok is false when no replica is waiting to become
// available (ready replicas whose ReadySince is unknown never become
// available by waiting).
func nextAvailable(current []replicaset.Replica, minReady time.Duration, now time.Time) (after time.Duration, ok bool) {
	if minReady <= 0 {
		return 0, false
	}
	for _, r := range current {
		if !r.Ready || r.LaunchGated || r.Deleting || r.ReadySince.IsZero() || r.Available(minReady, now) {
			continue
		}
		if d := r.ReadySince.Add(minReady).Sub(now); !ok || d < after {
			after, ok = d, true
		}
	}
	return after, ok
}
