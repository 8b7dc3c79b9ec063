package vmprovider

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/execute"
)

// Set keeps a number of VMs of one owner in a provider, with no Kubernetes
// object involved: each Scale call is one pass of list, plan, act.
//
// # Unreachable endpoints
//
// Over a Provider of several endpoints (Endpoints, each zone's Placement
// naming its endpoint), an endpoint that does not answer a List leaves its
// VMs unknown, not gone: the Set plans with the VMs that endpoint held
// when it last answered, in zones the planner sets aside
// (replicaset.Spec.Unreachable): every listed zone whose placement names
// it, and every zone those VMs are in. They are not deleted, powered,
// marked, counted as gone or given to new VMs as names; at most the
// strategy's surge stands in for them elsewhere (replicaset.Compute
// states the rule).
//
// A create that got no answer may have made its VM all the same (the
// clone done, the answer lost), or may still be making it (a clone that
// vCenter goes on with after the client gave up): the Set remembers it
// (name, zone, endpoint), as the Kubernetes binding's expectations
// remember creates. While the endpoint does not answer, the VM is one of
// its unknown VMs: counted and set aside. Once the endpoint answers, a
// List that shows the VM makes it one of the Set's VMs; one that does not
// means no VM yet, and the VM is no longer counted (the Set makes another
// in its stead), but its name stays taken until LostNameHold has passed
// since the create, in case the clone ends after all (then the Set has
// one VM too many and scales it down). Throughout, the name is given to
// no new VM on any endpoint (the Namer, naming.Indexed or naming.Random,
// gets it among the existing names). Only a create that
// answered that it made nothing (an invalid spec, a placement not in the
// inventory, a name another owner's VM holds) is forgotten at once. A VM
// the Set never saw nor asked for on an endpoint (one made before the
// Set's first pass while the endpoint is down) cannot be known: the Set
// replaces it, and the excess is scaled down once the endpoint answers.
//
// A VM the platform lists but cannot read (VM.Unreachable: for vSphere, a
// VM whose datastore went away or whose host is disconnected) is unknown
// in the same way, alone, while its endpoint and zone answer: the Set
// plans it as replicaset.Replica.Unreachable, so it is counted, neither
// deleted, powered, marked nor given up as a name, and at most the
// strategy's surge stands in for it; Status counts it in Unknown.
//
// # Names held twice
//
// A VM is identified by its endpoint and instance UUID; its name is
// meant to be unique, but a partition in a program that does not share
// this Set's memory (another Set, a restart during the partition), or a
// person, can leave VMs of one name on two endpoints. Those are two
// replicas, never input to refuse: the planner gets each under a name of
// its own, qualified by endpoint for the planner only ("web-3@east", as
// Plan lists it), with every copy marked for deletion, so that the excess
// a scale-down removes is taken from the copies first, by the policy's
// order among them; each is deleted on its own endpoint (EndpointScoped),
// never by name alone. Scale, Status, RolloutStatus and ZoneStatus say so
// with an error wrapping ErrDuplicateName per name, beside the plan or
// status, while the copies last. A Provider that is not EndpointScoped (a
// wrapper that embeds the Provider interface hides Endpoints' On) deletes
// neither copy: implement On in wrappers.
//
// # Self-healing
//
// With Spec.Remediation set, each pass also remediates VMs that stay
// unhealthy, by the planner's rule (replicaset's Self-healing section):
// the Set checks every VM it lists with Readiness.CheckHealth (powered
// off while Template.PowerOn, a red heartbeat, and what Readiness needs)
// and keeps its replicaset.Health, which starts when the VM booted, or
// when the Set first saw it when it did not see the boot (a VM off, one
// booted before the Set's first healing pass or while its endpoint did
// not answer); a VM that fails the check is not ready (Status counts it
// so too). A VM due is reset (Remediation.Restart; Resetter, on its
// endpoint when the Provider is EndpointScoped, as Endpoints is) or
// replaced: deleted, and a new VM made in its zone, by the same
// pass as far as the surge allows.
// The storm, zone, suspension, backoff and in-flight guards hold as the
// planner states them. A Provider that cannot reset VMs (no Resetter;
// for Endpoints, an endpoint's Provider that is none) makes Scale refuse
// a Remediation with Restart. VMs on endpoints that do not answer are
// unknown, never unhealthy: nothing is reset or replaced there, and time
// unseen counts toward no window (a spell of ill health under way when
// the endpoint stopped answering starts again once it answers).
//
// The Set keeps the Health of its VMs and the set's replicaset.History
// (failed replacements, storms, the zones it avoids) itself, in memory,
// and ignores Spec.History. A restarted
// program starts with none: every window starts again from its first
// pass, the backoff and the count of failed replacements start again
// from zero, so remediation comes later than it would have, never
// earlier (a template whose VMs never become healthy costs up to
// MaxFailures more clones per restart). A Template of another revision
// (SetTemplate) clears the failed replacements too: they were the old
// template's, so a mended template heals again. Nil Remediation plans exactly as
// without healing, and forgets what was kept.
//
// # Lifecycle hooks
//
// With Lifecycle set, a VM the plan chooses to delete (by a scale-down,
// Scale(0), a rollout, remediation or rebalancing) prepares to leave
// first: the Set calls Lifecycle.PreDelete for it in a goroutine of its
// own, and deletes it in the first pass after the callback returned nil,
// or the first at or after Lifecycle.Timeout since the pass that chose it
// (or, with Lifecycle.Abandon, keeps it). A scale-up meanwhile takes it
// back and cancels the callback's ctx. A VM counts as ready only once
// Lifecycle.LaunchGate returned nil for it. The Set keeps the
// preparations and the gates passed in memory: a restarted program
// prepares VMs anew and calls the callbacks again, so it deletes later,
// never sooner. Lifecycle's documentation states when each callback is
// called, what its ctx is, and how its errors are reported (in the error
// of the next Scale, wrapping ErrHookFailed). The Set has no method that
// deletes itself: Scale(ctx, 0, now) drains every VM through PreDelete.
//
// # In-place updates
//
// With a Rollout whose Method updates in place
// (replicaset.UpdateInPlaceIfPossible or UpdateInPlaceOnly) and a
// Provider that can resize (Resizer; for Endpoints, the VM's endpoint's
// Provider), a VM whose Template changed only in size (CPUs, MemoryMiB:
// the same BaseRevision) is changed where it runs, keeping its name,
// instance UUID, disks and addresses. Each pass tells the planner how each
// VM on an older revision could take the Template (InPlaceFor, from what
// the List reported), and resizes the VMs the plan updates (Plan.Update)
// after its creates and deletes, at most Options.MaxInFlight at once: to
// the Template's size, revision and base revision in one change, so that
// a VM records the new revision only with its new size. A live update
// keeps the VM ready; a power cycle stops it (its guest shut down first,
// as for a deletion) and counts against MaxUnavailable as the deletion of
// an available VM does. With MaxUnavailable 0, InPlaceIfPossible replaces
// the VMs that need one with surge VMs, and InPlaceOnly holds them: the
// plan's hold (replicaset.HoldInPlaceOnly) names each and what blocks it.
//
// A resize the platform refused is not asked for again for that
// revision: the next passes report the VM InPlaceNone with the failure as
// what blocks it, so InPlaceIfPossible replaces it and InPlaceOnly holds
// it, saying why; a live resize refused as needing the VM off
// (ErrNeedsPowerCycle) is made by a power cycle instead. A resize that
// got no answer (a cancelled ctx, ErrUnreachable, a network error) is
// asked for again by the next pass. The Set keeps the refusals in memory:
// a restarted program, or a pass with a Template of another revision,
// tries again. A Provider that cannot resize changes no VM in place:
// every VM on an older revision is InPlaceNone ("the provider cannot
// resize VMs"), replaced or held.
//
// With Lifecycle, a power cycle drains first: the VM prepares as for a
// deletion (Plan.PrepareUpdate), PreDelete is called for it with a ctx
// that PreparingUpdate recognizes, and the first pass after PreDelete
// released it (or its timeout passed, without Abandon) power-cycles
// it; the preparation ends with the update, and LaunchGate is called for
// the VM again. A rollback, a pause, or a change that no longer fits
// takes it back (Plan.Cancel). A live update needs no drain.
//
// With a Rollout and a Provider that can resize, whatever the Method, new
// VMs record their base revision (Spec.BaseRevision: part of the clone,
// no call more). Under an in-place Method, VMs made before base revisions
// were recorded are given it, when they are on the Template's revision
// (see Rollout), one reconfigure each, so that a later Template that
// changes only their size reaches them in place; under UpdateReplace they
// are left as they are, and a Set that turns an in-place Method on gives
// it to them then. A VM on another revision that records none cannot be
// changed in place: it is replaced (held, under InPlaceOnly).
//
// # Refusals
//
// A Scale that lists the VMs but makes no plan (a zone without a
// placement, a spec or policy replicaset.Compute refuses, a Remediation
// with Restart the Provider cannot reset for, no free name) refuses, and so does every later one until the cause is mended. Status,
// RolloutStatus and ZoneStatus do not plan; they return that refusal,
// wrapping ErrRefused and the cause, beside the status until a Scale
// carries out a plan again. Before the first Scale there is none to
// report.
//
// A Set is safe for concurrent use: Scale calls take turns, each listing
// what the one before it left, so calls made at once never overshoot. A Set
// must not be copied after its first Scale.
type Set struct {
	// Provider holds the VMs.
	Provider Provider
	// Template is the spec of every VM; Template.Owner identifies the set.
	Template Spec
	// Policy chooses victims on scale-down.
	Policy replicaset.Ranker
	// Spec holds the planner's options for every pass: MaxPerPass,
	// ReplaceDeleting, MinReady, Seed, and Zones and Rebalance to spread
	// the VMs over failure domains (see replicaset.Spec), and Remediation
	// to heal them ("Self-healing" above). Its Desired is ignored;
	// Scale's argument is the count. Its History, Revision, Strategy and
	// Lifecycle are ignored too: the Set keeps the History itself
	// (ZoneBackoff below), and takes the revision and
	// strategy from Template and Rollout, and the hooks from Lifecycle.
	Spec replicaset.Spec
	// Rollout, when set, rolls the Set's VMs onto its Template under this
	// strategy: each pass plans with the Template's revision
	// (TemplateRevision) as replicaset.Spec.Revision and Rollout as its
	// Strategy, new VMs record that revision (Spec.Revision), and VMs
	// that record another are replaced within the strategy's bounds, over
	// Spec.Zones as scaling spreads them. So changing the Template (with
	// SetTemplate while other goroutines call Scale) starts a rollout, and
	// applying the old Template again is a rollback: VMs still on it count
	// as updated at once. Its Method may have VMs whose Template changed
	// only in size changed where they run instead ("In-place updates"
	// above).
	//
	// A VM that records no revision (made by a Set without Rollout, or by
	// an earlier replicakit) counts as on the Template's revision of the
	// Set's first pass with a Rollout, and a Provider that is a
	// RevisionMarker has it marked so: turning Rollout on replaces no VM,
	// and a later change of the Template replaces it. A Provider that is
	// not one (a wrapper that embeds the Provider interface hides its
	// MarkRevision) leaves the revision to the Set's memory, which a new
	// Set does not share: a program restarted after the Template changed
	// counts such VMs as current. Implement MarkRevision in wrappers.
	// Under an in-place Method, a Provider that can resize (Resizer)
	// records the Template's base revision with the revision, in one
	// change, and on every VM that records the Template's revision but no
	// base revision (made by an earlier replicakit): such VMs were made
	// from the Template. VMs on other revisions are left without one, and
	// replaced by the rollout.
	// Nil plans exactly as before and records no revision.
	Rollout *replicaset.Strategy
	// Lifecycle, when set, gives the Set lifecycle hooks as Go
	// callbacks: a VM chosen to leave is deleted, or one to be
	// power-cycled for an in-place update is stopped, only once
	// Lifecycle.PreDelete released it or its timeout passed, and a VM
	// counts as ready only once Lifecycle.LaunchGate let it ("Lifecycle
	// hooks" and "In-place updates" above). Nil: off, and the Set forgets
	// its preparations and cancels the callbacks still running.
	Lifecycle *Lifecycle
	// Zones maps every zone Spec.Zones lists to where its VMs go: a
	// zone's non-empty placement fields override the Template's. Scale
	// refuses a listed zone without one.
	Zones map[string]Placement
	// ZoneBackoff is how long a zone in which a create failed is avoided
	// by later passes, while they place its VMs in the other zones (and a
	// rollout leaves the zone's old VMs in place); zero means
	// replicaset.DefaultZoneBackoff. It is read when a create fails: a change
	// applies to later failures.
	ZoneBackoff time.Duration
	// Names makes new VM names: naming.Random, or naming.Indexed for
	// ordinal names. A Namer that also has Indexed's Ordinal method gives
	// each VM its ordinal, so deletionpolicy.HighestOrdinal ranks by it.
	// Nil, or a naming.Random without a Source, draws from a source of the
	// Set's own, seeded from the clock at the first Scale.
	Names naming.Namer
	// Options tune the executor.
	Options execute.Options
	// Readiness says when a VM counts as ready (for Spec.MinReady and the
	// plan's available count); empty means ReadyWhenPoweredOn.
	Readiness Readiness
	// LostNameHold is how long after a create that got no answer its
	// name stays taken once the endpoint answers without the VM: a VM
	// whose clone vCenter is still running shows up only when the clone
	// ends. Zero means DefaultLostNameHold.
	LostNameHold time.Duration

	mu      sync.Mutex
	source  rand.Source
	tracker readyTracker
	history replicaset.History // what the last pass left (replicaset.History.After)
	// assumed is the revision VMs recording none count as on: the
	// Template's at the first pass with a Rollout; "" without one.
	assumed string
	// seen holds, by endpoint (VM.Endpoint), the VMs of the last List
	// that endpoint answered: while it does not answer, they are unknown.
	seen map[string][]VM
	// lost holds the creates that got no answer (the VM's Name, Zone,
	// Revision, and Endpoint as the placement named it) until their
	// endpoint answers a List that shows the VM, or answers for
	// LostNameHold after the create: while their endpoint does not
	// answer they are unknown VMs; their names are taken throughout.
	lost []lostCreate
	// refused is why the last Scale that got as far as planning made no
	// plan; nil once one carried a plan out.
	refused error
	// heal is what self-healing keeps between passes (Spec.Remediation).
	heal healState
	// hooks is what lifecycle hooks keep between passes (Lifecycle).
	hooks hookState
	// resizeFailed holds, by healthKey, the in-place updates the
	// platform refused, for the revision they were to (describeInPlace).
	resizeFailed map[string]resizeFailure
}

// SetTemplate replaces the Template between passes: safe while other
// goroutines call Scale, which each use one Template throughout (assigning
// the field is safe only while none does). With a Rollout, a Template of
// another revision starts rolling the VMs. Two goroutines that each read
// the Template, change it and set it race as usual: the last one wins.
func (s *Set) SetTemplate(t Spec) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Template = t
}

// SetRollout replaces the Rollout between passes, as SetTemplate does the
// Template: to pause a rollout (Strategy.Paused), move its Partition or
// turn rollouts on or off while other goroutines call Scale. The Set keeps
// a copy of *r, so later changes to *r do not reach it.
func (s *Set) SetRollout(r *replicaset.Strategy) {
	if r != nil {
		c := *r
		r = &c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Rollout = r
}

// DefaultLostNameHold is the Set's LostNameHold when it sets none: longer
// than a clone of a large VM takes, and costing no more than a name left
// unused for that long.
const DefaultLostNameHold = 15 * time.Minute
