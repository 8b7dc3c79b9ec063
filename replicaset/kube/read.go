package kube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/replicakit/replicakit/replicaset"
)

// observation is everything one pass knows: the owner, its spec, its own
// children and the candidate orphans, what expectations still wait for, and
// the clock. decide turns it into a decision without any I/O.
type observation struct {
	owner client.Object // the cache's own object: never modified (report copies it)
	key   string        // namespace/name, the expectations' key
	seed  uint64        // the owner's own seed (a hash of its UID)
	now   time.Time

	spec     Spec
	specErr  error // the spec cannot be used: nothing is done but status
	selector labels.Selector
	template labels.Set // the labels of a new child; nil when templateErr is set
	// templateErr is why no child can be built from the template.
	templateErr error
	// With Spec.Rollout, revision is the template's (RevisionLabel).
	revision string
	// want, with an in-place Strategy.Method and an Adapter that is an
	// InPlaceRollout, is a new child as NewChild built it: the template
	// the plan's in-place updates bring children onto (inPlaceSteps;
	// apply has the Adapter change them, InPlaceRollout.ApplyInPlace).
	// nil otherwise.
	want client.Object
	// progress is where the rollout last moved, as an earlier pass saw it.
	progress progress

	children []child // controlled by the owner, matching or not, deleting or not
	orphans  []child // without a controller, matching the selector
	// waiting means the cache has not yet shown some write of an earlier
	// pass: the pass reports and does nothing else.
	waiting bool
	// taken lists names that objects of others were found to hold: no
	// new child is given one of them.
	taken []string
	// zones is the zones' part of the owner's replicaset.History as the
	// last pass left it (ZoneBackoff: the zones creates avoid after
	// failures, and until when; CreatesFailing); a zone whose create fails
	// in this pass is avoided for backoffFor.
	zones replicaset.History
	// unwrittenHistory is the AnnotationRemediationHistory the last pass
	// could not write, which this one plans with; "" when none.
	unwrittenHistory string
	backoffFor       time.Duration
	// failedSeen lists the UIDs of children seen failing in a listed
	// zone by an earlier pass: each has backed its zone off already.
	failedSeen []string
}

// child is one child as the pass sees it: the cache's object, never
// modified, and the planner's description of it.
type child struct {
	obj     client.Object
	replica replicaset.Replica
	costErr error // a malformed deletion-cost annotation
	// check is what the pass's health check said of it, with
	// Spec.Remediation.
	check healthCheck
	// templated, with Spec.Rollout, is a copy of it brought in line with
	// the template in what needs no new child (the binding's labels and
	// annotations, InPlaceUpdater.UpdateInPlace), or nil when nothing
	// would change; never set for a child being deleted. shows, for a
	// child being changed in place to the current revision
	// (AnnotationInPlaceRevision), is whether it runs with the template
	// now (InPlaceRollout.ShowsInPlace).
	templated client.Object
	shows     bool
}

// read gathers the observation for the owner of req; it returns nil when the
// owner is gone. Its reads follow the owner: its children through the
// index on their controller's UID, orphans through the same index under one
// matchLabels pair of the owner's selector, then filtered by the whole
// selector.
func (r *Reconciler[O, C]) read(ctx context.Context, req reconcile.Request) (*observation, error) {
	owner := r.owner.newObj()
	key := req.String()
	if err := r.Cache.Get(ctx, req.NamespacedName, owner, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(key)
			return nil, nil
		}
		return nil, fmt.Errorf("get owner %s: %w", key, err)
	}
	r.expectations.bind(key, string(owner.GetUID()))
	o := &observation{owner: owner, key: key, seed: seedOf(owner), now: r.now()}
	o.spec, o.specErr = r.Adapter.Spec(owner)
	if o.specErr == nil {
		o.selector, o.specErr = selectorOf(o.spec)
	}
	if o.specErr == nil {
		o.specErr = r.checkZones(o.spec.Zones)
	}
	// unmatched holds the UIDs of children without RevisionLabel that
	// the Adapter's TemplateMatcher says do not match the template
	// (describe finds them): they are not given the revision in place.
	unmatched := map[types.UID]bool{}
	var match func(C) bool
	var inPlace inPlaceFunc
	if o.specErr == nil {
		if probe, err := r.Adapter.NewChild(owner); err != nil {
			o.templateErr = err
		} else {
			o.template = labels.Set(probe.GetLabels())
			if o.spec.Rollout != nil {
				o.revision, inPlace, o.templateErr = r.revision(owner, probe)
				if _, ok := any(r.Adapter).(TemplateMatcher[O, C]); ok && o.templateErr == nil {
					match = func(c C) bool { return r.matches(owner, c) }
				}
			}
		}
	}

	ns := owner.GetNamespace()
	own, err := r.children(ctx, ns, string(owner.GetUID()), nil)
	if err != nil {
		return nil, err
	}
	var orphans []client.Object
	if o.selector != nil {
		if orphans, err = r.children(ctx, ns, orphanKey(o.spec.Selector), o.selector); err != nil {
			return nil, err
		}
	}

	switch r.expectations.check(key, seen(own), o.now) {
	case expectWaiting:
		o.waiting = true
	case expectExpired:
		// The cache has not shown our writes in time: read the API
		// server instead, through the selector (the index is the
		// cache's), and act on that.
		if o.selector != nil {
			if own, orphans, err = r.listLive(ctx, owner, o.selector); err != nil {
				return nil, err
			}
		}
		r.expectations.resetPending(key)
	}
	// A restart the cache does not show yet holds the pass as an unmet
	// expectation does: the child would look due again.
	if r.restarts.unseen(key, own, o.now, r.restartTTL()) {
		o.waiting = true
	}
	o.taken = r.expectations.takenNames(key, o.now)
	o.zones, o.backoffFor = r.backoff.history(key), cmp.Or(r.ZoneBackoff, replicaset.DefaultZoneBackoff)
	o.unwrittenHistory = r.unwritten.get(key)
	o.failedSeen = r.backoff.failing(key)
	o.progress = r.rollouts.get(key)
	if idle(o, r.rules()) {
		return o, nil // nothing to describe: the pass only waits
	}
	heals := o.specErr == nil && o.spec.Remediation != nil
	var lc *lifecycleRead
	if o.specErr == nil {
		lc = &lifecycleRead{domain: r.hookDomain(), now: o.now, gates: o.spec.Lifecycle != nil}
	}
	o.children = r.describe(own, match, heals, lc)
	o.orphans = r.describe(orphans, match, heals, lc)
	if ip := r.inPlaceRollout(o.spec); ip != nil && o.specErr == nil && o.templateErr == nil {
		if want, err := r.Adapter.NewChild(owner); err == nil {
			describeInPlace[O, C](ip, want, o.revision, o.children)
			describeInPlace[O, C](ip, want, o.revision, o.orphans)
			o.want = want
		}
	}
	for _, cs := range [][]child{o.children, o.orphans} {
		for _, c := range cs {
			if c.replica.Revision == UnmatchedRevision {
				unmatched[c.obj.GetUID()] = true
			}
		}
	}
	if inPlace != nil && o.templateErr == nil {
		for _, cs := range [][]child{o.children, o.orphans} {
			for i := range cs {
				if c := &cs[i]; !c.replica.Deleting {
					c.templated = inPlace(c.obj, !unmatched[c.obj.GetUID()])
				}
			}
		}
	}
	return o, nil
}

