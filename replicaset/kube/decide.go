package kube

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
)

// rules is the Reconciler's configuration as decide uses it.
type rules struct {
	policies   *deletionpolicy.Registry
	naming     Naming
	maxPerPass int
	restarter  bool   // the Adapter is a Restarter
	hookDomain string // of lifecycle hooks' annotations
}

// limit is the per-pass cap on creates and on deletes.
func (rl rules) limit() int {
	if rl.maxPerPass > 0 {
		return rl.maxPerPass
	}
	return replicaset.DefaultMaxPerPass
}

// hold says why a pass makes no change to the children.
type hold int

const (
	holdNone     hold = iota
	holdFailure       // the spec cannot be acted on (decision.failure)
	holdDeleting      // the owner is being deleted: the garbage collector's turn
	holdPaused        // the owner is paused
	holdWaiting       // the cache has not shown an earlier pass's writes
)

// decision is every action of one pass, decided from the observation alone.
// apply carries it out in this order, and stops at the first step that
// fails: confirm the owner on the API server (when adopting or creating),
// adopt and release, then the creates (named) and deletes. The plan
// assumes the adoptions and releases happened, so it never runs without
// them.
type decision struct {
	hold    hold
	failure error // why the spec cannot be acted on, for ReplicaFailure

	adopt   []client.Object // orphans to take a controller reference on
	release []client.Object // own children to let go: their labels no longer match
	// update pairs each member the template changes in place (with
	// Spec.Rollout: its labels, annotations, revision label) with its
	// changed copy.
	update []inPlaceUpdate

	members []child // the owner's replicas this pass: kept and adopted
	// plan is what the planner said, also when the pass holds (status
	// reports it); create and delete are what the pass does: the plan's
	// creates, named, and its deletes, both empty when the pass holds.
	plan   replicaset.Plan
	create []string
	delete []replicaset.Replica
	// warnings are problems with single children that do not stop the
	// pass (a malformed deletion cost), one sentence each.
	warnings []string
	// backoff is the zones the plan's creates avoided after failures, and
	// until when: the observed backoff, and failedZones, the zones of
	// members found failing in them (replicaset.PhaseFailed) for the
	// first time in this pass, which settle passes to History.After.
	// failedNow lists the UIDs of every member failing in a listed zone,
	// each of which has now backed its zone off once. replaced are the
	// failing members the plan replaces (Plan.Replace of an owner without
	// Spec.Remediation: Spec.ReplaceFailed; they are in delete too), for
	// the ReplacingFailed event.
	backoff     []replicaset.ZoneBackoff
	failedZones []string
	failedNow   []string
	replaced    []replicaset.Replica
	// capped reports that the per-pass cap held creates or deletes back
	// to the next pass: the pass reached the cap in a direction with
	// deferred work, or the cap held replicas on older revisions
	// (replicaset.HoldMaxPerPass). plan.Deferred alone does not say it:
	// it also counts work a bound or Spec.Rebalance holds, for which an
	// immediate next pass would find nothing new to do.
	capped bool
	// restart lists the members the plan restarts (Spec.Remediation),
	// each with its copy once restarted; history is the owner's
	// remediation history after the pass, to write when historyChanged.
	restart        []restart
	history        replicaset.History
	historyChanged bool
	// finalizer is what the pass does with the owner's FinalizerDrain
	// (Spec.Lifecycle).
	finalizer finalizerChange
}

// acts reports whether the decision writes anything but status.
func (d decision) acts() bool {
	return len(d.adopt) > 0 || len(d.release) > 0 || len(d.create) > 0 || len(d.delete) > 0 || len(d.update) > 0 ||
		len(d.restart) > 0 || d.historyChanged || d.finalizer != finalizerKeep
}

// toExecute is the part of the plan the executor carries out.
func (d decision) toExecute() replicaset.Plan {
	return replicaset.Plan{Create: len(d.create), CreateZones: d.plan.CreateZones, Delete: d.delete}
}

