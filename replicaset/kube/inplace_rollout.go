package kube

import (
	"context"
	"fmt"
	"maps"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset"
)

// Annotations of in-place updates (replicaset.Strategy.Method, with an
// Adapter that is an InPlaceRollout).
const (
	// AnnotationInPlaceRevision is on a child being changed in place: the
	// revision it is changed to. The binding moves RevisionLabel to it,
	// and removes this annotation, only once the Adapter says the child
	// shows the change (InPlaceRollout.ShowsInPlace): until then the child
	// counts as on its older revision, and a rollback changes it back.
	AnnotationInPlaceRevision = "replicakit.io/in-place-revision"
	// AnnotationUpdatedInPlace is on a child changed in place: when its
	// last in-place update was recorded (RFC 3339). A printer column of
	// it says which children were updated in place rather than made
	// anew.
	AnnotationUpdatedInPlace = "replicakit.io/updated-in-place"
	// AnnotationPreparingUpdate is on a child that prepares for an
	// in-place update that powers it off (AnnotationPreparing is on it
	// too): the revision it will be changed to. Hook controllers tell by
	// it a drain for an update, after which the child comes back, from
	// one before its deletion.
	AnnotationPreparingUpdate = "replicakit.io/preparing-update"
)

// InPlaceRollout is implemented by an Adapter whose children can be moved
// onto a newer template where they run, as steps of a rollout under its
// strategy's bounds (replicaset.Strategy.Method): a VM's CPUs and memory,
// say, which its controller changes with a reconfigure, or a Pod's
// container images and resources, which its kubelet changes. It differs
// from InPlaceUpdater, whose changes (labels, say) reach every child at once
// and never make a new revision: here the template's revision changes,
// the planner decides which children change when (a live change at once,
// a power cycle within MaxUnavailable, after the pre-delete hooks'
// drain), and the binding records the new revision on a child only once
// the child shows the change. The package documentation's In-place
// updates section says how the pieces fit, and the example operator's
// controllers.ReplicaSetAdapter is one (VirtualMachines whose CPUs and
// memory change in place); the package's Pod example is another, to copy
// (Example_podInPlace: images and resources, the latter through
// InPlaceSubresource).
//
// A power cycle, in the names here (powerCycle, InPlacePowerCycle), is
// whatever stops the child serving while it changes: for a VM, being
// powered off and on; for a Pod, a container restart (an image changed,
// or a resource whose resize policy is RestartContainer). The planner
// counts a child being power-cycled as unavailable, within MaxUnavailable.
// Check the signature at compile time:
//
//	var _ kube.InPlaceRollout[*WorkerPool, *corev1.Pod] = poolAdapter{}
type InPlaceRollout[O, C client.Object] interface {
	// InPlace says how child, made from an older template, could be
	// brought onto want (a child NewChild built from the owner's current
	// template) where it runs: replicaset.InPlaceLive (it keeps serving),
	// replicaset.InPlacePowerCycle (it must be stopped), or
	// replicaset.InPlaceNone (it must be replaced), with a phrase naming
	// what keeps it from a live change or any ("memory lowered from 8192
	// to 4096 MiB", "template changed"), which status quotes when the
	// rollout holds. Judge by what the child runs with now (its status),
	// not by its spec, which an earlier pass may have changed already.
	// want is NewChild's object as built, not defaulted by the API
	// server: compare only the fields the template sets. A child whose
	// change failed for good (its controller says so in its status) is
	// InPlaceNone, with the failure as the phrase, so that the method's
	// fallback applies (replaced, or held and named); tie the failure to
	// the spec it was for (its observedGeneration), or a later template
	// is never tried in place. Both are read only.
	InPlace(child, want C) (replicaset.InPlace, string)
	// ApplyInPlace changes child (a copy, never the cache's object) to
	// take want's template where it runs, a power cycle allowed or not,
	// and reports whether it changed anything; the binding patches the
	// difference to the child (a merge patch of the object itself), and
	// the child's own controller carries it out. What only a subresource
	// of the child takes (a Pod's resources, through resize) is
	// InPlaceSubresource's to change. When the child's controller cannot
	// tell from the change itself whether it may stop the child (a VM's
	// may power it off for a lower memory, or wait), record on the child
	// whether a power cycle is allowed (the example operator's annotation
	// vm.replicakit.io/power-cycle), for its controller to read and to
	// remove once done: the binding removes only its own annotations.
	// When the change itself is the power cycle (a Pod's image, which
	// restarts its container), make it only when powerCycle is set. It is
	// called on every pass until the child shows the change, so it must
	// change nothing the second time.
	ApplyInPlace(child, want C, powerCycle bool) bool
	// ShowsInPlace reports whether child runs with want's template now:
	// its status describes its current generation, reports the change
	// made, and no power cycle is pending. Only then does the binding
	// record the new revision on it. Both are read only.
	ShowsInPlace(child, want C) bool
}

