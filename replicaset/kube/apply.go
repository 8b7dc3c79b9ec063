package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/execute"
)

// outcome is what apply did.
type outcome struct {
	// ownerGone means the live read before adopting, releasing or (with
	// ConfirmOwnerBeforeCreate) creating found the owner deleted, being
	// deleted or replaced; and confirmErr that the read failed. Either way
	// nothing was done.
	ownerGone  bool
	confirmErr error
	// adopted and released name the children whose ownership changed;
	// claimErr joins the adoptions and releases that failed (then the
	// plan was not carried out).
	adopted, released []string
	claimErr          error
	// ran reports that the plan was carried out, with result acted.
	ran   bool
	acted execute.Result
	// updated names the children changed in place; updateErr joins the
	// changes that failed (the plan was carried out all the same).
	updated   []string
	updateErr error
	// changed names the children the plan deleted that had changed since
	// the pass read them, and so were left (errChildChanged); they are
	// not in acted's Deleted, nor their errors in acted's Err.
	changed []string
	// restarted are the restarts that succeeded (Spec.Remediation), their
	// health recorded; restartErr joins those that failed, and
	// historyErr says that the owner's remediation history could not be
	// written (the plan was carried out all the same).
	restarted  []restart
	restartErr error
	historyErr error
	// finalizerErr says that the owner's FinalizerDrain could not be
	// added or removed, finalizerRetry that the owner had changed since
	// the pass read it, and the change waits for the next pass.
	finalizerErr   error
	finalizerRetry bool
}

// apply carries out d and decides nothing: it confirms the owner with a
// read from the API server when the pass adopts or releases (or creates,
// with ConfirmOwnerBeforeCreate), records the
// expectations of every write (the cache may show a write before the call
// returns), then adopts and releases, then runs the plan, stopping at the
// first step that fails, as decision's doc says.
func (r *Reconciler[O, C]) apply(ctx context.Context, o *observation, d decision) outcome {
	var out outcome
	if !d.acts() {
		return out
	}
	if len(d.adopt) > 0 || len(d.release) > 0 || (len(d.create) > 0 && r.ConfirmOwnerBeforeCreate) {
		live, err := r.confirmOwner(ctx, o.owner)
		if err != nil || !live {
			out.ownerGone, out.confirmErr = !live && err == nil, err
			return out
		}
	}
	created := append(namesOf(d.adopt), d.create...)
	gone := uids(d.release)
	for _, v := range d.delete {
		gone = append(gone, v.UID)
	}
	r.expectations.expect(o.key, created, gone, o.now)

	adopt := func(obj client.Object) error { return controllerutil.SetControllerReference(o.owner, obj, r.Scheme) }
	release := func(obj client.Object) error { return controllerutil.RemoveControllerReference(o.owner, obj, r.Scheme) }
	var errAdopt, errRelease error
	// An adopted child's version is the adoption's: the plan may delete
	// it (counted as adopted) and nothing else changed it since the read,
	// or the optimistic lock would have refused the adoption.
	var vers map[types.UID]string
	if len(d.delete) > 0 {
		vers = versions(d.members)
	}
	out.adopted, errAdopt = r.patchAll(ctx, "adopt", d.adopt, adopt, vers)
	out.released, errRelease = r.patchAll(ctx, "release", d.release, release, nil)
	if out.claimErr = errors.Join(errAdopt, errRelease); out.claimErr != nil {
		return out
	}
	out.updated, out.updateErr = r.updateInPlace(ctx, o, d.update)
	out.restarted, out.restartErr = r.restart(ctx, o, d.restart)
	if len(d.create) > 0 || len(d.delete) > 0 {
		out.ran = true
		a := &actuator[O, C]{r: r, owner: o.owner.(O), revision: o.revision, versions: vers}
		if o.spec.Lifecycle != nil {
			a.gates = o.spec.Lifecycle.LaunchGates
		}
		out.acted = execute.Plan(ctx, a, d.toExecute(), d.create, r.Execute)
		out.changed, out.acted.Err = splitChanged(out.acted.Err)
		if len(out.changed) > 0 {
			log.FromContext(ctx).V(1).Info("left children that changed since the pass read them; the next pass plans with them",
				"children", out.changed)
		}
	}
	if h, changed := carriedHistory(o, d, out); changed {
		out.historyErr = r.writeHistory(ctx, o.owner, h, o.revision)
		r.unwritten.record(o.key, encodeHistory(h, o.revision), out.historyErr)
	}
	if out.updateErr == nil || d.finalizer == finalizerAdd {
		out.finalizerRetry, out.finalizerErr = r.patchFinalizer(ctx, o.owner, d.finalizer)
	}
	return out
}

// carriedHistory is the owner's remediation history after the pass as
// carried out: a replacement whose delete failed (or was left, the child
// having changed) was not made, so it is no failure of the history. It
// reports whether the history changed.
func carriedHistory(o *observation, d decision, out outcome) (replicaset.History, bool) {
	if !d.historyChanged || len(d.plan.Replace) == 0 {
		return d.history, d.historyChanged
	}
	p := d.plan
	p.Replace = slices.DeleteFunc(slices.Clone(p.Replace), func(r replicaset.Replica) bool {
		prepared := slices.ContainsFunc(p.Prepare, func(x replicaset.Replica) bool { return x.UID == r.UID }) &&
			slices.Contains(out.updated, r.Name)
		return !slices.Contains(out.acted.Deleted, r.Name) && !prepared
	})
	before, cleared := historyFor(o)
	h := before.After(ofTemplate(p, o.revision), p.Create, nil, 0, o.now)
	return h, !sameRemediations(h, before) || cleared
}