// decide turns an observation into the pass's decision. It does no I/O, reads
// no clock and draws no randomness but from the observation's seed and time,
// so the same observation always gives the same decision.
//
// Order of concerns: an owner being deleted that carries FinalizerDrain
// drains its children (drainDeleted), whatever else is wrong with its
// spec; a spec that cannot be used holds everything (status still counts
// the children the owner controls); an owner being deleted holds
// everything else, so the garbage collector's cascade stays whole; a
// paused owner holds everything; unmet expectations hold everything. Only
// then are orphans adopted, strays released and the plan computed.
func decide(o *observation, rl rules) decision {
	d := decision{backoff: o.zones.ZoneBackoff}
	for _, c := range o.children {
		if c.costErr != nil {
			d.warnings = append(d.warnings, c.costErr.Error())
		}
	}
	if o.owner.GetDeletionTimestamp() != nil && slices.Contains(o.owner.GetFinalizers(), FinalizerDrain) {
		drainDeleted(o, &d, rl)
		return d
	}
	if d.failure = usable(o, rl); d.failure != nil {
		d.hold = holdFailure
		d.members = o.children // controlled, matching or not: still counted
		return d
	}

	keep, adopt, release := claims(o)
	switch {
	case o.owner.GetDeletionTimestamp() != nil:
		d.hold = holdDeleting
	case o.spec.Paused:
		d.hold = holdPaused
	case o.waiting:
		d.hold = holdWaiting
	}
	d.members = keep
	if d.hold == holdNone {
		d.members = append(d.members, adopt...) // counted as if adopted: apply adopts first
	}
	policy, err := rl.policies.Lookup(policyName(o.spec))
	if err == nil && deletionpolicy.UsesOrdinals(policy) && rl.naming != OrdinalNames {
		err = fmt.Errorf("deletion policy %s orders children by ordinal, but this controller names them randomly (Naming is RandomNames); choose another policy: %w",
			policyName(o.spec), ErrNeedsOrdinalNames)
	}
	spec, current := planSpec(o, rl), replicas(d.members, o, rl.naming)
	unknownIn(o, current)
	health := heal(o, d.members, current)
	if err == nil && d.hold == holdNone {
		d.failedZones, d.failedNow = zoneFailures(spec, current, o)
		// The plan avoids them already: the zones' part of the History
		// this pass will leave, but for its creates.
		d.backoff = o.zones.After(replicaset.Plan{}, 0, d.failedZones, o.backoffFor, o.now).ZoneBackoff
		spec.History.ZoneBackoff = d.backoff
	}
	if err == nil {
		d.plan, err = replicaset.Compute(spec, current, policy, o.now)
	}
	if err != nil {
		d.hold, d.failure = holdFailure, err
		d.backoff, d.failedZones, d.failedNow = o.zones.ZoneBackoff, nil, nil
		return d
	}
	d.capped = capped(d.plan, rl.limit())
	switch {
	case d.hold == holdDeleting:
		return d
	case d.hold != holdNone:
		d.finalizer = drainFinalizer(o)
		return d // the plan says what would be done, for status; nothing is
	}
	d.finalizer = drainFinalizer(o)
	if d.create, err = newNames(o, rl.naming, d.plan.Create); err != nil {
		d.hold, d.failure, d.create = holdFailure, err, nil
		d.backoff, d.failedZones, d.failedNow = o.zones.ZoneBackoff, nil, nil
		return d
	}
	d.adopt, d.release = objects(adopt), objects(release)
	d.delete = slices.Clone(d.plan.Delete)
	d.restart = restarts(o, d.members, d.plan)
	d.update = updates(d.members, d.delete, health, d.restart)
	d.update = preparations(o, rl.hookDomain, d.members, d.update, d.plan)
	if o.want != nil {
		d.update = inPlaceSteps(o, rl.hookDomain, d.members, d.update, d.plan)
	}
	if o.spec.Remediation == nil {
		d.replaced = d.plan.Replace // failed in their zones (Spec.ReplaceFailed)
	} else {
		before, cleared := historyFor(o)
		d.history = before.After(ofTemplate(d.plan, o.revision), d.plan.Create, nil, 0, o.now)
		d.historyChanged = !sameRemediations(d.history, before) || cleared
	}
	return d
}