// InPlaceSubresource is implemented by an InPlaceRollout Adapter whose
// children take some of an in-place change only through a subresource
// of theirs, not as a change of the object: a Pod's container
// resources, which the API server changes only through the Pod's resize
// subresource (in-place Pod vertical scaling). Wherever the binding
// calls ApplyInPlace it then calls ApplyInPlaceSubresource on a copy of
// what ApplyInPlace left, and patches each change its own way, each only
// when it changed something: ApplyInPlace's as a merge patch of the
// object, first, then this one's as a merge patch through the named
// subresource (r.Client.SubResource(name).Patch), once the object's
// patch succeeded. A failure of either is the pass's error, naming the
// child and, for the subresource, its name; the next pass tries again.
// The package's Pod example (Example_podInPlace) is one to copy. The
// controller needs patch on the subresource (pods/resize). The
// Reconciler finds it by type assertion, and only on an InPlaceRollout;
// check the signature at compile time:
//
//	var _ kube.InPlaceSubresource[*corev1.Pod] = poolAdapter{}
type InPlaceSubresource[C client.Object] interface {
	// ApplyInPlaceSubresource changes child (a copy, ApplyInPlace's
	// change made on it already) to take want's template where it runs
	// in what the subresource it names takes ("resize": a Pod's container
	// resources), a power cycle allowed or not, as ApplyInPlace does; it
	// reports that subresource and whether it changed anything. The
	// binding patches the difference through that subresource, as a merge
	// patch of the object: the API server takes from it what the
	// subresource sets (resize: each container's resources and resize
	// policy) and nothing else. It must name a subresource whenever it
	// changes something, and, as ApplyInPlace, change nothing the second
	// time. want is read only.
	ApplyInPlaceSubresource(child, want C, powerCycle bool) (subresource string, changed bool)
}

// subresourceChange is an in-place change the Adapter made through a
// subresource of a child (InPlaceSubresource): to is from changed.
type subresourceChange struct {
	name     string
	from, to client.Object
}

// inPlaceSubresource has the Adapter, when it is an InPlaceSubresource,
// change a copy of child (as ApplyInPlace left it) through a
// subresource; it returns nil when the Adapter is none or changed
// nothing.
func (r *Reconciler[O, C]) inPlaceSubresource(child, want C, powerCycle bool) *subresourceChange {
	s, ok := any(r.Adapter).(InPlaceSubresource[C])
	if !ok {
		return nil
	}
	to := child.DeepCopyObject().(C)
	name, changed := s.ApplyInPlaceSubresource(to, want, powerCycle)
	if !changed {
		return nil
	}
	return &subresourceChange{name: name, from: child.DeepCopyObject().(client.Object), to: to}
}

// patchSubresource patches child's change s through its subresource, as
// a merge patch of the difference.
func (r *Reconciler[O, C]) patchSubresource(ctx context.Context, child string, s *subresourceChange) error {
	if s.name == "" {
		return fmt.Errorf("update %s in place: ApplyInPlaceSubresource changed it but named no subresource", child)
	}
	if err := r.Client.SubResource(s.name).Patch(ctx, s.to, client.MergeFrom(s.from)); err != nil {
		return fmt.Errorf("update %s in place through subresource %s: %w", child, s.name, err)
	}
	return nil
}

// unconfirmedRevision is the revision a child counts as on while it is
// changed in place back to the revision its label already names (a
// rollback that came before the change it undoes showed): not the
// current one, so that the rollout carries the change through.
const unconfirmedRevision = "in-place-unconfirmed"

// inPlaceRollout returns the Adapter as an InPlaceRollout when the spec
// updates children in place, nil otherwise.
func (r *Reconciler[O, C]) inPlaceRollout(s Spec) InPlaceRollout[O, C] {
	ip, ok := any(r.Adapter).(InPlaceRollout[O, C])
	if !ok || s.Rollout == nil || s.Rollout.Method == replicaset.UpdateReplace {
		return nil
	}
	return ip
}

// describeInPlace adds to each child's replica what an in-place rollout
// needs: a child changed in place to a revision other than the current
// one while its label says the current one (a rollback mid-way) counts
// as on the revision it was being changed to, so that it is changed back;
// one being changed back to the current revision counts as on an older
// one until it shows the change (unconfirmedRevision), so that the
// rollout goes on with it rather than leave it half-changed; and every
// child on an older revision says how it could take the current template
// (InPlaceRollout.InPlace). Each child being changed to the current
// revision records whether it shows the change (child.shows), for
// inPlaceSteps.
func describeInPlace[O, C client.Object](ip InPlaceRollout[O, C], want C, revision string, cs []child) {
	for i := range cs {
		c := &cs[i]
		r := &c.replica
		typed, isC := c.obj.(C)
		to, ok := c.obj.GetAnnotations()[AnnotationInPlaceRevision]
		if ok && to == revision && isC {
			c.shows = ip.ShowsInPlace(typed, want)
		}
		if ok && r.Revision == revision {
			switch {
			case to != revision:
				r.Revision = to
			case isC && !c.shows:
				r.Revision = unconfirmedRevision
			}
		}
		if r.Revision == "" || r.Revision == revision || r.Revision == UnmatchedRevision {
			continue
		}
		if isC {
			r.InPlace, r.InPlaceBlocker = ip.InPlace(typed, want)
		}
	}
}

