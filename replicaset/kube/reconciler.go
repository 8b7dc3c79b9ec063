package kube

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/execute"
)

// Reconciler keeps the children of owners of type O converged on each
// owner's desired count. One Reconcile is four steps: read (the owner and
// its children, claiming orphans and releasing strays), decide (the
// planner's Compute), act (execute the plan) and report (status, events).
// The decision is made only by replicaset.Compute.
type Reconciler[O, C client.Object] struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server directly (the manager's
	// GetAPIReader): to confirm an owner before adopting, and when the
	// cache has not caught up with this reconciler's writes in time.
	APIReader client.Reader
	// Scheme knows O and C, for owner references.
	Scheme *runtime.Scheme
	// Adapter knows the owner's and the child's kinds.
	Adapter Adapter[O, C]
	// EmptyOwner, EmptyChild and EmptyChildList return empty objects to
	// read into (for unstructured kinds, with their GroupVersionKind set).
	EmptyOwner     func() O
	EmptyChild     func() C
	EmptyChildList func() client.ObjectList
	// EmptyOwnerList, when set, lets the reconciler find the owners of a
	// new orphan, so that it is adopted at once; without it, orphans are
	// adopted at their owner's next reconcile.
	EmptyOwnerList func() client.ObjectList
	// Policies returns the deletion policies for an owner, given a seed
	// derived from the owner's UID (so Random is stable per owner). Nil
	// means deletionpolicy.Default.
	Policies func(seed uint64) *deletionpolicy.Registry
	// Events records events on owners; nil records none.
	Events events.EventRecorder
	// Expectations remembers this reconciler's writes until the cache sees
	// them. Nil means a private tracker with the default TTL.
	Expectations *Expectations
	// Execute tunes the executor (slow start, concurrency).
	Execute execute.Options
	// MaxPerPass caps creates and deletes per pass; zero means
	// replicaset.DefaultMaxPerPass.
	MaxPerPass int
	// Metrics records creates, deletes, failures and planning time; nil
	// records none. SetupWithManager registers them with controller-runtime's
	// registry when nil.
	Metrics *Metrics
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	initExpectations sync.Once
}

// Condition types the reconciler sets on owners.
const (
	ConditionReplicaFailure = "ReplicaFailure"
	ConditionScalingUp      = "ScalingUp"
	ConditionScalingDown    = "ScalingDown"
	ConditionReady          = "Ready"
)

// ErrSelectorMismatch means the owner's selector does not select the
// children its template makes: creating them would never converge.
var ErrSelectorMismatch = errors.New("kube: selector does not match the template's labels")

// pass is what one reconcile read and decided.
type pass struct {
	owner    client.Object
	key      string
	spec     Spec
	selector labels.Selector
	children []client.Object // owned and matching, after claims
	now      time.Time
	plan     replicaset.Plan
	replicas []replicaset.Replica
	failure  error      // user-facing failure for the ReplicaFailure condition
	waiting  bool       // expectations unmet: report only
	template labels.Set // the labels the template gives children; nil when unknown
	planTime time.Duration
	acted    execute.Result
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler[O, C]) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	p, err := r.read(ctx, req)
	if err != nil || p == nil {
		return reconcile.Result{}, err
	}
	r.decide(p)
	r.act(ctx, p)
	return r.report(ctx, p)
}

func (r *Reconciler[O, C]) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// expectations returns the tracker, creating it once if none was given;
// concurrent reconciles (MaxConcurrentReconciles > 1) share it.
func (r *Reconciler[O, C]) expectations() *Expectations {
	r.initExpectations.Do(func() {
		if r.Expectations == nil {
			r.Expectations = &Expectations{}
		}
	})
	return r.Expectations
}

