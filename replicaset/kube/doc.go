// Package kube binds the replicaset planner to controller-runtime: a
// generic [Reconciler] keeps the children of any owner kind converged on the
// owner's desired count, with a page of kind-specific code (an [Adapter]).
// The package example shows a whole operator's worth: a typed owner, its
// Adapter, the Reconciler and its permissions.
//
// # Install
//
//	go get github.com/replicakit/replicakit
//
// and import github.com/replicakit/replicakit/replicaset/kube (and
// deletionpolicy, should you register policies of your own).
//
// # One pass
//
// Each reconcile is read, decide, apply, report; only read, apply and
// report do I/O, and the choices are made by two pure functions, one
// before the writes and one after, as etcd's raft returns a Ready value and
// leaves the work to the application (Advance):
//
//   - read gathers an observation: the owner, its own children (through an
//     index on their controller's UID), the orphans its selector matches
//     (through the same index), what the expectations still wait for, names
//     found taken, and the clock.
//   - decide turns it into a decision listing every action of the pass:
//     the orphans to adopt, the children to release, the names to create
//     and the replicas to delete (the replicaset.Compute plan).
//   - apply carries the decision out and decides nothing (the Adapter's
//     ApplyInPlace brings a child updated in place in line with its
//     template there, and a child it leaves unchanged is not written): it
//     confirms the owner on the API server when the pass adopts, releases
//     or creates (doing nothing if the owner is gone or being deleted),
//     then adopts and releases, then creates and deletes (execute.Plan,
//     slow start),
//     stopping at the first step that fails. A delete goes through only
//     if the child is still the one the pass read: its UID and
//     resourceVersion are the delete's preconditions. A child that
//     changed since (one not yet ready that became ready while the pass's
//     creates ran, one protected or unmarked meanwhile) is left, with no
//     failure reported (a line at log level 1 names it; the pass writes
//     status), and the next pass, which its change's watch event starts,
//     plans with it.
//   - report settles what happened (the second pure function): the status
//     and its conditions, events, which expectations to drop, and when to
//     look again; then it patches status if it changed.
//
// A pass holds, doing nothing but status, when the spec cannot be used (an
// invalid selector or template, an unknown policy, a policy that needs
// ordinal names), when the owner is being deleted (the garbage
// collector's cascade stays whole: no adoption, release or create), and
// when the owner is paused; each condition's reason says which (see the
// Reason constants). While the cache has not shown the last pass's writes
// a pass holds without writing status at all: what it sees is stale, and
// the pass that sees those writes comes with their watch events; such a
// pass does not even describe the children. For the
// same reason a pass whose writes all succeeded leaves status to that
// next pass: one status write per owner per step, not two.
//
// The Adapter's methods are called from several workers at once, and
// NewChild from several creates of one pass at once.
//
// # Cost
//
// A pass reads what its owner has, not what the namespace holds: the
// owner's children through the index [Reconciler.SetupWithManager]
// registers, its candidate orphans through the same index under one
// matchLabels pair of its selector, and nothing is deep-copied unless it is
// about to be written (the Adapter's Spec and Describe see the cache's own
// objects; NewChild builds one new child per pass to learn the template's
// labels). With the manager's own cache the children are read from the
// child informer's indexer directly, not copied into a list first. The
// owners of a new orphan are found through an index on one matchLabels
// pair of their selectors. Events of
// children reach their owner through the controller reference, without a
// REST mapping per event.
//
// The API server is read directly only to confirm the owner before
// adopting or releasing (and before creating, with
// ConfirmOwnerBeforeCreate), once per such pass; to settle a create that
// failed without a clear answer or found its name taken; and when
// expectations expire. A platform that refuses every create costs, per
// pass, the creates slow start lets begin before the first answer
// (Execute.InitialBatch, one by default), and one read for each of them
// that failed without a clear answer. [DefaultMaxConcurrentReconciles]
// owners are reconciled at once.
//
// The Reconciler reads through the manager's cache, which serves typed and
// unstructured owners alike: unstructured owners need no
// client.Options.Cache.Unstructured.
//
// Much of a controller's CPU goes into decoding watch events. Inside a
// cluster, configure the manager's rest.Config as kube-controller-manager
// configures its own: ContentType runtime.ContentTypeProtobuf (built-in
// children such as Pods are then decoded from protobuf; custom resources
// stay JSON) and DisableCompression true (gzip saves little on a local
// network and costs a decompression for every event). The Reconciler never
// reads managed fields, so the cache may drop them, as the informers of
// kube-controller-manager do: cache.Options{DefaultTransform:
// cache.TransformStripManagedFields()} in the manager's options keeps less
// in memory for the garbage collector to scan. An owner of a custom
// resource kind still costs more than a built-in one: its events are JSON
// (make bench-e2e compares both beside the ReplicaSet controller).
//
// controller-runtime's client.Delete decodes the API server's answer (the
// whole child being deleted) and round-trips it through JSON before
// dropping it. With the manager's own client, unwrapped, the Reconciler
// sends the same delete through a REST client of its own on the manager's
// connection, asking for the answer as metadata and reading none of it
// but a failure, as the ReplicaSet controller reads none of it (see
// Reconciler.Client).
//
// # Freshness
//
// Caches lag. The Reconciler's expectations (kept internal, as the
// ReplicaSet controller's are) remember what a pass created, adopted,
// deleted and released, and hold the next pass until the cache shows
// those writes; when it has not within 5 minutes, the pass reads the
// children from the API server instead of assuming success. This is what keeps a
// stale cache from making a replica set create more children than asked
// for. A create refused by the API server is forgiven at once; one that
// failed without a clear answer is checked with one read, and forgiven if
// the child is not there (a create still in flight on the server at that
// moment could yet land: the next scale-down pass removes the one child
// too many). A name found taken by someone else's object is left alone
// (unless it is an orphan the selector matches, which is adopted): it is
// remembered, and the next pass, at once, creates under another name.
//
// # Names
//
// [RandomNames] (the default) names children like generateName; with
// [OrdinalNames] they are web-0 … web-N-1, the lowest free ordinal first,
// and the HighestOrdinal policy removes the highest. HighestOrdinal with
// random names is refused with the condition reason NeedsOrdinalNames.
//
// # Steering scale-down
//
// [AnnotationDeleteFirst], [AnnotationDeletionCost] and
// [AnnotationScaleInProtection] on a child map to the planner's marked,
// cost and protected replica fields ([ReplicaOf]); the deletion order they
// take part in is stated once, in replicaset.Compute. A malformed cost is a
// Warning event (on each pass that sees it) and part of the ReplicaFailure
// condition, naming the child and the value.
//
// # Zones
//
// An owner whose Spec lists Zones has its children spread over them:
// each new child is put in the zone the plan chose (replicaset.Compute:
// fewest live children first), scale-down takes from the fullest zone, and
// a child's zone is read from its [ZoneLabel] label (topology.kubernetes.io/zone),
// which the binding also writes on new children, unless the Adapter is a
// [Zoner] and keeps the zone elsewhere (the example operator's VirtualMachines
// carry it in spec.zone). The label records the zone; it places nothing:
// for a kind that something else places, implement Zoner and set what
// places the child in SetZone. For Pods, which the scheduler places,
// embed [PodZones] in the Adapter: a node selector on the zone label.
//
// When creates in a zone fail, the zone is avoided for
// Reconciler.ZoneBackoff and the children it should have held go to the
// others, so the owner still reaches its count. A child that is made but
// then fails in its zone (the Adapter's Describe says
// replicaset.PhaseFailed: a VM whose clone vCenter refused) backs its zone
// off the same way, once, and is replaced by the planner's rule for
// replicas failed in a zone (replicaset.Spec.ReplaceFailed, which the
// binding sets for every owner with zones): while some zone is healthy
// (not backing off, no failed child in it) it is deleted, the plan
// counting it as being deleted (Spec.ReplaceDeleting decides whether its
// replacement is made at once or once it is gone), and the replacement
// goes to a zone not backing off; with no healthy zone, failed children
// stay where they are, as failed children do without zones (a VM's clone
// is retried in place), so a set whose every zone fails does not churn.
// With Spec.Remediation the self-healing guards apply to them as well.
// When every zone is backing off, new children may go to any of them, as
// replicaset.Compute says. Replacements share the per-pass cap with the
// plan's deletes. Status.Zones shows each zone's children and
// backoff, the ZonesBalanced condition says whether the zones are within
// one of each other and, if not, why (ZoneFailing, ScaleInProtected,
// Scaling, PerPassCap, Rebalancing, Unbalanced; ReplicaFailure, Paused or
// OwnerDeleting when the pass holds), and the owner is looked at again
// when a backoff ends. The backoff lives in the Reconciler's memory: a
// restarted controller starts with no zone backing off. With
// Spec.Rebalance the children move back, one at a time, create before
// delete, never taking available children below the desired count.
//
// # Rollouts
//
// An Adapter that returns Spec.Rollout turns rollouts on for its owner.
// The revision of the owner's template is a hash of everything but the
// metadata of the child NewChild builds (an InPlaceUpdater says otherwise);
// every new child carries it in RevisionLabel, and a child made from an
// older template is replaced under the strategy, with the order and bounds
// replicaset.Compute states: one surge child and none unavailable unless
// the strategy says otherwise. The template's labels and annotations reach
// every child in place, as a patch, with no new child. A label the
// template drops is removed from the children the binding put it on
// (it records which in [AnnotationTemplateLabels]), never from a child
// where someone else put it; an annotation the template drops stays.
// The revision label too is put in place on children made before
// rollouts were turned on, which count as made from the current template
// and are not replaced (see RevisionLabel), unless the Adapter is a
// [TemplateMatcher] and says they do not match it. Rolling back is
// applying the old template again: children still on it count as updated
// at once. Status reports
// UpdatedReplicas, UpdatedReadyReplicas, UpdatedAvailableReplicas,
// UpdateRevision and CurrentRevision (the revision it rolls from), and the
// RolledOut condition says whether the rollout is
// complete (RolloutComplete, RolloutPartitioned) or, if not, whether it
// progresses, is paused or is held, and by what bound (RolloutHeld, with
// the planner's Hold reasons); with Spec.ProgressDeadline, that it has not
// moved for that long (ProgressDeadlineExceeded). It never rolls back on
// its own: rolling back is the user's choice.
//
// A healthy rollout pages no one: while its surge children are up (more
// children than desired, within MaxSurge), ScalingDown is False, Ready
// stays True as long as the desired count of children are ready, and
// ZonesBalanced stays True when the zones are within one of each other
// but for the surge, all three with reason RolloutSurge. A scale-down
// beyond the surge is reported as one.
//
// # In-place updates
//
// An Adapter that is an [InPlaceRollout] lets a rollout change children
// where they run instead of replacing them, as the strategy's Method
// (replicaset.UpdateInPlaceIfPossible, UpdateInPlaceOnly) asks, under the
// rules of replicaset's In-place updates section: a live change at once,
// a power cycle within MaxUnavailable and, with Spec.Lifecycle, after the
// pre-delete hooks' drain (AnnotationPreparing with
// [AnnotationPreparingUpdate]). For each child on an older revision the
// binding asks InPlace how it could take the current template; for each
// the plan updates it calls ApplyInPlace on a copy, patches the
// difference and marks the child with [AnnotationInPlaceRevision]; the
// child's controller makes the change. Only once ShowsInPlace says the
// child runs with it does a pass move RevisionLabel to the new revision,
// remove the marks and stamp [AnnotationUpdatedInPlace]: until then the
// child counts as on its older revision (status does not call it
// updated), and a rollback mid-way changes it back, since a child marked
// for another revision than its label's counts as on the marked one.
// Under UpdateInPlaceOnly, a change that cannot be made in place holds
// the rollout: RolledOut says RolloutHeld and names the child and why.
// Power cycles within MaxUnavailable page no one: while the only children
// not ready are those being cycled or drained for it, Ready stays True
// with the reason RolloutInPlace.
//
// A power cycle is whatever stops a child serving while it changes: a
// VM powered off and on, or, for a Pod, a container restart. What a child
// takes only through a subresource, an Adapter that is also an
// [InPlaceSubresource] changes there: a Pod's container resources go
// through its resize subresource (in-place Pod vertical scaling), since
// the API server refuses them in a patch of the Pod. The binding patches
// the object first, then the subresource, each only when the Adapter
// changed something; it needs patch on the subresource too
// (pods/resize). Example_podInPlace is an Adapter's in-place part
// for Pods to copy: an image change is a container restart, so a power
// cycle, patched into the Pod; a resources change the resize policy
// allows without a restart (NotRequired) is live, through resize; the
// Pod shows the change once its status (observedGeneration, and each
// container's image and resources) reports it.
//
// # Self-healing
//
// An Adapter that returns Spec.Remediation turns self-healing on for its
// owner: children that stay unhealthy are replaced (or, with
// Remediation.Restart, restarted first), when and under the guards
// replicaset's Self-healing section states: the start-up and unhealthy
// windows, skip and remediate-now, the storm and zone guards, the
// backoff and suspension after failed replacements, the cap in flight.
// Each pass checks each child's health: healthy when Ready (as Describe
// made it) and, with the Adapter's [HealthChecker], when its check
// passes too ([PodHealth] is one for Pods); unhealthy otherwise, with the
// check's reason or NotReady. It keeps the health on the child, in
// [AnnotationHealth], written in place only when it changes, so a
// restarted controller keeps the windows it measured. The start-up
// window runs from the child's creation (its creationTimestamp: a Pod
// stuck Pending, its image not pulled or no node for it, is remediated
// when the window ends, as one that started and hung is), or from when
// the Adapter's [Starter] says it started (the example operator's: when
// the VM's clone is under way). [AnnotationSkipRemediation] and
// [AnnotationRemediate] on a child opt it out or ask for it now. The
// set's failed replacements are kept on the owner, in
// [AnnotationRemediationHistory], with the template revision they were
// counted under (with Spec.Rollout): a pass on another revision clears
// them, so that a template mended, or rolled back to, heals again instead
// of staying suspended; and a child replaced on an older revision than
// the template's is no failure of the template. Without Spec.Rollout, remove the annotation to
// resume a suspended remediation. A restart goes to the Adapter's
// [Restarter]; an owner asking for restarts from an Adapter that is no
// Restarter is refused (ReplicaFailure InvalidSpec). Status reports
// UnhealthyReplicas and RemediationsAllowed, the RemediationAllowed
// condition says whether remediation may run and if not which guard
// stops it (a condition held by the planner has the hold's kind as its
// reason, replicaset.HoldKind.String: TooManyUnhealthy, Suspended,
// RemediationBackoff, RemediationInFlight), each remediated child has an
// event (Remediating, Restarting), and the owner is looked at again when
// a window or backoff ends. Until the cache shows a restart in the
// child's health, the owner's passes wait, as they wait for the
// expectations: a stale child would look due again.
// Without Spec.Remediation nothing of this happens: no health is checked
// or written.
//
// # Lifecycle hooks
//
// With Spec.Lifecycle, a child leaves only once whatever runs on it has
// left (replicaset's Lifecycle hooks section states the rules). Hooks and
// gates are annotations on the child, in Cluster API's shape, under a
// domain of your choosing, Reconciler.HookDomain (DefaultHookDomain,
// replicakit.io, when empty). With the domain example.com:
//
//   - A child chosen to leave (scale-down, rollout, remediation,
//     rebalancing) is not deleted: the binding writes
//     [AnnotationPreparing] (the time) on it, and
//     pre-delete.hook.example.com/<name> for each hook the spec names
//     (Lifecycle.PreDelete). A hook's controller watches for
//     AnnotationPreparing, does its work (drains the node, deregisters
//     the address, flushes the data) and removes its own annotation. Any
//     other pre-delete.hook.example.com/ annotation on the child, put
//     there by a controller the spec does not name, holds it the same
//     way ([PreDeleteHooks] lists them).
//   - Once no hook annotation is left, or Lifecycle.Timeout has passed
//     since AnnotationPreparing, the child is deleted (a HookTimedOut
//     event says when hooks still held it); with Lifecycle.Abandon it
//     stays instead, and ReplicaFailure says so (reason
//     HookAbandoned) until its hooks release it; an owner being deleted
//     stays as long (FinalizerDrain), so remove the hook annotations to
//     let it go.
//   - A scale-up takes preparing children back before it creates: it
//     removes AnnotationPreparing and the named hooks' annotations (a
//     TakenBack event). A hook's controller that sees AnnotationPreparing
//     go undoes its work (uncordons the node).
//   - Deleting the owner drains its children first: an owner with a
//     Lifecycle carries [FinalizerDrain]; once deleted, its children
//     prepare, each is deleted as soon as its hooks release it (or time
//     out), and when no hook holds any, the finalizer goes and the
//     garbage collector deletes what is left. With foreground propagation the
//     garbage collector deletes the children at once, before the binding
//     can prepare them; so does a person deleting a child. Those paths
//     are the child controller's to gate, in its own finalizer: the
//     example operator's VirtualMachine controller prepares a
//     VirtualMachine deleted so (AnnotationPreparing and its set's hooks)
//     and destroys its VM only once [PreDeleteHooks] is empty or the
//     timeout passed.
//   - Each new child carries launch.gate.example.com/<name> for each gate
//     the spec names (Lifecycle.LaunchGates); it counts as neither ready
//     nor available until the gate's controller removes them all, and
//     with Spec.Remediation one still gated past its start-up window is
//     unhealthy.
//
// The preparation is kept on the child, so a restarted controller goes
// on where the last one was, its timeouts unchanged. A child's readiness
// gate opening does not restart Spec.MinReady: a child counts as
// available MinReady after the Adapter's ReadySince, gate or not. Status reports
// PreparingReplicas, the Draining condition names each child waiting,
// the hooks that hold it and until when, and the owner is looked at
// again when the first timeout passes. Until the cache shows a
// preparation (or a take-back), the owner's passes wait. Children that
// never ran (replicaset.PhasePending or PhaseFailed) have nothing to
// drain and are deleted without preparing.
//
// # Optional interfaces
//
// An Adapter may implement more than [Adapter]: [Zoner] (the child's
// zone kept elsewhere than the zone label, or set where something acts on
// it; [PodZones] is a ready one for Pods), [InPlaceUpdater] (more of the
// template applied to children in place, and the revision that leaves
// out), [TemplateMatcher] (children without a revision label told
// apart from the template's), [HealthChecker] (a child's health beyond
// readiness; [PodHealth] is a ready one for Pods), [Starter] (when a
// child's start-up window begins, if not at its creation), [Restarter]
// (a child restarted in place), [InPlaceRollout] (a rollout that changes
// children where they run) and [InPlaceSubresource] (part of such a
// change made through a subresource, a Pod's resize). The Reconciler finds them by type
// assertion, so an Adapter whose method has another signature, or that
// has them on its pointer and is given as a value, silently goes without:
// zones in the label, the binding's own revision, unlabelled children
// counted as current. SetupWithManager logs which ones it found and which
// not, and an error for each it seems meant to implement; check them at
// compile time, beside the Adapter:
//
//	var (
//		_ kube.Adapter[*WorkerPool, *corev1.Pod]         = poolAdapter{}
//		_ kube.Zoner[*corev1.Pod]                        = poolAdapter{}
//		_ kube.InPlaceUpdater[*WorkerPool, *corev1.Pod]  = poolAdapter{}
//		_ kube.TemplateMatcher[*WorkerPool, *corev1.Pod] = poolAdapter{}
//		_ kube.HealthChecker[*corev1.Pod]                = poolAdapter{}
//		_ kube.Starter[*corev1.Pod]                      = poolAdapter{}
//		_ kube.Restarter[*WorkerPool, *corev1.Pod]       = poolAdapter{}
//		_ kube.InPlaceRollout[*WorkerPool, *corev1.Pod]  = poolAdapter{}
//		_ kube.InPlaceSubresource[*corev1.Pod]           = poolAdapter{}
//	)
//
// An owner's API usually gives a rollout's maxSurge, maxUnavailable and
// partition as intstr.IntOrString, as a Deployment does: [AmountFrom]
// reads them as the Strategy's replicaset.Amount.
//
// # Permissions
//
// For an owner kind workerpools.example.com and Pod children, the
// kubebuilder markers (the package example carries them too):
//
//	+kubebuilder:rbac:groups=example.com,resources=workerpools,verbs=get;list;watch
//	+kubebuilder:rbac:groups=example.com,resources=workerpools/status,verbs=patch
//	+kubebuilder:rbac:groups=example.com,resources=workerpools/finalizers,verbs=update
//	+kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;patch;delete
//	+kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
//
// The finalizers update lets a child's owner reference set
// blockOwnerDeletion; patch on children adopts and releases them (and,
// with Spec.Remediation, writes their health). An owner with
// Spec.Remediation also needs patch on its own kind, for
// AnnotationRemediationHistory, and so does one with Spec.Lifecycle, for
// FinalizerDrain:
//
//	+kubebuilder:rbac:groups=example.com,resources=workerpools,verbs=get;list;watch;patch
//
// An [InPlaceSubresource] patches the subresource it names, so an
// Adapter resizing Pods in place also needs:
//
//	+kubebuilder:rbac:groups="",resources=pods/resize,verbs=patch
//
// An envtest test runs as an administrator, which no missing marker
// troubles; kubetest.ServiceAccountConfig runs the Reconciler as a
// service account with exactly the role controller-gen generated from
// the markers, so that one missing makes the binding's requests fail
// with Forbidden there, as in the cluster: a test that checks what they
// write (the owner's finalizer, its AnnotationRemediationHistory, its
// status) fails. While the remediation history cannot be written, the
// binding plans with the history in its memory, so the backoff and
// suspension after failed replacements still hold.
package kube
