// Package replicaset is the pure core of replicakit: it decides how to
// converge a set of replicas on a desired count, and reports honest status.
//
// It imports only the standard library, takes no context, reads no clock,
// uses no global randomness and does no logging: the time of a pass is an
// argument, and randomness comes from seeds (Spec.Seed, a policy's seed). Its functions
// return values that describe work (a Plan, a Status); bindings such as the
// controller-runtime reconciler or the VM provider's actuator carry them out.
// This is the shape of etcd's raft, whose core returns a Ready value and lets
// the application do the I/O.
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
// and reports status with [Summarize], requeueing after [NextAvailable] when
// a replica is about to become available. Creates are issued with slow
// start: never more started than [SlowStartAllowance] for as many
// successes, the bound of [SlowStart]'s batches. The execute subpackage does
// this for any binding.
//
// # Rollouts
//
// A set that records revisions changes its replicas, not only their number:
// give Spec.Revision the revision replicas should be on (a hash of the
// owner's template), set each Replica.Revision to the one it was made from,
// and choose a Strategy. The zero Strategy is a RollingUpdate of one surge
// replica and none unavailable (DefaultMaxSurge, DefaultMaxUnavailable):
// every serving VM keeps serving until its replacement is available.
// Partition keeps some replicas on older revisions (a canary), Paused
// stops replacing them (scaling goes on), and OnDelete replaces only
// replicas that go away for other reasons. Rolling back is setting the
// older revision again: replicas still on it count as updated at once and
// are never deleted for it. Plan.Holds says, bound by bound, why replicas
// on older revisions wait. Compute's documentation states the order and
// the bounds; Strategy.Limits states the one rounding rule.
//
// # Unreachable zones
//
// When the platform of a zone stops answering (a vCenter cut off by a
// network partition), its replicas are not gone: they are unknown. List
// such zones in Spec.Unreachable and Compute leaves their replicas alone
// (Plan.Unknown), stands in for them with at most MaxSurge replicas in the
// zones that answer, and takes those back by its usual order once the zone
// answers again. Compute's documentation states the rules.
//
// # Invariants
//
// For every valid input, Compute guarantees:
//
//   - Counting: with no cap in the way, live + len(Delete) balances Desired:
//     live − len(Delete) == Desired after a scale-down, and
//     counted + Create == Desired after a scale-up, where counted includes
//     replicas being deleted unless Spec.ReplaceDeleting is set.
//   - Caps: Create and len(Delete) are each at most the per-pass cap.
//   - Deletion order: the one Compute's documentation states (the only
//     place it is stated), under every policy; a replica already being
//     deleted is never in Delete, it is listed in Deleting.
//   - Protected replicas are never in Delete; a Shortfall says how many short.
//   - Zones: with Spec.Zones, every create has a zone (Plan.CreateZones),
//     never one backing off while another is not; a set whose replicas are
//     healthy, unmarked and unprotected and spread within one of balance
//     stays so after every pass while no zone backs off, capped or not;
//     while no zone backs off, creates never take zones further apart, nor
//     do scale-downs of healthy replicas when none is protected;
//     Plan.Unbalanced is set exactly when the zones will end more than one
//     apart. With Spec.Rebalance, passes move a set back into balance one
//     replica at a time, create before delete, and never take its
//     available replicas below the desired count (or below where they
//     were). [SummarizeZones] reports status per zone.
//   - Rollouts (Spec.Revision), while some live replica is on an older
//     revision: available replicas never go below Desired −
//     MaxUnavailable through a pass (nor lower when already below);
//     while replicas on older revisions remain to be replaced,
//     live and deleting replicas never exceed Desired + MaxSurge through
//     a pass; a rollout's deletes respect Partition exactly; the last
//     available replica on the wanted revision is never deleted while
//     Desired is above zero; a healthy set converges with no replica on
//     an older revision beyond Partition, and a settled set is a fixed
//     point; with zones, creates go where replicas on the wanted revision
//     are fewest, so a rollout from zones within one of each other ends
//     within one, and no replica is replaced in a zone backing off.
//     Without Spec.Revision, or with no live replica on an older
//     revision, Compute plans as it did before revisions existed.
//   - Unreachable zones (Spec.Unreachable): their replicas are in
//     Plan.Unknown and in no other part of the plan; no create goes to
//     them; the other replicas are planned exactly as a set of their own
//     of K = max(0, D − u) + min(u, MaxSurge, D) replicas, so every
//     invariant above holds of them with K for Desired; replicas on older
//     revisions there are held (HoldUnreachable). Through partitions that
//     come and go, the set never holds more than D + MaxSurge replicas
//     (a rollout's surge on top) unless more than D are unknown, and once
//     every zone answers it converges as any set does.
//   - Determinism: the same spec, replicas (in any order), policy and time
//     give the same plan.
//   - Convergence: carrying out plans repeatedly reaches Desired (or the
//     shortfall) in a bounded number of passes.
//
// The property tests in this package check each of these, and check Compute
// against a deliberately naive reference implementation.
package replicaset