// read fetches the owner and its children; it returns nil when the owner
// is gone.
func (r *Reconciler[O, C]) read(ctx context.Context, req reconcile.Request) (*pass, error) {
	owner := r.EmptyOwner()
	key := req.String()
	if err := r.Client.Get(ctx, req.NamespacedName, owner); err != nil {
		if apierrors.IsNotFound(err) {
			r.expectations().Forget(key)
			return nil, nil
		}
		return nil, fmt.Errorf("get owner %s: %w", key, err)
	}
	p := &pass{owner: owner, key: key, now: r.now()}
	spec, err := r.Adapter.Spec(owner)
	if err == nil {
		p.selector, err = metav1.LabelSelectorAsSelector(spec.Selector)
		if err == nil && (spec.Selector == nil || p.selector.Empty()) {
			err = errors.New("selector is empty: it would select every object in the namespace")
		}
	}
	children, lerr := r.list(ctx, r.Client, owner.GetNamespace())
	if lerr != nil {
		return nil, lerr
	}
	if err != nil {
		// Nothing is planned, but status still counts what the owner
		// controls, so it does not claim zero replicas that exist.
		p.failure = fmt.Errorf("invalid spec: %w", err)
		for _, c := range children {
			if ref := metav1.GetControllerOfNoCopy(c); ref != nil && ref.UID == owner.GetUID() {
				p.children = append(p.children, c)
			}
		}
		p.replicas = r.observe(p.children)
		return p, nil
	}
	p.spec = spec
	probe, err := r.Adapter.NewChild(owner)
	if err != nil {
		p.failure = fmt.Errorf("template: %w", err)
	} else {
		p.template = labels.Set(probe.GetLabels())
	}

	switch r.expectations().Check(key, seen(children, owner.GetUID()), p.now) {
	case Waiting:
		p.waiting = true // the cache lags our writes: report, act next time
	case Expired:
		if children, err = r.list(ctx, r.APIReader, owner.GetNamespace()); err != nil {
			return nil, err
		}
		r.expectations().Forget(key)
	}
	p.children, err = r.claim(ctx, owner, p.selector, children, !p.waiting)
	if err != nil {
		return nil, err
	}
	p.replicas = r.observe(p.children)
	return p, nil
}

// observe describes children as replicas.
func (r *Reconciler[O, C]) observe(children []client.Object) []replicaset.Replica {
	out := make([]replicaset.Replica, 0, len(children))
	for _, c := range children {
		rep, _ := Replica(c) // a malformed cost is ignored (cost 0)
		r.Adapter.Observe(c.(C), &rep)
		out = append(out, rep)
	}
	return out
}

// list returns every child object in the namespace.
func (r *Reconciler[O, C]) list(ctx context.Context, reader client.Reader, ns string) ([]client.Object, error) {
	l := r.EmptyChildList()
	if err := reader.List(ctx, l, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("list children in %s: %w", ns, err)
	}
	items, err := meta.ExtractList(l)
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, 0, len(items))
	for _, it := range items {
		if o, ok := it.(client.Object); ok {
			out = append(out, o)
		}
	}
	return out, nil
}

// seen lists the children controlled by owner, as expectations see them.
func seen(children []client.Object, owner types.UID) []Seen {
	var out []Seen
	for _, c := range children {
		if ref := metav1.GetControllerOfNoCopy(c); ref != nil && ref.UID == owner {
			out = append(out, Seen{Name: c.GetName(), UID: string(c.GetUID()), Deleting: c.GetDeletionTimestamp() != nil})
		}
	}
	return out
}

// seedOf derives the Random policy's seed from the owner's UID.
func seedOf(owner client.Object) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(owner.GetUID()))
	return h.Sum64()
}

// decide computes the plan, unless the pass must not act.
func (r *Reconciler[O, C]) decide(p *pass) {
	if p.failure != nil || p.waiting {
		return
	}
	if !p.selector.Matches(p.template) {
		p.failure = fmt.Errorf("selector %s does not select template labels %v: %w", p.selector, map[string]string(p.template), ErrSelectorMismatch)
		return
	}
	policies := deletionpolicy.Default
	if r.Policies != nil {
		policies = r.Policies
	}
	name := p.spec.DeletePolicy
	if name == "" {
		name = deletionpolicy.NameRandom
	}
	policy, err := policies(seedOf(p.owner)).Lookup(name)
	if err != nil {
		p.failure = err
		return
	}
	spec := replicaset.Spec{Desired: p.spec.Replicas, MaxPerPass: r.MaxPerPass,
		ReplaceDeleting: p.spec.ReplaceDeleting, MinReady: p.spec.MinReady}
	start := time.Now()
	p.plan, p.failure = replicaset.Compute(spec, p.replicas, policy, p.now)
	p.planTime = time.Since(start)
}