// versions maps each child's UID to its resourceVersion as the pass read
// it.
func versions(cs []child) map[types.UID]string {
	m := make(map[types.UID]string, len(cs))
	for _, c := range cs {
		m[c.obj.GetUID()] = c.obj.GetResourceVersion()
	}
	return m
}

// splitChanged takes the deletes that found their child changed out of
// err: it returns their names and the other failures.
func splitChanged(err error) (changed []string, rest error) {
	var others []error
	for _, e := range unjoin(err) {
		var op *execute.OpError
		if errors.Is(e, errChildChanged) && errors.As(e, &op) {
			changed = append(changed, op.Name)
			continue
		}
		others = append(others, e)
	}
	return changed, errors.Join(others...)
}

// updateInPlace patches each child of us with its change in place, as a
// merge patch of the difference, and returns the names it changed,
// joining the failures. The plan's in-place updates (inPlaceUpdate's
// applyInPlace) are the Adapter's to make first, toward o.want
// (InPlaceRollout.ApplyInPlace), and then, when it is an
// InPlaceSubresource, through a subresource, patched after the object
// and only once the object's patch succeeded; a child that neither the
// Adapter nor the pass changes is left alone.
func (r *Reconciler[O, C]) updateInPlace(ctx context.Context, o *observation, us []inPlaceUpdate) ([]string, error) {
	var done []string
	var errs []error
	ip := r.inPlaceRollout(o.spec)
	for _, u := range us {
		to, patchObject := u.to, true
		var sub *subresourceChange
		if u.applyInPlace != nil {
			to = to.DeepCopyObject().(client.Object)
			typed, isC := to.(C)
			want, wantC := o.want.(C)
			changed := ip != nil && isC && wantC && ip.ApplyInPlace(typed, want, *u.applyInPlace)
			if ip != nil && isC && wantC {
				sub = r.inPlaceSubresource(typed, want, *u.applyInPlace)
			}
			if patchObject = changed || !u.adapterOnly; !patchObject && sub == nil {
				continue
			}
		}
		if patchObject {
			err := r.Client.Patch(ctx, to, client.MergeFrom(u.from))
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("update %s in place: %w", u.from.GetName(), err))
				continue
			}
			done = append(done, u.from.GetName())
			if err != nil { // gone: nothing to patch through a subresource either
				continue
			}
		}
		if sub == nil {
			continue
		}
		if err := r.patchSubresource(ctx, u.from.GetName(), sub); err != nil {
			errs = append(errs, err)
		} else if !patchObject {
			done = append(done, u.from.GetName())
		}
	}
	return done, errors.Join(errs...)
}

// confirmOwner reads the owner's metadata from the API server, once per
// pass that adopts or releases (or creates, with ConfirmOwnerBeforeCreate):
// it is live when it exists with the same UID and is not being deleted. The
// cache may not show yet that the owner is being deleted; adopting or
// creating then would hand children (for VMs, clones) straight to the
// garbage collector, and releasing would let a child escape its cascade.
func (r *Reconciler[O, C]) confirmOwner(ctx context.Context, owner client.Object) (bool, error) {
	fresh := &metav1.PartialObjectMetadata{}
	fresh.SetGroupVersionKind(r.ownerGVK)
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(owner), fresh)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("confirm owner %s before acting: %w", owner.GetName(), err)
	}
	return fresh.GetUID() == owner.GetUID() && fresh.GetDeletionTimestamp() == nil, nil
}

// patchAll changes the ownership of each of objs (what names the change,
// for errors) and returns the names it changed, joining the failures.
func (r *Reconciler[O, C]) patchAll(ctx context.Context, what string, objs []client.Object, change func(client.Object) error, vers map[types.UID]string) ([]string, error) {
	var done []string
	var errs []error
	for _, c := range objs {
		v, err := r.patchOwnership(ctx, c, change)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", what, c.GetName(), err))
			continue
		}
		if vers != nil {
			vers[c.GetUID()] = v
		}
		done = append(done, c.GetName())
	}
	return done, errors.Join(errs...)
}

// patchOwnership changes a copy of the cache's child c and patches the
// difference with an optimistic lock, so a concurrent change by another
// controller wins cleanly. It returns the child's resourceVersion after
// the patch.
func (r *Reconciler[O, C]) patchOwnership(ctx context.Context, c client.Object, change func(client.Object) error) (string, error) {
	modified := c.DeepCopyObject().(client.Object)
	if err := change(modified); err != nil {
		return "", err
	}
	err := r.Client.Patch(ctx, modified, client.MergeFromWithOptions(c, client.MergeFromWithOptimisticLock{}))
	return modified.GetResourceVersion(), err
}

func namesOf(objs []client.Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.GetName()
	}
	return out
}

func uids(objs []client.Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = string(o.GetUID())
	}
	return out
}
