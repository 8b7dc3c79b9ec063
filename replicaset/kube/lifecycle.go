package kube

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/replicakit/replicakit/replicaset"
)

// Lifecycle asks for lifecycle hooks (Spec.Lifecycle): a child chosen to
// leave, by any rule or by the owner's own deletion, prepares first and is
// deleted only once its pre-delete hooks released it or their timeout
// passed; a new child is ready only once its launch gates opened. The
// package documentation's Lifecycle hooks section says how hooks and
// gates are annotations on the child.
type Lifecycle struct {
	// PreDelete names the hooks every child waits on before it is
	// deleted: the binding puts PreDeleteHookAnnotation(domain, name) on
	// a child as it begins to prepare, and the hook's own controller
	// removes it to release the child. Hooks another controller put on a
	// child under the same prefix hold it as well, declared here or not.
	PreDelete []string
	// LaunchGates names the gates a new child passes before it counts as
	// ready: the binding puts LaunchGateAnnotation(domain, name) on each
	// child it creates, and the gate's controller removes it once the
	// workload on the child serves (registered in a load balancer, say).
	LaunchGates []string
	// Lifecycle holds the hooks' Timeout (zero means
	// replicaset.DefaultHookTimeout) and what it means: the child is
	// deleted anyway, or, with Abandon, it is kept, preparing, and
	// ReplicaFailure says so (reason HookAbandoned, the String of the
	// planner's replicaset.HoldHookAbandoned) until its hooks release it.
	replicaset.Lifecycle
	// MarkNotReady counts a child as not ready from the moment it begins
	// to prepare, as OpenKruise CloneSet's markPodNotReady: status stops
	// counting it as ready or available. False: it counts as its readiness
	// says until it is deleted. The rollout's bounds never count on a
	// preparing child either way (replicaset's Lifecycle hooks section).
	MarkNotReady bool
}

// Annotations, finalizer and condition of lifecycle hooks.
const (
	// AnnotationPreparing is on a child that prepares to leave: the time
	// it began (RFC 3339, to the nanosecond). The binding writes it and
	// removes it when a scale-up takes the child back; hooks' controllers
	// watch for it and must not write it.
	AnnotationPreparing = "replicakit.io/preparing"
	// DefaultHookDomain is the domain of hook and gate annotations when
	// Reconciler.HookDomain is empty.
	DefaultHookDomain = "replicakit.io"
	// FinalizerDrain is on an owner whose Spec has a Lifecycle, so that
	// deleting the owner drains its children first: the binding removes
	// it once no child is held by a hook, and the garbage collector
	// deletes the children.
	FinalizerDrain = "replicakit.io/drain"
	// ConditionDraining is set with Spec.Lifecycle: True while children
	// prepare to leave, its message naming each child, the hooks that
	// hold it and until when; False when none does.
	ConditionDraining = "Draining"
	// ReasonWaitingOnHooks means children prepare to leave (Draining is
	// True).
	ReasonWaitingOnHooks = "WaitingOnHooks"
	// ReasonNoneDraining means no child prepares to leave (Draining is
	// False).
	ReasonNoneDraining = "NoneDraining"
)

// PreDeleteHookAnnotation is the annotation by which hook holds a child
// before it is deleted: pre-delete.hook.<domain>/<hook>, Cluster API's
// shape (pre-drain.delete.hook.machine.cluster.x-k8s.io/<name>). An empty
// domain is DefaultHookDomain, as for Reconciler.HookDomain. Its value is
// free (the binding writes the owner's name). The hook's name must make a
// valid annotation key: a DNS subdomain's label, say drain or lb-remove.
func PreDeleteHookAnnotation(domain, hook string) string {
	return "pre-delete.hook." + cmp.Or(domain, DefaultHookDomain) + "/" + hook
}

