package kube

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/replicaset/execute"
)

// DefaultMaxConcurrentReconciles is how many owners a Reconciler works on at
// once when MaxConcurrentReconciles is zero: the Kubernetes ReplicaSet
// controller's default (--concurrent-replicaset-syncs). One owner is never
// reconciled by two workers at once.
const DefaultMaxConcurrentReconciles = 5

// Reconciler keeps the children of owners of type O converged on each
// owner's desired count. Each pass reads, decides, applies and reports;
// only the read and the two write steps do I/O, and every choice is made by
// pure functions (see the package documentation). It must be set up before
// its first pass: SetupWithManager fills in the fields left nil (Client,
// Cache, APIReader, Scheme, Events, Metrics) and registers the indexes
// reads go through; Policies is filled in on first use.
// To run passes without a manager (a unit test on a fake client), see
// SetupWithIndexer and package kubetest.
type Reconciler[O, C client.Object] struct {
	// Client writes to the API server: creates, deletes, ownership
	// patches and status patches. When SetupWithManager takes the
	// manager's client and that is controller-runtime's own, unwrapped
	// (the manager's NewClient left as it is), children are deleted by
	// the same request through a REST client of the Reconciler's own on
	// the manager's connection, which reads no answer but a failure:
	// controller-runtime's client.Delete decodes the child being deleted
	// and round-trips it through JSON only to drop it. That REST client
	// has a rate limiter of its own at the manager's QPS and burst, as
	// each of the REST clients controller-runtime makes per kind has. A
	// client that wraps the manager's (to count or fail writes, dry-run
	// or set a field owner) sees every delete.
	Client client.Client
	// Cache reads owners and children: the manager's cache
	// (mgr.GetCache()), which serves typed and unstructured kinds alike
	// and holds the indexes SetupWithManager registers: children by
	// their controller, owners by their selector (to find an orphan's
	// owners). Objects read from it are never modified; one is copied
	// only when it is about to be written. Left nil, SetupWithManager
	// takes the manager's and registers that index on the child kind's
	// informer itself, so a pass reads its children from the informer as
	// they are, without the copies of the cache's List (unless the cache
	// is restricted to namespaces, whose informers have no one indexer).
	Cache client.Reader
	// APIReader reads from the API server directly (the manager's
	// GetAPIReader): to confirm an owner before adopting, releasing or
	// creating, to find out whether a create that failed without a clear
	// answer or with "already exists" made the child, and when the cache
	// has not caught up with this reconciler's writes in time.
	APIReader client.Reader
	// Scheme knows O's and C's kinds and their lists (FooList), as their
	// packages' AddToScheme registers them: the Reconciler makes its empty
	// owners, children and lists from it, and its owner references. A
	// kind given in OwnerKind or ChildKind need not be registered.
	Scheme *runtime.Scheme
	// Adapter knows the owner's and the child's kinds.
	Adapter Adapter[O, C]
	// OwnerKind and ChildKind are the owner's and the child's
	// GroupVersionKind, which the Reconciler takes from Scheme by O's and
	// C's Go types; set one only when its type names no kind
	// (*unstructured.Unstructured, *metav1.PartialObjectMetadata). The
	// Reconciler makes its empty objects and lists from them, as
	// controller-runtime's builder does from the object given to For.
	OwnerKind, ChildKind schema.GroupVersionKind
	// Policies maps the names in owners' specs to deletion policies.
	// Nil means deletionpolicy.Default(), built once. Random is seeded
	// per owner (a hash of its UID) through replicaset.Spec.Seed.
	Policies *deletionpolicy.Registry
	// Naming is how new children are named: RandomNames (the default)
	// or OrdinalNames.
	Naming Naming
	// Events records events on owners; nil records none.
	Events events.EventRecorder
	// Execute tunes the executor (slow start, concurrency).
	Execute execute.Options
	// MaxPerPass caps creates and deletes per pass; zero means
	// replicaset.DefaultMaxPerPass.
	MaxPerPass int
	// MaxConcurrentReconciles is how many owners are reconciled at once;
	// zero means DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int
	// ConfirmOwnerBeforeCreate reads the owner's metadata from the API
	// server before a pass creates children (one read per such pass), and
	// creates nothing when the owner is gone, replaced or being deleted
	// although the cache does not show it yet. Off, as in Kubernetes'
	// ReplicaSet controller, children made in that window are left to the
	// garbage collector. Turn it on when a child is costly to make and to
	// unmake (a VM's clone); leave it off when a read per pass costs more
	// than a rare wasted child (at 1,000 owners of 2 Pods it added a fifth
	// to the time to create them all). Adoptions and releases always
	// confirm the owner first.
	ConfirmOwnerBeforeCreate bool
	// Metrics records creates, deletes, failures and planning time, and
	// counts the entries of the Reconciler's expectations and zone
	// backoff tables at each scrape; nil records none. SetupWithManager
	// registers them with controller-runtime's registry when nil.
	Metrics *Metrics
	// ZoneBackoff is how long creates avoid a zone in which a create
	// failed, or a child failed (Spec.Zones); zero means
	// replicaset.DefaultZoneBackoff. The owner's status shows each zone's backoff
	// (replicaset.ZoneStatus.BackoffUntil), and the owner is looked at again when it
	// ends. It is kept in memory, so a restarted controller (or a new
	// leader) starts with no zone backing off.
	ZoneBackoff time.Duration
	// HookDomain is the domain of the annotations of lifecycle hooks and
	// gates on children (PreDeleteHookAnnotation, LaunchGateAnnotation):
	// choose one of your own, such as the owner's API group, so that your
	// hooks' controllers watch for your annotations alone. Empty means
	// DefaultHookDomain.
	HookDomain string
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	init     sync.Once
	index    string        // the suffix of the index names, set by SetupWithManager
	written  writtenStatus // the status last written per owner
	backoff  zoneBackoffs  // each owner's History of its creates: the zones they avoid, whether they fail
	rollouts progressLog   // where each owner's rollout last moved, and when
	restarts restartLog    // the children each owner's passes restarted, until the cache shows it
	// unwritten keeps each owner's remediation history a pass could not
	// write, for the next passes to plan with.
	unwritten unwrittenHistories
	// expectations remembers this reconciler's writes until the cache
	// sees them; filled in on first use.
	expectations *expectations
	deleter      *childDeleter // deletes children unread, when Client is the manager's own (see Client)
	// childIndexer is the child informer's indexer, holding the child
	// index, when Cache is the manager's own (see children).
	childIndexer toolscache.Indexer

	// The kinds of owner and child, resolved once by setup: their
	// empty objects and lists, and their GroupVersionKinds, for the
	// requests that name objects by metadata alone.
	owner              kind[O]
	child              kind[C]
	ownerGVK, childGVK schema.GroupVersionKind
}