// capped reports whether the per-pass cap of limit deferred some of p's
// work (see decision.capped).
func capped(p replicaset.Plan, limit int) bool {
	if p.Deferred == 0 {
		return false
	}
	return p.Create >= limit || len(p.Delete) >= limit ||
		slices.ContainsFunc(p.Holds, func(h replicaset.Hold) bool { return h.By == replicaset.HoldMaxPerPass })
}

// idle reports whether the pass can do nothing but wait: the cache has not
// shown an earlier pass's writes, the owner is not paused or being
// deleted, and nothing decide finds without looking at the children (the
// spec, the template, the selector, the policy, the planner's spec) would
// make it fail; such a pass would write no status (see verdict.publish).
// It describes no child and decides nothing: during a rollout or a scale
// of hundreds most watch events of children come while their owner waits,
// and each would cost a pass over every child.
func idle(o *observation, rl rules) bool {
	if !o.waiting || o.owner.GetDeletionTimestamp() != nil || o.spec.Paused || usable(o, rl) != nil {
		return false
	}
	policy, err := rl.policies.Lookup(policyName(o.spec))
	if err != nil || deletionpolicy.UsesOrdinals(policy) && rl.naming != OrdinalNames {
		return false
	}
	return planSpec(o, rl).Validate() == nil
}

// inPlaceUpdate is one member and its copy changed in place. With
// applyInPlace (the plan updates it in place, Plan.Update), apply first has
// the Adapter change the copy (InPlaceRollout.ApplyInPlace, a power cycle
// allowed when *applyInPlace); adapterOnly says that the copy is
// otherwise unchanged, so that nothing is written when the Adapter
// changes nothing.
type inPlaceUpdate struct {
	from, to     client.Object
	applyInPlace *bool
	adapterOnly  bool
}

// zoneFailures lists, when the spec lists zones, the zones of the members
// that failed in them, as the Adapter describes them
// (replicaset.PhaseFailed, not being deleted, not protected): a create
// that failed after the child was made, as a VM whose clone vCenter
// refused. Each such member fails its zone once, as a failed create
// would: in the first pass that sees it failing, unless its zone is
// backing off already. The pass backs those zones off
// (replicaset.History.After) and the planner replaces the members
// (Spec.ReplaceFailed), placing the replacements in the zones not backing
// off. Children unreachable, or in unreachable zones, are unknown, failed
// or not.
//
// It returns the zones that failed in the pass and the UIDs of the
// failing members.
func zoneFailures(spec replicaset.Spec, current []replicaset.Replica, o *observation) (failed, uids []string) {
	for i := range current {
		r := &current[i]
		if r.Phase != replicaset.PhaseFailed || r.Deleting || r.Protected || r.Unreachable || !slices.Contains(spec.Zones, r.Zone) ||
			slices.Contains(spec.Unreachable, r.Zone) {
			continue
		}
		uids = append(uids, r.UID)
		avoided := slices.ContainsFunc(o.zones.ZoneBackoff, func(b replicaset.ZoneBackoff) bool { return b.Zone == r.Zone && o.now.Before(b.Until) })
		if !slices.Contains(o.failedSeen, r.UID) && !avoided && !slices.Contains(failed, r.Zone) {
			failed = append(failed, r.Zone)
		}
	}
	return failed, uids
}

