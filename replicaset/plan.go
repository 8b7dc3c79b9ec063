package replicaset

import (
	"fmt"
	"strings"
)

// Plan is the work one reconcile pass should do, as Compute decided it. It is
// a value: the caller carries it out (an executor, a binding) and never
// re-derives the decision.
type Plan struct {
	// Create is how many new replicas to create in this pass.
	Create int
	// Delete lists the replicas to delete in this pass, in deletion order.
	// None of them is already being deleted or protected. With
	// Spec.Lifecycle, the replicas the rules chose are in Prepare
	// instead, and come here once their pre-delete hooks are done.
	Delete []Replica
	// Prepare lists the replicas that begin to prepare to leave in this
	// pass (Spec.Lifecycle), in deletion order: the caller records
	// Replica.Preparing on each, with Since the pass's time and the hooks
	// that hold it, and deletes none of them yet. Empty without
	// Spec.Lifecycle.
	Prepare []Replica
	// Cancel lists preparing replicas taken back in this pass: by a
	// scale-up, before anything new is created, because they were
	// protected from scale-in since they began to prepare, or because the
	// in-place update they prepared for (Preparing.Update) no longer
	// applies (a rollback, a pause, a change that no longer fits); and,
	// without Spec.Lifecycle, every known replica that still records a
	// preparation (the spec dropped its Lifecycle) and that the plan
	// neither deletes nor updates in place. The caller removes
	// their Replica.Preparing (and tells their hooks, as its
	// documentation says).
	Cancel []Replica
	// Update lists the replicas to change in place in this pass, onto
	// Spec.Revision (Strategy.Method): the caller changes each and
	// records the new revision on it (Replica.Revision) only once the
	// change shows, clearing its Replica.Preparing, if it has one, in the
	// same write (not when the change starts: a replica still preparing
	// for its power cycle is not prepared again). A replica whose change
	// is under way is listed again on every pass until its new revision
	// is recorded, so carry an update out idempotently. An update that
	// cannot be made reports the replica InPlaceNone next pass, with the
	// reason in InPlaceBlocker. Empty under UpdateReplace.
	Update []Update
	// Fallback lists the replicas on older revisions that
	// UpdateInPlaceIfPossible leaves to the rules, which replace them,
	// because they cannot be changed in place now, each with why, so
	// that a binding can say why a rollout in place clones. Under
	// UpdateInPlaceOnly the same replicas are held instead, and
	// HoldInPlaceOnly names them; under UpdateReplace it is empty.
	Fallback []Fallback
	// PrepareUpdate lists the replicas that begin to prepare for an
	// in-place update that powers them off (Spec.Lifecycle): the caller
	// records Replica.Preparing on each as for Prepare, with Update set,
	// and changes none of them yet. Empty without Spec.Lifecycle.
	PrepareUpdate []Replica
	// Deleting lists the replicas already being deleted, which need no
	// action: they covered the excess before any replica in Delete was
	// chosen (the package documentation's Deletion order).
	Deleting []Replica
	// Deferred is how many creates or deletes this pass holds back: those
	// over the per-pass cap, deletes Spec.Rebalance holds until replicas
	// coming up are available, and creates that wait for a listed zone
	// to answer when every one is unreachable (Spec.Unreachable). A later
	// pass will ask for them. What a rollout's bounds hold is not
	// deferred: Holds says it.
	Deferred int
	// Shortfall is set when scale-in protection prevents reaching the
	// desired count.
	Shortfall Shortfall
	// CreateZones, when the spec lists zones, holds the zone of each of
	// the Create new replicas (len(CreateZones) == Create); nil otherwise.
	CreateZones []string
	// Unbalanced, when the spec lists zones, says why the live replicas
	// per listed zone will still differ by more than one once this plan is
	// carried out (a zone backing off, protection, the per-pass cap,
	// replicas in zones no longer listed); empty when they will not.
	Unbalanced string
	// Holds says, setting by setting, why replicas on older revisions
	// that should be replaced wait after this pass (Spec.Revision set),
	// guard by guard why replicas due for remediation do
	// (Spec.Remediation), and which replicas wait on pre-delete hooks
	// (Spec.Lifecycle: HoldPreDelete, HoldHookAbandoned); empty when none
	// waits. Waiting replicas are not
	// counted in Deferred, except those over the per-pass cap.
	Holds []Hold
	// Unknown lists the unknown replicas: those unreachable
	// (Replica.Unreachable) or in unreachable zones (Spec.Unreachable),
	// live or being deleted, which this pass leaves alone: they are in
	// neither Delete nor Deleting.
	Unknown []Replica
	// Restart lists the replicas to restart to remediate them
	// (Remediation.Restart): the caller restarts each (a VM reset) and
	// records it in its Health with Health.Restart. Empty without
	// Spec.Remediation.
	Restart []Replica
	// Replace lists the replicas this pass replaces to remediate them
	// (Spec.Remediation), in the order remediation chose them, or because
	// they failed in a listed zone (Spec.ReplaceFailed); each is in Delete
	// too, or in Prepare with Spec.Lifecycle; one that prepares already
	// is listed in the pass that deletes it, once its hooks release it. A
	// remediated replica's replacement is among Create as far as the
	// surge allows, or at once with Spec.ReplaceDeleting, as for any
	// replica leaving, even while its hooks still hold it. Empty without
	// either.
	Replace []Replica
	// Health is what the pass found of its replicas' health, with
	// Spec.Remediation; zero without it.
	Health HealthStatus
	// Lifecycle is what the pass found of its replicas' preparations to
	// leave, with Spec.Lifecycle; zero without it.
	Lifecycle LifecycleStatus
}

