// Package replicaset is the pure core of replicakit: it decides how to
// converge a set of replicas on a desired count, and reports honest status.
//
// It imports only the standard library, takes no context, reads no clock,
// uses no global randomness and does no logging: the time of a pass is an
// argument, and randomness comes from seeds (Spec.Seed, a policy's seed). Its functions
// return values that describe work (a Plan, a Status); bindings such as the
// controller-runtime reconciler or vmprovider.Set carry them out.
// This is the shape of etcd's raft, whose core returns a Ready value and lets
// the application do the I/O.
//
// The rules [Compute] plans by are stated once, under the headings below
// ([Counting], [Deletion order], [Zones], [Rollouts], [Unreachable zones],
// [Self-healing], [Lifecycle hooks], [In-place updates]), and [One pass]
// says which wins when two meet; the rest of replicakit points here.
// [Invariants] lists what every plan guarantees: one checker
// (replicasettest.Check) states each of them, and the property tests run
// it on every pass with every feature drawn at once.
//
// # Usage
//
// A binding observes the replicas it owns, describes each as a [Replica], and
// asks for a plan:
//
//	plan, err := replicaset.Compute(
//		replicaset.Spec{Desired: 3, Seed: ownerSeed},
//		replicas,                  // what was observed, in any order
//		deletionpolicy.Random{},
//		now,                       // the time of this pass
//	)
//	if err != nil {
//		return err // terminal: bad spec, inconsistent replicas, no policy
//	}
//	// create plan.Create replicas, delete plan.Delete in order
//
// and reports status with [Summarize]. Creates are issued with slow start,
// within the bound of the Kubernetes ReplicaSet controller's batches: the
// execute subpackage does this for any binding.
//
// # Counting
//
// Live replicas are those not being deleted. A scale-down deletes
// live − Desired replicas, because replicas already being deleted cover
// the excess first. A scale-up creates Desired − live − deleting replicas
// by default, so that a replica stuck behind a finalizer is not replaced
// early, or Desired − live with Spec.ReplaceDeleting. Creates and deletes
// are each capped per pass (Spec.MaxPerPass); what the cap holds back is
// Plan.Deferred.
//
// Each replica Compute is given is one replica, known by its name and,
// when it has one, its UID: both must be unique, or Compute returns
// ErrInvalidReplica, which is for a caller that hands it contradictory
// input. What a binding observes is never contradictory: two replicas of
// one name (one on each of two platforms after a network partition, or
// made by a person) are two replicas. The binding gives each a name of
// its own for the planner (qualified by where it is, say), and maps the
// plan back to the replica it names; the extra replica is then excess,
// which a scale-down removes by the deletion order below, and the binding
// reports the duplicate. A binding must neither pass both under one name
// nor leave one out, and must never stop planning because of what it
// observed (vmprovider.Set names such VMs by their endpoint).
//
// # Deletion order
//
// One order, total and the same under every policy, for every deletion
// a pass chooses (scale-down, rollout, rebalancing), whether a rollout is
// in progress or not:
//
//  1. replicas already being deleted come first and are never chosen again
//     (Plan.Deleting); if they cover the excess, nothing else is chosen;
//  2. then replicas marked for deletion, in the policy's order;
//  3. then, with Spec.Zones, replicas in no listed zone (a zone removed
//     from the list, or none known);
//  4. then broken replicas: not provisioned, which includes those still
//     being provisioned, or failed (PhasePending, PhaseFailed);
//  5. then the rest, with Spec.Zones one at a time from the listed zone
//     with the most live replicas left (protected ones count, and victims
//     chosen before leave; the later listed zone on a tie), skipping zones
//     with no candidate left; inside a zone, or without zones, replicas
//     not available first, then the policy's order (Ranker.Rank, lowest
//     first);
//
// and everywhere name, then UID, so that the order is total and
// reproducible. Tier 3 takes its broken replicas first, then those not
// available, then the rest, each in the policy's order; tier 4 is in the
// policy's order too. Protected
// replicas are never chosen; if protection leaves too few candidates,
// Plan.Shortfall says how many short and why. A rollout walks the order
// in stages (Rollouts below); with Spec.Rebalance, replicas still coming
// up are not broken nor taken first as not available (only failed ones
// are), so that a replica created to move the set is not the first to go.
//
// A scale-down of healthy replicas so never takes a zone further from
// balance: after a pass that is neither capped nor held back by
// protection, live replicas per listed zone differ by at most one (or by
// no more than before).
//
// # Zones
//
// With Spec.Zones listed, each planned create is assigned a zone
// (Plan.CreateZones) by one picker, for every create of every rule: the
// listed zone with the fewest live replicas on the wanted revision (all
// live replicas, in a set without revisions), counting the creates
// placed before it; on a tie, the zone with the most replicas on older
// revisions that no replacement is on its way for, which in a set without
// revisions is the zone with the fewest replicas not yet available; then
// the fewest replicas counting those being deleted; then the earlier
// listed; skipping zones in History.ZoneBackoff until their backoff ends
// (all of them again when every listed zone is backing off). Replicas
// are never moved from one zone to another to restore balance unless
// Spec.Rebalance asks for it (one at a time, create before delete; see
// Spec.Rebalance); Plan.Unbalanced says when and why zones stay apart,
// and [SummarizeZones] reports status per zone.
//
// With Spec.ReplaceFailed (which the bindings set for every set with
// zones, and which Remediation implies), a replica that failed in a listed
// zone (PhaseFailed, not being deleted, not protected: a VM whose clone
// vCenter refused) is replaced while some listed zone is healthy: neither
// backing off nor holding such a replica. It is deleted first
// (Plan.Replace, the head of Plan.Delete; up to MaxPerPass, by name) and
// counts meanwhile as being deleted, so Spec.ReplaceDeleting decides
// whether its replacement is made at once, in a zone not backing off (the
// caller backs off the failed replica's zone, as after a failed create).
// While no listed zone is healthy the failed replicas stay where they are,
// to recover with their zone (HoldZoneBackoff): a set whose every zone
// fails does not churn. This is the one rule when every listed zone backs
// off: creates and a rollout's replacements go to all of them again, and
// no zone is healthy, so failed replicas stay. Replicas in unreachable
// zones are unknown, failed or not, and stay.
//
// # Rollouts
//
// A set that records revisions changes its replicas, not only their
// number: give Spec.Revision the revision replicas should be on (a hash of
// the owner's template), set each Replica.Revision to the one it was made
// from, and choose a Strategy. A replica whose Revision is neither empty
// nor Spec.Revision is on an older revision. A rollout is in progress
// while some live known replica is on an older revision, counting one
// that the pass moves onto the wanted revision in place (In-place updates
// below); this is the one definition every rule below uses. While none
// is, Compute plans exactly as without revisions (Spec.Rebalance
// included); what follows applies while one is, and the surge bound and
// the replacements while more than P of them are. Creates are always on
// Spec.Revision. Rolling back is setting the older revision again:
// replicas still on it count as updated at once and are never deleted
// for it.
//
// The zero Strategy is a RollingUpdate of one surge replica and none
// unavailable (DefaultMaxSurge, DefaultMaxUnavailable): every serving VM
// keeps serving until its replacement is available. Partition keeps some
// replicas on older revisions (a canary), Paused stops replacing them
// (scaling goes on), and OnDelete replaces only replicas that go away for
// other reasons. With the strategy's limits (MaxSurge S, MaxUnavailable
// U, Partition P, resolved for Desired D by the one rounding rule
// Strategy.Limits states), a pass:
//
//   - scales as above, but walks the deletion order in stages: marked
//     replicas; then replicas on older revisions while more than P
//     remain; then replicas on Spec.Revision, except that a rolling
//     update that is neither paused nor OnDelete scales none of them
//     down while replicas on older revisions remain to be replaced (else
//     it would scale down the surge replicas that are to replace them);
//     then replicas on older revisions that P would keep;
//   - then, for a RollingUpdate that is not Paused, while more than P
//     replicas are on older revisions: creates replicas on Spec.Revision
//     up to D − P of them, while live replicas plus those being deleted
//     stay within D + S, and no more surge replicas coming up than
//     replicas left to replace (none for a protected one, which no pass
//     replaces; a replica coming up is one made on Spec.Revision and not
//     yet available, never one moving onto it in place, which is itself
//     one of those replaced, nor one that records no revision), with
//     zones as without; and deletes replicas on older revisions beyond P
//     in the deletion order, none in a zone backing off (HoldZoneBackoff).
//
// Serving. A replica on an older revision that runs but is not seen
// available (its phase neither PhasePending nor PhaseFailed) may serve all
// the same: for a VM, not available is often what the binding failed to
// observe, a guest agent late or a network blip. Such replicas count with
// the available ones as the replicas that may serve, and the floor of
// D − U holds of both counts, as Cluster API's rolling update bounds its
// deletes by the machines it cannot prove down. A replica on Spec.Revision
// that was never available serves nothing yet, and a broken one nothing.
//
// Bounds, whatever the state a pass starts from: no pass deletes an
// available replica when that takes the available replicas below D − U,
// nor a replica that may serve when that takes the replicas that may serve
// below D − U (so none lowers them when they already are below it),
// skipping it for the next candidate; while replicas on older revisions
// remain beyond P, live and deleting replicas plus creates never exceed
// D + S (nor grow when already above it); a rollout's deletes never take
// the replicas on older revisions below P; and no pass deletes the last
// available replica on Spec.Revision while D is above zero. Plan.Holds
// says why the replicas left on older revisions wait, bound by bound. With
// Spec.ReplaceDeleting, replicas being deleted are replaced at once only
// within D + S while a rollout is in progress.
//
// Over zones, creates go where the one picker (Zones above) puts them:
// old replicas at zone-a=2, zone-b=1 get their first replacement in
// zone-a; and since the fewest replicas on Spec.Revision come first, once
// the replicas on older revisions are gone the zones are within one of
// each other, wherever those replicas were. Spec.Rebalance is not
// applied while a rollout is in progress.
//
// Strategy.ZoneByZone replaces replicas one zone at a time: the zone
// updated is the first listed zone, not backing off, that still holds
// replicas on older revisions to replace. Nothing outside it is replaced
// (HoldZoneByZone); a scale-down takes its replicas on older revisions
// right after those in no listed zone; it has at most as many surge
// replicas coming as it has replicas left to replace; and the picker puts
// its creates in the listed zone with the fewest live replicas that stay
// (in the zone updated, not counting its replicas on older revisions),
// then in the zone updated, then as above, so that a surge replica comes
// up in the zone whose replica it replaces, and a replica lost elsewhere
// is made again where the zones are fewest.
//
// # Unreachable zones
//
// When the platform of a zone stops answering (a vCenter cut off by a
// network partition), its replicas are not gone: they are unknown. List
// such zones in Spec.Unreachable. The replicas whose zone is listed there,
// live or being deleted, are unknown: Compute neither deletes them, counts
// them as gone, nor chooses them in any way. It lists them in
// Plan.Unknown, and plans the other replicas, the known ones, as a set of
// their own, by every rule above, with the desired count
//
//	K = max(0, D − u) + min(u, S, D)
//
// for D, where u counts the unknown replicas that count toward D (live
// ones, and those being deleted unless Spec.ReplaceDeleting) and S is
// Strategy.Limits(D).Surge (MaxSurge, 1 by default, whether or not the
// set has revisions): known replicas stand in for unknown ones, at most S
// of them, so the set holds at most D + S replicas while zones are out of
// reach (D + 2S during a rollout, whose surge applies to K), more only
// when more than D are unknown. Creates go to the listed zones that are
// reachable, and wait (Plan.Deferred) when none is; Spec.Rebalance waits
// for every zone to answer; a rollout's limits are resolved for K;
// replicas on older revisions in unreachable zones wait
// (HoldUnreachable). When the zones answer again, K is D once more: the
// replicas that stood in are the excess of an ordinary scale-down, taken
// by the zone order above from the fullest zones, and unknown replicas
// that are gone are replaced as any missing replica is.
//
// A replica can be unknown on its own, in a zone that answers: a VM whose
// datastore went away, whose host is disconnected. A binding reports it
// with Replica.Unreachable, and Compute plans it as a replica of an
// unreachable zone, by the same rules and in the same u: counted, never
// deleted nor chosen, listed in Plan.Unknown, held (HoldUnreachable) when
// on an older revision. Its zone still takes creates, and Spec.Rebalance
// waits until every replica answers.
//
// # Self-healing
//
// With Spec.Remediation set, a pass also remediates replicas that stay
// unhealthy, as Replica.Health describes them (nil Health: nothing known
// against the replica). Without it Compute plans exactly as without
// health, and a pass that finds nothing due plans what it would without
// it.
//
// When a replica falls due. A failed one (PhaseFailed: its clone failed)
// at once. One that has started (Health.Started) but not been healthy
// since, when Remediation.StartupWindow has passed since it started: the
// window runs from when the replica exists, not from when it was asked
// for, so a slow clone queue does not eat it. Which clock each binding
// uses: package kube, the child's creation (its creationTimestamp) or
// the start its Adapter reports (kube.Starter; the example operator's is
// when the VM's clone is under way); vmprovider.Set, the pass that first
// lists the VM, a clone in flight included, or its boot when vCenter
// reports one since the Set's previous pass. One that was healthy and is
// unhealthy now, when it has been so without a break for
// Remediation.UnhealthyWindow (Health.Since, or the end of a storm that
// caught it, as the storm guard below says): a replica whose health
// flaps more often than the window is never remediated, which is the
// hysteresis. A replica with no Health.Started has no window running. A replica
// asked for (Health.RemediateNow) at once.
//
// What is done. With Remediation.Restart, a replica due that was not
// restarted for it already is restarted (Plan.Restart) and, once the
// caller records the restart in its Health, gets the start-up window
// again; otherwise (and for a failed replica) it is replaced
// (Plan.Replace): deleted in this pass, first in Plan.Delete, and a
// replacement created (where the picker puts it) in the same pass while
// live replicas and those being deleted stay within Desired + MaxSurge
// (Strategy.Limits), the rest by later passes once it is gone. A replica
// being replaced counts as being deleted from the start of the pass, so
// the rollout's bounds (Rollouts above) hold of the other replicas; a
// replica the plan deletes anyway is not also restarted, and a restart
// takes no replica out of the count.
//
// The guards, in this order, each on by default (a Hold names the
// replicas each keeps waiting):
//
//   - Health.Skip: the replica opted out (HoldSkipRemediation); it still
//     counts as unhealthy.
//   - A failed replica in a listed zone stays while no listed zone is
//     healthy, as Spec.ReplaceFailed says in Zones above
//     (HoldZoneBackoff).
//   - The storm guard: when more live replicas are unhealthy than
//     Remediation.MaxUnhealthy (DefaultMaxUnhealthy, 40% of Desired
//     rounded down, at least 1), the fault is taken to be outside the
//     replicas (a network blip, a storage outage) and none is remediated
//     (HoldTooManyUnhealthy). Unhealthy here means failed, past the
//     start-up window without having been healthy, or unhealthy after
//     being healthy, whether or not its window has passed. The caller
//     records the last pass that found a storm (History.Storm, kept
//     by History.After), and the unhealthy window of a
//     replica unhealthy since before then runs from then: the replicas a
//     storm caught are not remediated the moment it ends, as they
//     recover one by one. A storm that heals by itself within the window
//     of its end replaces nothing.
//   - The zone guard: in a zone where at least two live replicas, and
//     more than half of them, are unhealthy, none is remediated
//     (HoldZoneUnhealthy; HealthStatus.FailingZones lists the zones, for a
//     binding to back off as it backs off a zone whose creates fail).
//   - Unreachable zones (Spec.Unreachable) and unreachable replicas
//     (Replica.Unreachable): their replicas are unknown, never
//     unhealthy, never remediated.
//   - Suspension: once Remediation.MaxFailures (DefaultMaxFailures, 3)
//     replacements in a row failed, replicas replaced that had not been
//     healthy since they started (History.Failures, which the
//     caller keeps with History.After), nothing is remediated
//     (HoldSuspended, HealthStatus.Suspended) until a replica that started
//     after the last failure is healthy: a template whose replicas never
//     become healthy costs at most MaxFailures failed clones, not a loop.
//   - Backoff: after a failed replacement the next waits
//     Remediation.Backoff (DefaultRemediationBackoff, 1 minute), doubled
//     for each further failure (HoldRemediationBackoff).
//   - In flight: at most Remediation.MaxInFlight remediations are under
//     way (DefaultMaxInFlight, 10% of Desired rounded up, so at least 1):
//     restarted replicas in their start-up window, and replicas being
//     deleted that were unhealthy or failed (HoldInFlight).
//
// A replica asked for (Health.RemediateNow) passes the storm, zone, suspension and
// backoff guards, which guard against faults outside the replicas, but not
// the cap in flight. Replicas due are taken asked for first, then failed,
// then by when they fell due. HealthStatus says what the pass found, with
// Allowed, Cluster API's remediationsAllowed; NextCheck is when a window
// or a backoff ends, so that a binding requeues for it: no event marks
// that moment. While a storm holds, every unhealthy replica is named in
// its HoldTooManyUnhealthy hold, due or not, and no unhealthy window is a
// time to look again (they run from the storm's end, which a change of
// health marks): NextCheck is then a start-up window's or a backoff's end,
// if any.
//
// What a binding keeps, pass to pass, for each replica's Health: set
// Started when its start-up window is to begin, from the replica's
// creation or its start, and for a replica still PhasePending too, so
// that one that never comes up (a clone that hangs, a Pod whose image is
// never pulled) is remediated as one that came up and hung is; feed every health check's answer
// to Health.Observe; once it has restarted a replica of Plan.Restart,
// record it with Health.Restart; and keep it where a restarted binding
// finds it again (on the replica: an annotation, a property). Ready stays
// what readiness says: a replica that reads as Ready while its check
// fails is judged by its health, not its readiness. Keep the set's
// History with History.After, given the plan as carried out: a
// replacement whose delete failed was not made.
//
// Remediation.Restart is off in the zero Remediation: a replica due is
// replaced. Turn it on where a restart is cheaper than a replacement and
// can mend what fails (a VM reset against a hung guest); the example
// operator turns it on by default.
//
// The defaults: the start-up window (DefaultStartupWindow, 10 minutes) is
// Cluster API's nodeStartupTimeout, as a clone, its boot and a guest's
// first heartbeat take minutes; the unhealthy window
// (DefaultUnhealthyWindow, 5 minutes) outlasts a vMotion, a guest tools
// restart or a network blip; 40% is Cluster API's documented short-circuit
// example, below the Kubernetes node controller's 55% for a zone outage;
// 10% in flight is twice Azure's automatic repairs' 5%.
//
// # Lifecycle hooks
//
// With Spec.Lifecycle, a replica leaves only once whatever runs on it has
// left: its pre-delete hooks (Cluster API's pre-drain and pre-terminate
// annotations, AWS Auto Scaling's Terminating:Wait, OpenKruise CloneSet's
// PreparingDelete) gate every deletion the rules decide, and launch gates
// (AWS's Pending:Wait, CloneSet's PreparingNormal, Pod readinessGates)
// keep a new replica out of the count of ready ones until they open.
//
// Every deletion passes the gate. A replica that scale-down, a rollout,
// remediation or rebalancing chooses is not deleted but listed in
// Plan.Prepare: the caller records Replica.Preparing on it (the pass's
// time, and the hooks that hold it) and tells its hooks. Drain plans the
// owner's own deletion the same way. A later pass deletes it (Plan.Delete)
// once its hooks released it (Preparing.Hooks empty), or once
// Lifecycle.Timeout has passed since Preparing.Since (listed in
// LifecycleStatus.TimedOut, for an event); with Lifecycle.Abandon it
// stays, preparing and held (HoldHookAbandoned), until its hooks release
// it. Lifecycle.Hold states the rule for one preparation. While hooks hold a replica within their timeout it
// waits (HoldPreDelete, which names it, its hooks and their deadline), and
// LifecycleStatus.NextCheck says when to look again. The one exception: a
// replica that never ran (PhasePending, a clone in flight; or
// PhaseFailed) has nothing to drain, and is deleted without preparing, so
// that hooks waiting on a workload that never started do not run to their
// timeout (aws-node-termination-handler#575).
//
// A preparing replica is leaving, and the rules plan for it as for a
// replica being deleted: it counts toward Desired (unless
// Spec.ReplaceDeleting) and toward a rollout's Desired + MaxSurge, it
// never counts as available toward Desired − MaxUnavailable or any
// other bound, and it is never chosen again. Whether it still counts as
// ready or available in status while it drains (Summarize, where it is
// counted in Status.Preparing too) is what Replica.Ready says, which the
// binding decides: the kube binding keeps a preparing replica's readiness
// unless told to mark it not ready, as CloneSet's markPodNotReady. So a
// rollout never relies on a draining replica to meet its bounds, whether
// it still serves or not.
//
// A scale-up while replicas prepare takes them back (Plan.Cancel) before
// it creates anything new: a cancelled drain is a patch, a clone is
// minutes. It takes back only replicas the rules would keep (running,
// ready, whether a launch gate is closed or not, on the wanted revision,
// in a reachable listed zone, not unhealthy, not marked for deletion),
// those that began to prepare last first, and only as many as bring the
// live replicas to the desired count (K, with unreachable zones). A
// preparing replica protected from scale-in since it began to prepare is
// taken back whatever the count, as the rules would never have chosen it.
// Replicas in unreachable zones stay preparing, in Plan.Unknown, until
// their zone answers. A spec that drops its Lifecycle while replicas
// prepare takes every known one back that the plan neither deletes nor
// updates in place, so that no stale record counts as a preparation long
// under way were the Lifecycle set again.
//
// A replica with a launch gate still closed (Replica.LaunchGated) is
// neither ready nor available, whatever Replica.Ready says, so a rollout
// does not count it toward its bounds and does not delete an old replica
// for it (the launch-before-terminate trap of
// aws-node-termination-handler#292). With Spec.Remediation, one whose
// gate stays closed past its start-up window is unhealthy, and is
// remediated as any other.
//
// DefaultHookTimeout (15 minutes) says why it is long enough for a drain
// and short enough for a hook whose handler crashed.
//
// # In-place updates
//
// Strategy.Method chooses how a rolling update moves a replica on an
// older revision onto the wanted one: UpdateReplace (the default)
// replaces it; UpdateInPlaceIfPossible changes it where it runs when it
// can and replaces it otherwise; UpdateInPlaceOnly changes it where it
// runs or not at all (fail-closed, as CloneSet's InPlaceOnly and
// cluster-api#13863). The binding says, replica by replica, what its
// change takes (Replica.InPlace): InPlaceLive, made while it runs and
// serves (a VM's memory or CPUs raised with hot-add on, or any change to
// a VM that is off); InPlacePowerCycle, made only with it stopped (a
// decrease, or hot-add off); InPlaceNone, not at all (another template
// VM, other disks or networks), with what blocks it in
// Replica.InPlaceBlocker. The planner never looks at what changed: the
// binding separates what a running replica can take from what needs a
// new one (vmprovider.BaseRevision does so for VMs).
//
// An in-place update is a step of the rollout, under the same bounds:
//
//   - Every in-place step checks in one order, and its holds follow it:
//     the strategy (a rolling update, not paused, an in-place method);
//     the replica (protected, marked, failed, with Remediation unhealthy,
//     then its change: InPlaceBlocker, or a power cycle MaxUnavailable 0
//     does not allow), the first that applies naming it in Plan.Fallback
//     (or HoldInPlaceOnly); Partition and the scale-down (as many move as
//     Partition lets and a scale-down does not delete: it takes replicas
//     on older revisions first); the per-pass cap (the rest are
//     Deferred, HoldMaxPerPass); then the budget (HoldMaxUnavailable,
//     below). The checks of the strategy and the replica, in that order,
//     also decide whether a preparation for an update still applies.
//     Replicas in unreachable zones are left alone. In-place
//     updates are not ordered by zone: Strategy.ZoneByZone orders only
//     the replacements.
//   - A live update (Update.PowerCycle false) keeps the replica
//     available: a rollout of replicas that all take their change live
//     creates nothing, deletes nothing, and is done in one pass (a
//     replica not yet available that may serve counts once against the
//     budget below, as a deletion of it would).
//   - A power cycle makes the replica unavailable until it is back, so
//     it spends MaxUnavailable's budget as the deletion of an available
//     replica does; those the budget does not cover wait
//     (HoldMaxUnavailable). With MaxUnavailable 0 no replica may be
//     unavailable: UpdateInPlaceIfPossible replaces such replicas with
//     surge replicas instead, and UpdateInPlaceOnly holds them
//     (HoldInPlaceOnly).
//   - With Spec.Lifecycle a power cycle drains first: the replica is
//     listed in Plan.PrepareUpdate, records Replica.Preparing with Update
//     set, and is in Plan.Update once its hooks released it (or timed
//     out without Abandon). While it prepares it is planned as the
//     power cycle under way (on the wanted revision, not available), so
//     it is never updated and replaced at once. A rollback, a pause,
//     another method or a change that no longer fits takes it back
//     (Plan.Cancel) in the pass that finds it, whatever the rules would
//     choose for it then (its hooks were told it comes back), so that no
//     replica drains for an update that will not come (kruise#1156); a
//     later pass may choose it to leave, and it prepares again, for that.
//     A scale-down while the update still applies may delete it instead,
//     once its hooks released it. A live update needs no drain.
//   - A replica updated in place, or waiting for its update, is on the
//     wanted revision from then on in the pass (a power cycle out of
//     service, one waiting serving as before): the rules replace the
//     replicas left (UpdateInPlaceIfPossible) or, under
//     UpdateInPlaceOnly, none, as if the rollout were paused
//     (HoldInPlaceOnly), and every bound of the Rollouts section holds on
//     what both leave. A replica whose power cycle the per-pass cap
//     defers after its hooks released it stays preparing (Plan.Deferred):
//     it is a power cycle under way, not a replica waiting on an older
//     revision, so no hold counts it.
//   - The binding records the new revision on a replica only once its
//     change shows (for a VM, once vCenter reports the new hardware), so
//     a failed update leaves it on its revision, planned again next pass;
//     an update that failed for good is reported InPlaceNone with the
//     failure as its InPlaceBlocker, and the method's fallback applies:
//     replaced, or held with the reason named.
//
// # One pass
//
// Compute is one pass, as raft's Step is one entry for every message: it
// validates the input once (the spec, then each replica, as Drain does,
// then the policy); classifies every replica once (unknown, in an
// unreachable zone; being deleted; preparing to leave; preparing for a
// power cycle still to come; taken back; live, and of the live ones on the
// wanted revision or not, available, may serve, broken, marked,
// protected, in which zone); resolves one budget; and chooses actions in
// one priority, each through the budget's one check, which returns the
// hold that stops it. Every feature is a state of a replica or a use of
// that budget, so when two rules meet, the priority below decides, and
// says why:
//
//  1. Replicas in unreachable zones are set aside, and the known replicas
//     are planned for K (Unreachable zones): every bound below, the
//     take-back of preparations, the in-place budget and remediation's
//     guards included, is resolved for K.
//  2. Preparations are settled into states: a replica preparing to leave
//     counts as being deleted unless a scale-up takes it back; one
//     preparing for a power cycle that still applies is that power cycle
//     under way; one whose update no longer applies is taken back and
//     chosen by nothing in this pass.
//  3. Remediation goes first: the replicas it replaces leave before any
//     other rule looks (they count as being deleted, and are not held by
//     MaxUnavailable: an unhealthy replica is no replica to count on), and
//     up to MaxPerPass of them use the per-pass cap of deletes first.
//  4. The budget is resolved once from what is left: the available
//     replicas, and those that may serve, above D − MaxUnavailable. Every
//     action that takes a replica out of service spends it: a deletion, a
//     preparation, a power cycle.
//  5. In-place updates, leaving to the scale-down as many replicas on
//     older revisions as it will delete; what they spend, the rules
//     below cannot.
//  6. Scaling, in the deletion order; while a rollout is in progress
//     (Rollouts), within the budget, and within MaxSurge while more than
//     Partition replicas are on older revisions.
//  7. Replacement, of what in-place updates and scaling left.
//  8. Remediation's replacements, in what MaxSurge leaves after the
//     rollout's creates.
//  9. Rebalancing, only in a pass where nothing else acts.
//
// The plan is then emitted through the pre-delete gate (Lifecycle hooks):
// deletions and power cycles of replicas that ran become preparations,
// preparations whose hooks released them become deletions or power
// cycles, and both keep to the per-pass cap.
//
// # Invariants
//
// For every valid input, each plan Compute returns keeps these, each
// stated once (replicasettest.Check states the same list as code, for a
// binding's own tests):
//
//   - Each replica is in at most one of Delete, Prepare, Cancel, Update,
//     PrepareUpdate, Restart, Deleting and Unknown, and at most once in
//     each; Replace is part of Delete and Prepare, Fallback lists each
//     replica once.
//   - Nothing is done to a replica already being deleted (it is in
//     Deleting) nor to one in an unreachable zone (it is in Unknown,
//     exactly those), and no create goes to such a zone.
//   - Create, Delete and Update each keep to the per-pass cap; with zones,
//     every create has a zone, never one backing off while another is not.
//   - No protected replica is in Delete or Prepare; a Shortfall says how
//     many short. Deletions follow the deletion order, under every policy.
//   - With Spec.Lifecycle, no replica that ran is deleted or power-cycled
//     unless its preparation's hooks released it or timed out without
//     Lifecycle.Abandon.
//   - Counting: with nothing capped, short or held, the plan lands on the
//     desired count (Counting).
//   - While a rollout is in progress, the available replicas, and those
//     that may serve, stay at D − MaxUnavailable or above through the pass
//     (or no lower than they were), deletions, preparations and power
//     cycles counted together; while replicas on older revisions remain
//     beyond the partition, live, deleting and preparing replicas plus
//     creates stay within D + MaxSurge (or do not grow); a rollout's
//     deletes keep Partition replicas on older revisions; the last
//     available replica on the wanted revision stays while D is above
//     zero; a rollout's surge creates are at most the replicas left to
//     replace; each replica on an older revision beyond the partition that
//     the pass does not delete, prepare, update or replace is counted by
//     exactly one hold (remediation's Protected and ZoneBackoff holds
//     also count the protected and failed replicas it leaves, whatever
//     their revision), but one restarted in the pass: a hold counts it
//     when the rollout holds it anyway (paused, say), none when it would
//     have been updated in place, its update waiting for the restart. D is
//     K with unreachable zones.
//   - The same spec, replicas in any order, policy and time give the same
//     plan.
//
// Through passes, carrying plans out: a set converges on its desired count
// (or its shortfall) in a bounded number of passes, with no replica on an
// older revision beyond Partition (under UpdateInPlaceOnly, but those that
// cannot change in place), none preparing once hooks release, zones within
// one of each other after a rollout over zones that were, and a settled
// set is a fixed point; a storm whose replicas recover within the window
// of its end replaces nothing, a flap shorter than the window is never
// remediated, and a template whose replicas never become healthy is
// suspended after MaxFailures failed replacements; through partitions
// that come and go the set holds at most D + MaxSurge replicas (a
// rollout's surge on top) unless more than D are unknown.
//
// The property tests check each of these with every feature drawn at
// once, and check Compute against deliberately naive reference
// implementations.
//
// [Counting]: https://pkg.go.dev/github.com/replicakit/replicakit/replicaset#hdr-Counting
// [Deletion order]: https://pkg.go.dev/github.com/replicakit/replicakit/replicaset#hdr-Deletion_order
// [Zones]: https://pkg.go.dev/github.com/replicakit/replicakit/replicaset#hdr-Zones
// [Rollouts]: https://pkg.go.dev/github.com/replicakit/replicakit/replicaset#hdr-Rollouts
// [Unreachable zones]: https://pkg.go.dev/github.com/replicakit/replicakit/replicaset#hdr-Unreachable_zones
// [Self-healing]: https://pkg.go.dev/github.com/replicakit/replicakit/replicaset#hdr-Self_healing
// [Lifecycle hooks]: https://pkg.go.dev/github.com/replicakit/replicakit/replicaset#hdr-Lifecycle_hooks
// [In-place updates]: https://pkg.go.dev/github.com/replicakit/replicakit/replicaset#hdr-In_place_updates
// [One pass]: https://pkg.go.dev/github.com/replicakit/replicakit/replicaset#hdr-One_pass
// [Invariants]: https://pkg.go.dev/github.com/replicakit/replicakit/replicaset#hdr-Invariants
package replicaset
