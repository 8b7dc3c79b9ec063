// Package vmprovider defines what a replica set needs from a VM platform,
// and applies replica-set plans to VMs.
//
// A [Provider] creates, inspects, powers and destroys VMs. Every VM it
// creates carries an ownership mark (the [Owner]'s UID); a provider never
// modifies or destroys a VM without the caller's mark, and says so with a
// [NotOwnedError]. Create and Delete are idempotent, so a create retried
// after a lost response returns the VM instead of making a second one, and
// deleting a VM that is gone succeeds. Errors callers match are
// [ErrNotFound], [ErrNotOwned] and [ErrInvalidSpec].
//
// A [Spec] says what to make: the template, CPUs and memory (and whether
// they can be raised while the VM runs: CPUHotAdd, MemoryHotAdd), the
// networks its adapters join, guest customization through cloud-init
// ([CloudInit]), and where in the inventory it goes ([Placement]). A [VM]
// reports its size and hot-plug settings, the marks recorded on it (owner,
// zone, revision and base revision), and what its guest shows: addresses,
// hostname, tools and heartbeat. [Readiness] says when a VM counts as
// ready (powered on, a green heartbeat, or an address).
//
// The vsphere subpackage implements Provider with govmomi; the
// vmprovidertest subpackage has an in-memory Fake and Verify, a conformance
// check any implementation can run in its own tests.
//
// # Without Kubernetes
//
// [Set] runs one pass of list, plan and act for the VMs of one owner, so a
// program can keep N VMs in vCenter with no Kubernetes object at all: it
// describes the VMs to replicaset.Compute under its Readiness and carries
// the plan out with execute.Plan through its Provider.
//
// # Zones
//
// A zone is a failure domain and, here, a [Placement]: with Set.Zones
// mapping each zone of Set.Spec.Zones to where its VMs go (a cluster or
// resource pool, and optionally a folder and datastore), every new VM is
// placed in the zone the planner assigned, records it (Spec.Zone, read back
// as VM.Zone), and a zone whose creates fail is avoided for
// Set.ZoneBackoff while the other zones take its VMs.
//
// # Several vCenters
//
// [Endpoints] is a Provider over several endpoints, each a Provider of its
// own (a vsphere.Provider per vCenter, with its own credentials and
// session): a zone's Placement.Endpoint says which vCenter takes its VMs,
// and each VM reports the one that holds it (VM.Endpoint). An endpoint
// that does not answer is a partition, not an outage of VMs: its VMs are
// unknown ([ErrUnreachable], [UnreachableError]), and a Set plans around
// them (see the Set's documentation) instead of replacing them all. A Set
// keeps the names of creates that got no answer until their endpoint
// answers, so a lost answer never becomes a second VM of one name
// elsewhere; VMs of one name on two endpoints all the same are two
// replicas ([ErrDuplicateName]), each deleted on its own endpoint
// ([EndpointScoped]).
//
// # Rollouts
//
// A Set with a Rollout (a [replicaset.Strategy]: MaxSurge, MaxUnavailable,
// Partition, Paused, OnDelete, ZoneByZone) replaces its VMs when its
// Template changes. Every VM records the revision of the template it was
// made from beside its owner's mark (Spec.Revision, read back as
// VM.Revision; [TemplateRevision] computes it), and each pass replaces VMs
// on other revisions within the strategy's bounds, over the zones as
// scaling spreads them; a zone whose clones fail keeps its old VMs until
// its backoff ends. Change the Template with Set.SetTemplate, read the
// progress with Set.RolloutStatus, and roll back by setting the old
// Template again: VMs still on it stay. VMs made before the Set had a
// Rollout count as current and are marked so when the Provider is a
// [RevisionMarker], so turning rollouts on replaces nothing.
//
// # In-place updates
//
// A VM can also reach a new revision without being replaced, when only its
// size changed. Besides its revision, every VM records its base revision
// (Spec.BaseRevision, read back as VM.BaseRevision; [BaseRevision]
// computes it): the revision of everything but its CPUs and memory.
// [InPlaceFor] tells from a VM and the wanted template, calling nothing,
// whether the VM can be changed while it runs (replicaset.InPlaceLive: the
// same base, and a change its hot-plug settings allow, or the VM is off),
// only by a power cycle (replicaset.InPlacePowerCycle: memory lowered, or
// raised without hot-add), or not at all (replicaset.InPlaceNone), with a
// phrase saying what blocks it. A provider that is a [Resizer] makes the
// change: the size and both revisions together or not at all, refusing a
// change that needs the VM off unless the caller allows the power cycle
// ([ErrNeedsPowerCycle]).
//
// A Set whose Rollout's Method updates in place
// (replicaset.UpdateInPlaceIfPossible, UpdateInPlaceOnly) over a Resizer
// does this for each VM on an older revision as a step of the rollout,
// within its bounds: a live change at once, a power cycle within
// MaxUnavailable and, with a [Lifecycle], only once PreDelete drained the
// VM, told so by its ctx ([PreparingUpdate]). A change that cannot be
// made in place, or that vCenter refused, falls back as the method says:
// a new VM, or a hold that names the VM and why. Its VMs record their
// base revision; VMs made before base revisions were recorded are given
// it when they are on the Template's revision, and the others are
// replaced, never changed in place. See the Set's documentation,
// "In-place updates".
//
// # Self-healing
//
// A Set with Spec.Remediation (a [replicaset.Remediation]) heals its VMs
// by the planner's rule, from what a List already reports: each VM is
// checked with [Readiness.CheckHealth] (powered off while it should run, a
// red heartbeat from a hung guest, no heartbeat or address where the
// Readiness needs one), and one that stays unhealthy past its window is
// reset in vCenter first ([Resetter], ResetVM_Task; Remediation.Restart)
// and replaced if that does not bring it back, under the planner's guards
// against a storm, a failing zone, a template whose VMs never become
// healthy and too many remediations at once. VMs on an endpoint that does
// not answer are unknown, never remediated. The Set keeps each VM's health
// and the remediation history in memory: a restarted program starts its
// windows again, so it remediates later, never sooner. See the Set's
// documentation, "Self-healing".
//
// # Lifecycle hooks
//
// A Set with a [Lifecycle] runs Go callbacks around its VMs' lives, the
// planner's lifecycle hooks (replicaset's Lifecycle hooks section) without
// Kubernetes: a VM chosen to leave, by any rule, prepares first, and the
// Set calls Lifecycle.PreDelete for it in a goroutine of its own (to
// drain its connections, deregister it, hand its data over) and deletes
// it only once the callback returned nil or Lifecycle.Timeout passed
// (or, with Lifecycle.Abandon, keeps it); a scale-up
// meanwhile takes it back and cancels the callback. Lifecycle.LaunchGate
// keeps a new VM from counting as ready until it returns nil (to register
// it in a load balancer, say). Errors of the callbacks come back in the
// next Scale's error, wrapping [ErrHookFailed]. The Set keeps the
// preparations in memory: a restarted program prepares VMs anew and calls
// the callbacks again, so it deletes later, never sooner. See
// [Lifecycle].
package vmprovider