// Hold is one reason replicas wait: a rollout bound or setting that keeps
// replicas on older revisions, or a guard that keeps replicas due for
// remediation; and how many.
type Hold struct {
	// By is the setting or bound that holds them.
	By HoldKind
	// Waiting is how many replicas it holds: replicas on older revisions
	// that stay (or, for HoldMaxSurge, new replicas not yet created), or,
	// for a remediation guard, replicas that wait to be remediated.
	Waiting int
	// Reason says what waits and on what, in a sentence a person can act
	// on.
	Reason string
}

// HoldKind names what holds a rollout, or a remediation, back.
type HoldKind int

// The settings, bounds and guards that can hold a rollout or a
// remediation back.
const (
	// HoldPaused: Strategy.Paused is set.
	HoldPaused HoldKind = iota + 1
	// HoldOnDelete: the strategy is OnDelete.
	HoldOnDelete
	// HoldPartition: Strategy.Partition keeps replicas on older revisions.
	HoldPartition
	// HoldMaxSurge: replicas, counting those being deleted, are at
	// Desired + MaxSurge, so no new replica can be made yet.
	HoldMaxSurge
	// HoldMaxUnavailable: deleting an available replica would take the
	// available replicas below Desired − MaxUnavailable.
	HoldMaxUnavailable
	// HoldProtected: the replicas are protected from scale-in.
	HoldProtected
	// HoldMaxPerPass: the per-pass cap is reached; the next pass goes on.
	HoldMaxPerPass
	// HoldLastAvailable: a scale-down keeps the last available replica on
	// the wanted revision.
	HoldLastAvailable
	// HoldZoneBackoff: the replicas are in zones backing off
	// (History.ZoneBackoff), where no replacement can be made; or they
	// failed, and no listed zone is healthy to replace them in
	// (Spec.ReplaceFailed).
	HoldZoneBackoff
	// HoldZoneByZone: the replicas are in zones a ZoneByZone rollout
	// updates later.
	HoldZoneByZone
	// HoldUnreachable: the replicas are unknown, unreachable
	// (Replica.Unreachable) or in unreachable zones (Spec.Unreachable):
	// nothing can be deleted there.
	HoldUnreachable
	// HoldSkipRemediation: the replicas due for remediation opted out
	// (Health.Skip).
	HoldSkipRemediation
	// HoldTooManyUnhealthy: more replicas are unhealthy than
	// Remediation.MaxUnhealthy, so none is remediated (the storm guard).
	HoldTooManyUnhealthy
	// HoldZoneUnhealthy: the replicas are in a zone where most are
	// unhealthy (HealthStatus.FailingZones).
	HoldZoneUnhealthy
	// HoldSuspended: Remediation.MaxFailures replacements in a row failed.
	HoldSuspended
	// HoldRemediationBackoff: remediation waits after a failed
	// replacement (Remediation.Backoff).
	HoldRemediationBackoff
	// HoldInFlight: Remediation.MaxInFlight remediations are under way.
	// Its String is RemediationInFlight, the reason the Kubernetes
	// binding gives it.
	HoldInFlight
	// HoldPreDelete: the replicas prepare to leave, and pre-delete hooks
	// hold them within their timeout (Spec.Lifecycle).
	HoldPreDelete
	// HoldHookAbandoned: pre-delete hooks held the replicas past their
	// timeout, with Lifecycle.Abandon: they stay until
	// their hooks release them.
	HoldHookAbandoned
	// HoldInPlaceOnly: the replicas cannot be changed in place
	// (Replica.InPlaceBlocker says why, or their change needs a power
	// cycle that MaxUnavailable 0 does not allow), and
	// UpdateInPlaceOnly replaces none.
	HoldInPlaceOnly
)