// Naming is how a Reconciler names the children it creates. Names are made
// on the client, so a create is idempotent by name.
type Naming int

const (
	// RandomNames names children like generateName does: the owner's
	// name, '-' and five random characters (web-zmdmm).
	RandomNames Naming = iota
	// OrdinalNames names children by the lowest free ordinal, as a
	// StatefulSet does (web-0 … web-N-1), and gives each replica its
	// ordinal, so that the HighestOrdinal policy removes the highest
	// first. See naming.Indexed.
	OrdinalNames
)

// String names the scheme.
func (n Naming) String() string {
	if n == OrdinalNames {
		return "OrdinalNames"
	}
	return "RandomNames"
}

// Condition types the reconciler sets on owners.
const (
	// ConditionReplicaFailure is True when something keeps the set from
	// its desired count: a spec it cannot use, a failed create, delete
	// or claim, protection, a malformed annotation. It is also the
	// reason of ScalingUp, ScalingDown, Ready, ZonesBalanced or RolledOut
	// when they cannot move because of what ReplicaFailure says.
	ConditionReplicaFailure = "ReplicaFailure"
	// ConditionScalingUp is True while the set is creating children.
	ConditionScalingUp = "ScalingUp"
	// ConditionScalingDown is True while more children live than
	// desired and the set is deleting them. A rollout's surge is not a
	// scale-down: ScalingDown is False with reason RolloutSurge then, and
	// with RolloutHeld while a rollout's bounds hold every child of a
	// scale-down this pass.
	ConditionScalingDown = "ScalingDown"
	// ConditionReady is True when the desired number of children live
	// and are ready; children above the desired count that are a
	// rollout's surge (reason RolloutSurge) do not make it False.
	ConditionReady = "Ready"
	// ConditionZonesBalanced, set only when the spec lists zones, is True
	// when the live children of the listed zones differ by at most one
	// and none lives elsewhere, with its own name as the reason; False
	// says why not.
	ConditionZonesBalanced = "ZonesBalanced"
	// ConditionRolledOut says, with Spec.Rollout, whether every live
	// child is on the owner's current template and available, and if not,
	// what the rollout waits on.
	ConditionRolledOut = "RolledOut"
)