// selectorOf parses the spec's selector; an empty one is refused, since it
// would select every object in the namespace.
func selectorOf(s Spec) (labels.Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(s.Selector)
	if err == nil && (s.Selector == nil || sel.Empty()) {
		err = errors.New("selector is empty: it would select every object in the namespace")
	}
	if err != nil {
		return nil, err
	}
	return sel, nil
}

// listLive reads the children the selector matches from the API server and
// sorts them into the owner's and orphans.
func (r *Reconciler[O, C]) listLive(ctx context.Context, owner client.Object, sel labels.Selector) (own, orphans []client.Object, err error) {
	all, err := r.list(ctx, r.APIReader, client.InNamespace(owner.GetNamespace()), client.MatchingLabelsSelector{Selector: sel})
	if err != nil {
		return nil, nil, err
	}
	for _, c := range all {
		switch ref := metav1.GetControllerOfNoCopy(c); {
		case ref == nil:
			orphans = append(orphans, c)
		case ref.UID == owner.GetUID():
			own = append(own, c)
		}
	}
	return own, orphans, nil
}

// list returns the children that opts select.
func (r *Reconciler[O, C]) list(ctx context.Context, reader client.Reader, opts ...client.ListOption) ([]client.Object, error) {
	l := r.child.newList()
	if err := reader.List(ctx, l, opts...); err != nil {
		return nil, fmt.Errorf("list children: %w", err)
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

// forEachObject calls f with each object of l.
func forEachObject(l client.ObjectList, f func(client.Object)) error {
	return meta.EachListItem(l, func(o runtime.Object) error {
		if c, ok := o.(client.Object); ok {
			f(c)
		}
		return nil
	})
}

// describe turns children into the planner's replicas, with what the
// Adapter knows of their kind. With match (the Adapter's TemplateMatcher,
// with Spec.Rollout), a child without a revision that does not match
// the template counts as made from UnmatchedRevision. With heals, each
// child's health is checked (checkHealth). With lc (the spec has a
// Lifecycle), each child's preparation and launch gates are read from its
// annotations.
func (r *Reconciler[O, C]) describe(objs []client.Object, match func(C) bool, heals bool, lc *lifecycleRead) []child {
	out := make([]child, 0, len(objs))
	for _, obj := range objs {
		c, ok := obj.(C)
		if !ok {
			continue
		}
		rep, err := ReplicaOf(obj)
		if rep.Revision == "" && match != nil && !match(c) {
			rep.Revision = UnmatchedRevision
		}
		rep.Zone = r.zoneOf(c)
		r.Adapter.Describe(c, &rep)
		if lc != nil {
			if lerr := lc.describe(obj, &rep); err == nil {
				err = lerr
			}
		}
		ch := child{obj: obj, replica: rep, costErr: err}
		if heals {
			ch.check = r.checkHealth(c, rep)
		}
		out = append(out, ch)
	}
	return out
}

// seen lists children as expectations see them.
func seen(children []client.Object) []seenChild {
	out := make([]seenChild, len(children))
	for i, c := range children {
		out[i] = seenChild{name: c.GetName(), uid: string(c.GetUID()), deleting: c.GetDeletionTimestamp() != nil}
	}
	return out
}

// seedOf derives the owner's seed (for the Random policy and random names)
// from its UID, so it never changes for the owner's life.
func seedOf(owner client.Object) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(owner.GetUID()))
	return h.Sum64()
}