// planSpec is the planner's spec for the observed owner.
func planSpec(o *observation, rl rules) replicaset.Spec {
	s := replicaset.Spec{Desired: o.spec.Replicas, MaxPerPass: rl.maxPerPass,
		ReplaceDeleting: o.spec.ReplaceDeleting, MinReady: o.spec.MinReady, Seed: o.seed,
		Zones: o.spec.Zones, Rebalance: o.spec.Rebalance, Unreachable: o.spec.Unreachable,
		Remediation: o.spec.Remediation, ReplaceFailed: len(o.spec.Zones) > 0, Lifecycle: lifecycleSpec(o.spec)}
	if o.spec.Remediation != nil {
		s.History, _ = historyFor(o)
	}
	s.History.ZoneBackoff, s.History.CreatesFailing = o.zones.ZoneBackoff, o.zones.CreatesFailing
	if o.spec.Rollout != nil {
		s.Revision, s.Strategy = o.revision, *o.spec.Rollout
	}
	return s
}

// replicas are the members as the planner sees them, with their ordinals
// when children are named by ordinal.
func replicas(members []child, o *observation, scheme Naming) []replicaset.Replica {
	out := make([]replicaset.Replica, len(members))
	indexed := naming.Indexed{Base: o.owner.GetName()}
	for i, c := range members {
		out[i] = c.replica
		if scheme == OrdinalNames {
			out[i].Ordinal, out[i].HasOrdinal = indexed.Ordinal(c.replica.Name)
		}
	}
	return out
}

// usable says why the observed spec cannot be acted on, or nil.
func usable(o *observation, rl rules) error {
	switch {
	case o.specErr != nil:
		return fmt.Errorf("invalid spec: %w", o.specErr)
	case o.templateErr != nil:
		return fmt.Errorf("template: %w", o.templateErr)
	case !o.selector.Matches(o.template):
		return fmt.Errorf("selector %s does not select template labels %v: %w", o.selector, map[string]string(o.template), ErrSelectorMismatch)
	}
	return remediationSpecErr(o.spec, rl.restarter)
}

// claims sorts the observed children: the owner's own that its selector
// matches (keep), matching orphans (adopt), and its own that stopped
// matching (release). Children being deleted are never adopted or
// released (claimFor).
func claims(o *observation) (keep, adopt, release []child) {
	uid := o.owner.GetUID()
	keep = make([]child, 0, len(o.children))
	for _, c := range o.children {
		switch claimFor(uid, o.selector.Matches(labels.Set(c.obj.GetLabels())), c.obj) {
		case claimKeep:
			keep = append(keep, c)
		case claimRelease:
			release = append(release, c)
		}
	}
	for _, c := range o.orphans {
		if claimFor(uid, o.selector.Matches(labels.Set(c.obj.GetLabels())), c.obj) == claimAdopt {
			adopt = append(adopt, c)
		}
	}
	return keep, adopt, release
}

func objects(cs []child) []client.Object {
	if len(cs) == 0 {
		return nil
	}
	out := make([]client.Object, len(cs))
	for i, c := range cs {
		out[i] = c.obj
	}
	return out
}

// policyName is the spec's deletion policy, Random when unset.
func policyName(s Spec) string {
	if s.DeletePolicy == "" {
		return deletionpolicy.NameRandom
	}
	return s.DeletePolicy
}

// newNames names n new children: none is the name of a child or orphan the
// pass saw, or a name found taken by someone else's object.
func newNames(o *observation, scheme Naming, n int) ([]string, error) {
	if n == 0 {
		return nil, nil
	}
	existing := make([]string, 0, len(o.children)+len(o.orphans)+len(o.taken))
	for _, c := range o.children {
		existing = append(existing, c.obj.GetName())
	}
	for _, c := range o.orphans {
		existing = append(existing, c.obj.GetName())
	}
	existing = append(existing, o.taken...)
	if scheme == OrdinalNames {
		return naming.Indexed{Base: o.owner.GetName()}.Names(n, existing)
	}
	src := rand.NewPCG(uint64(o.now.UnixNano()), o.seed)
	return naming.Random{Base: o.owner.GetName(), Source: src}.Names(n, existing)
}