// act carries out the plan, unless the owner is paused or being deleted
// (which never creates).
func (r *Reconciler[O, C]) act(ctx context.Context, p *pass) {
	if p.failure != nil || p.plan.IsZero() || p.spec.Paused || p.owner.GetDeletionTimestamp() != nil {
		return
	}
	existing := make([]string, len(p.children))
	for i, c := range p.children {
		existing[i] = c.GetName()
	}
	names, err := naming.Random{Base: p.owner.GetName(), Source: rand.NewPCG(uint64(p.now.UnixNano()), seedOf(p.owner))}.
		Names(p.plan.Create, existing)
	if err != nil {
		p.failure = err
		return
	}
	var deleted []string
	for _, v := range p.plan.Delete {
		deleted = append(deleted, v.UID)
	}
	// Expect before acting: the cache may show a write before we return.
	r.expectations().Expect(p.key, names, deleted, p.now)
	a := &actuator[O, C]{r: r, owner: p.owner.(O)}
	p.acted = execute.Plan(ctx, a, p.plan, names, r.Execute)
	r.forgiveFailures(ctx, p, names)
	r.record(p)
	r.Metrics.observe(r.kind(p.owner), p, p.planTime)
}

// kind names the owner's kind for metrics; typed objects from the cache
// carry no TypeMeta, so it comes from the scheme.
func (r *Reconciler[O, C]) kind(obj client.Object) string {
	gvk, err := apiutil.GVKForObject(obj, r.Scheme)
	if err != nil {
		return "unknown"
	}
	return gvk.Kind
}

// forgiveFailures stops expecting creates that failed and did not happen,
// and deletes that failed, so the next pass does not wait for them.
func (r *Reconciler[O, C]) forgiveFailures(ctx context.Context, p *pass, names []string) {
	created := map[string]bool{}
	for _, n := range p.acted.Created {
		created[n] = true
	}
	var forgive []string
	for _, n := range names {
		if created[n] {
			continue
		}
		// A failed create may have happened (a lost response): only a
		// read from the API server can tell.
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: p.owner.GetNamespace(), Name: n}, r.EmptyChild())
		if apierrors.IsNotFound(err) {
			forgive = append(forgive, n)
		}
	}
	r.expectations().Forgive(p.key, forgive...)
	deleted := map[string]bool{}
	for _, n := range p.acted.Deleted {
		deleted[n] = true
	}
	var undeleted []string
	for _, v := range p.plan.Delete {
		if !deleted[v.Name] {
			undeleted = append(undeleted, v.UID)
		}
	}
	r.expectations().ForgiveDeletes(p.key, undeleted...)
}

// record emits one event per kind of outcome of the pass.
func (r *Reconciler[O, C]) record(p *pass) {
	if r.Events == nil {
		return
	}
	res := p.acted
	if len(res.Created) > 0 {
		r.Events.Eventf(p.owner, nil, corev1.EventTypeNormal, "SuccessfulCreate", "Create", "Created %d children: %s", len(res.Created), listNote(res.Created, ", ", maxNote))
	}
	if len(res.Deleted) > 0 {
		r.Events.Eventf(p.owner, nil, corev1.EventTypeNormal, "SuccessfulDelete", "Delete", "Deleted %d children: %s", len(res.Deleted), listNote(res.Deleted, ", ", maxNote))
	}
	var failedCreate, failedDelete []string
	for _, e := range unjoin(res.Err) {
		var op *execute.OpError
		switch {
		case errors.As(e, &op) && op.Op == execute.OpCreate:
			failedCreate = append(failedCreate, e.Error())
		case errors.As(e, &op):
			failedDelete = append(failedDelete, e.Error())
		}
	}
	if len(failedCreate) > 0 {
		r.Events.Eventf(p.owner, nil, corev1.EventTypeWarning, "FailedCreate", "Create", "%s", listNote(failedCreate, "; ", maxNote))
	}
	if len(failedDelete) > 0 {
		r.Events.Eventf(p.owner, nil, corev1.EventTypeWarning, "FailedDelete", "Delete", "%s", listNote(failedDelete, "; ", maxNote))
	}
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