// LaunchGateAnnotation is the annotation by which gate keeps a new child
// from counting as ready: launch.gate.<domain>/<gate>. An empty domain is
// DefaultHookDomain; names are as for PreDeleteHookAnnotation.
func LaunchGateAnnotation(domain, gate string) string {
	return "launch.gate." + cmp.Or(domain, DefaultHookDomain) + "/" + gate
}

// PreDeleteHooks returns the names of the pre-delete hooks on obj under
// domain (empty: DefaultHookDomain), sorted: those that hold it while it
// prepares to leave.
func PreDeleteHooks(obj metav1.Object, domain string) []string {
	return namesUnder(obj, "pre-delete.hook."+cmp.Or(domain, DefaultHookDomain)+"/")
}

// LaunchGates returns the names of the launch gates still closed on obj
// under domain (empty: DefaultHookDomain), sorted.
func LaunchGates(obj metav1.Object, domain string) []string {
	return namesUnder(obj, "launch.gate."+cmp.Or(domain, DefaultHookDomain)+"/")
}

func namesUnder(obj metav1.Object, prefix string) []string {
	var out []string
	for k := range obj.GetAnnotations() {
		if name, ok := strings.CutPrefix(k, prefix); ok && name != "" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// hookDomain is the Reconciler's hook domain, or the default.
func (r *Reconciler[O, C]) hookDomain() string {
	if r.HookDomain == "" {
		return DefaultHookDomain
	}
	return r.HookDomain
}

// lifecycleRead is what a pass reads children's lifecycles with: the
// hook domain, the pass's time, and whether launch gates count (only with
// Spec.Lifecycle). A preparation is read with or without a Lifecycle: the
// planner takes back one the spec no longer has hooks for.
type lifecycleRead struct {
	domain string
	now    time.Time
	gates  bool
}

// describe adds to rep what obj's annotations say of its lifecycle:
// whether it prepares to leave, the hooks that hold it, and whether a
// launch gate is closed. A preparing time that does not parse is a
// warning, and the pass counts the preparation from its own time.
func (l *lifecycleRead) describe(obj metav1.Object, rep *replicaset.Replica) error {
	var err error
	if v, ok := obj.GetAnnotations()[AnnotationPreparing]; ok {
		since := unstamp(v)
		if since.IsZero() && l.gates {
			err = fmt.Errorf("child %s: annotation %s=%q is not a time; counting from now", obj.GetName(), AnnotationPreparing, v)
		}
		if since.IsZero() {
			since = l.now
		}
		_, update := obj.GetAnnotations()[AnnotationPreparingUpdate]
		rep.Preparing = &replicaset.Preparing{Since: since, Hooks: PreDeleteHooks(obj, l.domain), Update: update}
	}
	rep.LaunchGated = l.gates && len(LaunchGates(obj, l.domain)) > 0
	return err
}

// lifecycleSpec is the planner's Lifecycle for the spec's, nil without.
func lifecycleSpec(s Spec) *replicaset.Lifecycle {
	if s.Lifecycle == nil {
		return nil
	}
	return &s.Lifecycle.Lifecycle
}

// preparations adds to updates the annotations of the children the plan
// prepares (AnnotationPreparing at now, and the declared hooks) and takes
// back (both removed), merged with any other in-place change of the same
// child. Without a Lifecycle the plan takes back every child still marked
// preparing (the spec dropped its Lifecycle while they prepared), and the
// marks go with the rest.
func preparations(o *observation, domain string, members []child, updates []inPlaceUpdate, p replicaset.Plan) []inPlaceUpdate {
	set := map[string]map[string]string{} // by UID
	for _, c := range members {
		v, ok := c.obj.GetAnnotations()[AnnotationPreparing]
		switch {
		case !ok || c.replica.Deleting || o.spec.Lifecycle == nil:
		case unstamp(v).IsZero():
			// A time that does not parse counts from now (describe): write
			// now, or every pass would count it from its own time again
			// and the timeout never pass.
			set[c.replica.UID] = map[string]string{AnnotationPreparing: stamp(o.now)}
		}
	}
	if len(p.Prepare) == 0 && len(p.Cancel) == 0 && len(set) == 0 {
		return updates
	}
	hooks := func(v string) map[string]string {
		m := map[string]string{AnnotationPreparing: "", AnnotationPreparingUpdate: ""}
		if o.spec.Lifecycle != nil {
			for _, h := range o.spec.Lifecycle.PreDelete {
				m[PreDeleteHookAnnotation(domain, h)] = v
			}
		}
		return m
	}
	for _, r := range p.Prepare {
		m := hooks(o.owner.GetName())
		m[AnnotationPreparing] = stamp(o.now)
		set[r.UID] = m
	}
	for _, r := range p.Cancel {
		set[r.UID] = hooks("")
	}
	for i, u := range updates {
		if m, ok := set[string(u.from.GetUID())]; ok {
			updates[i].to = withAnnotations(u.to, m)
			delete(set, string(u.from.GetUID()))
		}
	}
	for _, c := range members {
		if m, ok := set[c.replica.UID]; ok {
			updates = append(updates, inPlaceUpdate{from: c.obj, to: withAnnotations(c.obj, m)})
		}
	}
	return updates
}

// finalizerChange is what a pass does with the owner's FinalizerDrain.
type finalizerChange int

const (
	finalizerKeep finalizerChange = iota
	finalizerAdd
	finalizerRemove
)

// drainFinalizer says whether a pass of an owner not being deleted adds
// FinalizerDrain (an owner with a Lifecycle that lacks it) or removes it
// (an owner without one).
func drainFinalizer(o *observation) finalizerChange {
	has := controllerutil.ContainsFinalizer(o.owner, FinalizerDrain)
	switch {
	case has && o.spec.Lifecycle == nil:
		return finalizerRemove
	case !has && o.owner.GetDeletionTimestamp() == nil && o.spec.Lifecycle != nil && o.specErr == nil:
		return finalizerAdd
	}
	return finalizerKeep
}

// drainDeleted decides a pass of the deletion of an owner that carries
// FinalizerDrain: its children (every child it controls, matching its
// selector or not) prepare to leave (replicaset.Drain), each is deleted
// once its hooks released it (or timed out), and once no hook holds any,
// FinalizerDrain goes and the garbage collector deletes what is left. It
// needs nothing of the spec but its Lifecycle, so a spec that cannot be
// used otherwise (a zone the operator no longer knows, an unknown policy)
// never keeps the owner: without a Lifecycle the finalizer goes at once.
// A pass that finds the cache behind its last writes waits, as a stale
// child would be prepared again.
func drainDeleted(o *observation, d *decision, rl rules) {
	d.hold, d.members = holdDeleting, o.children
	if o.spec.Lifecycle == nil {
		d.finalizer = finalizerRemove
		return
	}
	if o.waiting {
		return
	}
	spec := replicaset.Spec{Lifecycle: lifecycleSpec(o.spec)}
	p, err := replicaset.Drain(spec, replicas(d.members, o, rl.naming), o.now)
	if err != nil {
		d.hold, d.failure = holdFailure, err // an invalid child: said in status, tried again on its change
		return
	}
	d.plan = p
	d.delete = slices.Clone(p.Delete)
	d.update = preparations(o, rl.hookDomain, d.members, nil, p)
	if len(p.Prepare) == 0 && len(p.Lifecycle.Waiting) == 0 && len(p.Lifecycle.Abandoned) == 0 {
		d.finalizer = finalizerRemove
	}
}

// recordPreparations remembers the preparations and take-backs the pass
// wrote, so that the owner's passes wait until the cache shows them: a
// pass on a stale cache would choose children to leave again.
func (r *Reconciler[O, C]) recordPreparations(key string, d decision, out outcome, now time.Time) {
	for _, p := range []struct {
		rs   []replicaset.Replica
		want bool
	}{{d.plan.Prepare, true}, {d.plan.PrepareUpdate, true}, {d.plan.Cancel, false}} {
		for _, x := range p.rs {
			if !slices.Contains(out.updated, x.Name) {
				continue
			}
			want := p.want
			r.restarts.expect(key, x.UID, now, func(c client.Object, _ time.Time) bool {
				_, ok := c.GetAnnotations()[AnnotationPreparing]
				return ok == want
			})
		}
	}
}

// patchFinalizer adds or removes the owner's FinalizerDrain, on a copy of
// the cached owner, with the owner's resourceVersion as a precondition
// (a merge patch replaces the whole list, and another controller's
// finalizer added meanwhile must not be lost). A conflict is no failure
// but a retry: the owner changed since the pass read it (its status,
// perhaps, which starts no pass), and the pass soon after tries again.
func (r *Reconciler[O, C]) patchFinalizer(ctx context.Context, owner client.Object, change finalizerChange) (retry bool, err error) {
	if change == finalizerKeep {
		return false, nil
	}
	to := owner.DeepCopyObject().(client.Object)
	if change == finalizerAdd {
		controllerutil.AddFinalizer(to, FinalizerDrain)
	} else {
		controllerutil.RemoveFinalizer(to, FinalizerDrain)
	}
	err = r.Client.Patch(ctx, to, client.MergeFromWithOptions(owner, client.MergeFromWithOptimisticLock{}))
	switch {
	case apierrors.IsConflict(err):
		return true, nil
	case err != nil && !apierrors.IsNotFound(err):
		return false, fmt.Errorf("update finalizer %s of %s: %w", FinalizerDrain, owner.GetName(), err)
	}
	return false, nil
}

// statusReplicas are the members as status counts them: with
// Lifecycle.MarkNotReady, a child preparing to leave is not ready. The
// planner sees it as it is (its rules never count a preparing child as
// available anyway, and a scale-up may take back only a ready one).
func statusReplicas(o *observation, members []replicaset.Replica) []replicaset.Replica {
	if o.spec.Lifecycle == nil || !o.spec.Lifecycle.MarkNotReady {
		return members
	}
	for i := range members {
		if members[i].Preparing != nil {
			members[i].Ready = false
		}
	}
	return members
}

// lifecycleEvents lists the pass's lifecycle events: children that began
// to prepare, taken back, or deleted when their hooks timed out.
func lifecycleEvents(d decision, out outcome, hooks bool) []note {
	var evs []note
	done := func(rs []replicaset.Replica, in []string) []string {
		var names []string
		for _, r := range rs {
			if slices.Contains(in, r.Name) {
				names = append(names, r.Name)
			}
		}
		return names
	}
	if names := done(d.plan.Prepare, out.updated); len(names) > 0 {
		evs = append(evs, note{corev1.EventTypeNormal, "Preparing", "Prepare",
			"Children prepare to leave, waiting on their pre-delete hooks: " + listNote(names, ", ", maxNote), nil})
	}
	if names := done(d.plan.Cancel, out.updated); len(names) > 0 {
		why := "Children taken back by a scale-up before they left: "
		if !hooks {
			why = "Children no longer prepare to leave: the spec has no lifecycle hooks now: "
		}
		evs = append(evs, note{corev1.EventTypeNormal, "TakenBack", "Cancel", why + listNote(names, ", ", maxNote), nil})
	}
	for _, r := range d.plan.Lifecycle.TimedOut {
		if slices.Contains(out.acted.Deleted, r.Name) {
			evs = append(evs, note{corev1.EventTypeWarning, "HookTimedOut", "Delete",
				fmt.Sprintf("Deleted child %s: pre-delete hooks %s still held it when their timeout passed",
					r.Name, strings.Join(r.Preparing.Hooks, ", ")), memberObject(d, r.Name)})
		}
	}
	return evs
}

// memberObject is the member called name, nil when there is none.
func memberObject(d decision, name string) client.Object {
	for _, c := range d.members {
		if c.obj.GetName() == name {
			return c.obj
		}
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