// inPlaceSteps adds to updates the pass's in-place work, merged with any
// other change of the same child: the plan's updates (the Adapter's
// change, which apply makes, and AnnotationInPlaceRevision), its
// preparations for a power cycle (as preparations writes them for a
// deletion, with AnnotationPreparingUpdate), and the recording of
// children that show their change (child.shows: RevisionLabel moved,
// AnnotationUpdatedInPlace stamped, the in-place and preparation
// annotations and the hooks' removed).
func inPlaceSteps(o *observation, domain string, members []child, updates []inPlaceUpdate, p replicaset.Plan) []inPlaceUpdate {
	byUID := map[string]int{}
	for i, u := range updates {
		byUID[string(u.from.GetUID())] = i
	}
	// edit changes c's copy with f, which reports whether it changed it,
	// and returns the index of c's update, or -1 when it has none.
	edit := func(c child, f func(obj client.Object) bool) int {
		i, ok := byUID[c.replica.UID]
		base := c.obj
		if ok {
			base = updates[i].to
		}
		to := base.DeepCopyObject().(client.Object)
		switch changed := f(to); {
		case !changed && ok:
			return i
		case !changed:
			return -1
		case ok:
			updates[i].to, updates[i].adapterOnly = to, false
			return i
		}
		byUID[c.replica.UID] = len(updates)
		updates = append(updates, inPlaceUpdate{from: c.obj, to: to})
		return len(updates) - 1
	}
	member := map[string]child{}
	for _, c := range members {
		member[c.replica.UID] = c
	}
	hooks := map[string]string{}
	if o.spec.Lifecycle != nil {
		for _, h := range o.spec.Lifecycle.PreDelete {
			hooks[PreDeleteHookAnnotation(domain, h)] = ""
		}
	}
	for _, u := range p.Update {
		c, ok := member[u.Replica.UID]
		if !ok {
			continue
		}
		i := edit(c, func(obj client.Object) bool {
			if obj.GetAnnotations()[AnnotationInPlaceRevision] == o.revision {
				return false
			}
			m := map[string]string{AnnotationInPlaceRevision: o.revision}
			if u.PowerCycle && o.spec.Lifecycle != nil {
				// It comes back as a new child does: its launch
				// gates closed until they open again.
				for _, g := range o.spec.Lifecycle.LaunchGates {
					m[LaunchGateAnnotation(domain, g)] = o.owner.GetName()
				}
			}
			if u.PowerCycle && o.spec.Remediation != nil {
				// And its health too: not ready while it cycles, it is
				// judged by the start-up window from now, and no
				// unhealthy spell (which the storm guard counts) starts.
				m[AnnotationHealth] = encodeHealth(cycledHealth(obj, o.now))
			}
			setAnnotations(obj, m)
			return true
		})
		if i < 0 { // only the Adapter's change, if it makes one
			i = len(updates)
			byUID[c.replica.UID] = i
			updates = append(updates, inPlaceUpdate{from: c.obj, to: c.obj, adapterOnly: true})
		}
		pc := u.PowerCycle
		updates[i].applyInPlace = &pc
	}
	for _, r := range p.PrepareUpdate {
		c, ok := member[r.UID]
		if !ok {
			continue
		}
		edit(c, func(obj client.Object) bool {
			m := map[string]string{AnnotationPreparing: stamp(o.now), AnnotationPreparingUpdate: o.revision}
			for k := range hooks {
				m[k] = o.owner.GetName()
			}
			setAnnotations(obj, m)
			return true
		})
	}
	for _, c := range members {
		a := c.obj.GetAnnotations()
		if c.replica.Deleting || a[AnnotationInPlaceRevision] != o.revision || !c.shows {
			continue
		}
		_, forUpdate := a[AnnotationPreparingUpdate]
		edit(c, func(obj client.Object) bool {
			l := maps.Clone(obj.GetLabels())
			if l == nil {
				l = map[string]string{}
			}
			l[RevisionLabel] = o.revision
			obj.SetLabels(l)
			m := map[string]string{AnnotationInPlaceRevision: "", AnnotationUpdatedInPlace: stamp(o.now)}
			if forUpdate {
				// The power cycle it drained for is done; a preparation
				// to leave stays, the rules' own.
				m[AnnotationPreparing], m[AnnotationPreparingUpdate] = "", ""
				maps.Copy(m, hooks)
			}
			setAnnotations(obj, m)
			return true
		})
	}
	return updates
}

// setAnnotations sets the annotations of set on obj, removing those whose
// value is empty.
func setAnnotations(obj client.Object, set map[string]string) {
	a := maps.Clone(obj.GetAnnotations())
	if a == nil {
		a = map[string]string{}
	}
	for k, v := range set {
		if v == "" {
			delete(a, k)
		} else {
			a[k] = v
		}
	}
	obj.SetAnnotations(a)
}
