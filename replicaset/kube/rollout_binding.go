package kube

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// revision returns the revision of owner's template, of which probe is a
// new child, and the function that brings a child in line with it in
// place: the Adapter's, when it is an InPlaceUpdater, after the binding's
// own (labels, annotations, the revision label).
func (r *Reconciler[O, C]) revision(owner O, probe C) (string, inPlaceFunc, error) {
	up, ok := any(r.Adapter).(InPlaceUpdater[O, C])
	if !ok {
		rev, err := revisionOf(probe)
		return rev, inPlacer(probe, rev), err
	}
	rev, err := up.Revision(owner)
	labels := inPlacer(probe, rev)
	return rev, func(c client.Object, stamp bool) client.Object {
		out := labels(c, stamp)
		changed := out != nil
		if out == nil {
			out = c.DeepCopyObject().(client.Object)
		}
		typed, ok := out.(C)
		if !ok {
			return nil
		}
		if up.UpdateInPlace(owner, typed) || changed {
			return out
		}
		return nil
	}, err
}

// matches reports whether child, which carries no RevisionLabel, was made
// from owner's current template, as the Adapter's TemplateMatcher says;
// without one, every such child was.
func (r *Reconciler[O, C]) matches(owner O, child C) bool {
	m, ok := any(r.Adapter).(TemplateMatcher[O, C])
	return !ok || m.MatchesTemplate(owner, child)
}