// holdNames are the HoldKinds' names, by value.
var holdNames = [...]string{HoldPaused: "Paused", HoldOnDelete: "OnDelete", HoldPartition: "Partition",
	HoldMaxSurge: "MaxSurge", HoldMaxUnavailable: "MaxUnavailable", HoldProtected: "Protected",
	HoldMaxPerPass: "MaxPerPass", HoldLastAvailable: "LastAvailable", HoldZoneBackoff: "ZoneBackoff",
	HoldZoneByZone: "ZoneByZone", HoldUnreachable: "Unreachable", HoldSkipRemediation: "SkipRemediation",
	HoldTooManyUnhealthy: "TooManyUnhealthy", HoldZoneUnhealthy: "ZoneUnhealthy", HoldSuspended: "Suspended",
	HoldRemediationBackoff: "RemediationBackoff", HoldInFlight: "RemediationInFlight", HoldPreDelete: "PreDelete",
	HoldHookAbandoned: "HookAbandoned", HoldInPlaceOnly: "InPlaceOnly"}

// String returns the name of the setting or bound, as Plan.String and
// status show it.
func (k HoldKind) String() string { return enumName(k, holdNames[:], "HoldKind") }

// enumName returns v's name in names, or, for a value with none, the
// type's name and the number ("HoldKind(0)"): the String method of every
// enumeration of the package.
func enumName[T ~int](v T, names []string, typ string) string {
	if v >= 0 && int(v) < len(names) && names[v] != "" {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, int(v))
}

// Shortfall explains why a plan cannot reach the desired count.
type Shortfall struct {
	// Count is how many more replicas should be deleted than may be.
	Count int
	// Reason says why, in a sentence a person can act on. It is empty when
	// Count is zero.
	Reason string
}

// IsZero reports whether the plan asks for no action and defers none to
// a later pass (Deferred): the set has converged, apart from replicas
// already being deleted, any shortfall, and a rollout's Holds. A rollout
// that is paused, held at its partition, on delete only or held by a zone
// backing off plans nothing, so its plan is zero while replicas on older
// revisions remain: RolloutStatus.Complete (SummarizeRollout) says
// whether a rollout is done.
func (p Plan) IsZero() bool {
	return p.Create == 0 && len(p.Delete) == 0 && p.Deferred == 0 && len(p.Restart) == 0 &&
		len(p.Prepare) == 0 && len(p.Cancel) == 0 && len(p.Update) == 0 && len(p.PrepareUpdate) == 0
}

// String renders the plan on one line, listing replica names, for logs and
// golden tests:
//
//	create=1 delete=[b c] deleting=[a] deferred=0
//
// Zones add " zones=[a b]" (CreateZones), a shortfall " shortfall=N
// (reason)", an imbalance " unbalanced=(reason)", holds
// " holds=[MaxUnavailable:2 Partition:1]", replicas in unreachable
// zones " unknown=[d e]", remediation " restart=[f] replace=[g]", and
// lifecycle hooks " prepare=[h] cancel=[i]", in-place updates
// " update=[j k~]" (a tilde marks a power cycle), " fallback=[l]" and
// " prepare-update=[m]".
func (p Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "create=%d delete=%s deleting=%s deferred=%d",
		p.Create, names(p.Delete), names(p.Deleting), p.Deferred)
	if len(p.CreateZones) > 0 {
		fmt.Fprintf(&b, " zones=[%s]", strings.Join(p.CreateZones, " "))
	}
	if p.Shortfall.Count > 0 {
		fmt.Fprintf(&b, " shortfall=%d (%s)", p.Shortfall.Count, p.Shortfall.Reason)
	}
	if p.Unbalanced != "" {
		fmt.Fprintf(&b, " unbalanced=(%s)", p.Unbalanced)
	}
	if len(p.Holds) > 0 {
		hs := make([]string, len(p.Holds))
		for i, h := range p.Holds {
			hs[i] = fmt.Sprintf("%s:%d", h.By, h.Waiting)
		}
		fmt.Fprintf(&b, " holds=[%s]", strings.Join(hs, " "))
	}
	updates := make([]string, len(p.Update))
	for i, u := range p.Update {
		updates[i] = u.Replica.Name
		if u.PowerCycle {
			updates[i] += "~"
		}
	}
	fallbacks := make([]string, len(p.Fallback))
	for i, f := range p.Fallback {
		fallbacks[i] = f.Replica.Name
	}
	for _, l := range []struct {
		key   string
		names []string
	}{
		{"unknown", nameList(p.Unknown)}, {"restart", nameList(p.Restart)}, {"replace", nameList(p.Replace)},
		{"prepare", nameList(p.Prepare)}, {"cancel", nameList(p.Cancel)}, {"update", updates},
		{"fallback", fallbacks}, {"prepare-update", nameList(p.PrepareUpdate)},
	} {
		if len(l.names) > 0 {
			fmt.Fprintf(&b, " %s=[%s]", l.key, strings.Join(l.names, " "))
		}
	}
	return b.String()
}

// names renders the replicas' names as Plan.String lists them: "[a b]".
func names(rs []Replica) string { return "[" + strings.Join(nameList(rs), " ") + "]" }

// nameList returns the replicas' names.
func nameList(rs []Replica) []string {
	s := make([]string, len(rs))
	for i := range rs {
		s[i] = rs[i].Name
	}
	return s
}