// ErrSelectorMismatch means the owner's selector does not select the
// children its template makes: creating them would never converge.
var ErrSelectorMismatch = errors.New("kube: selector does not match the template's labels")

// ErrNeedsOrdinalNames means the owner asks for a deletion policy that
// orders replicas by ordinal (such as HighestOrdinal) from a Reconciler
// whose children have no ordinals (Naming is RandomNames).
var ErrNeedsOrdinalNames = errors.New("kube: the deletion policy needs ordinal names")

// errNotSetUp is what a Reconciler that was never set up returns: its
// reads go through indexes only SetupWithManager (or SetupWithIndexer)
// registers.
var errNotSetUp = errors.New("kube: Reconciler used without SetupWithManager or SetupWithIndexer, which register the indexes it reads through")

// errNoClients is what a Reconciler set up without a manager returns when
// it was given no client to read or write with.
var errNoClients = errors.New("kube: Reconciler.Client, Cache and APIReader must be set (SetupWithManager takes them from the manager)")

// Reconcile implements reconcile.Reconciler: read, decide, apply, report.
func (r *Reconciler[O, C]) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if r.index == "" {
		return reconcile.Result{}, reconcile.TerminalError(errNotSetUp)
	}
	if r.Client == nil || r.Cache == nil || r.APIReader == nil {
		return reconcile.Result{}, reconcile.TerminalError(errNoClients)
	}
	r.defaults()
	o, err := r.read(ctx, req)
	if err != nil || o == nil {
		return reconcile.Result{}, err
	}
	if idle(o, r.rules()) {
		return reconcile.Result{RequeueAfter: waitRequeue}, nil
	}
	start := time.Now()
	d := decide(o, r.rules())
	took := time.Since(start)
	out := r.apply(ctx, o, d)
	return r.report(ctx, o, d, out, took)
}

// defaults fills in what a Reconciler built without SetupWithManager lacks,
// once; concurrent reconciles share the result.
func (r *Reconciler[O, C]) defaults() {
	r.init.Do(func() {
		if r.expectations == nil {
			r.expectations = &expectations{}
		}
		if r.Policies == nil {
			r.Policies = deletionpolicy.Default()
		}
		r.trackTables() // Metrics may have been set after setup
	})
}

// rules is what decide needs of the Reconciler's configuration.
func (r *Reconciler[O, C]) rules() rules {
	_, restarter := any(r.Adapter).(Restarter[O, C])
	return rules{policies: r.Policies, naming: r.Naming, maxPerPass: r.MaxPerPass, restarter: restarter,
		hookDomain: r.hookDomain()}
}

func (r *Reconciler[O, C]) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
