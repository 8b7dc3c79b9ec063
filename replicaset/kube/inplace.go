package kube

import (
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset"
)

// AnnotationTemplateLabels is the annotation in which the binding records,
// on each child of an owner whose Spec.Rollout is set, the keys of the
// labels it put there from the owner's template (sorted, comma-separated:
// "app,tier"). When the template drops one of them, the binding removes it
// from the child in place; labels it did not put there (added by a person,
// another controller, or on the child before the binding wrote that key)
// are never removed. RevisionLabel and ZoneLabel are not recorded: the
// binding keeps them itself.
//
// A child made by the binding records every label of the template it was
// made from. A child that has no record (made by a replicakit before this
// annotation, or adopted) records only the keys the binding writes from
// then on, so the labels it carried before are left to whoever put them
// there.
const AnnotationTemplateLabels = "replicakit.io/template-labels"

// inPlaceFunc brings a child in line with the owner's template in what
// needs no new child: it returns a changed copy, or nil when nothing would
// change. stamp says whether a child without RevisionLabel is given the
// template's revision: false for a child a TemplateMatcher says was not
// made from the template, which is to be replaced instead.
type inPlaceFunc func(child client.Object, stamp bool) client.Object

// inPlace returns a copy of child brought in line with the template probe
// was built from, or nil when nothing would change: see inPlacer.
func inPlace(child, probe client.Object, revision string) client.Object {
	return inPlacer(probe, revision)(child, true)
}

// inPlacer returns the in-place update for the template probe was built
// from, with what it needs of probe worked out once (a pass calls it for
// every child). The update gives the child the template's labels (but
// RevisionLabel) and annotations, and RevisionLabel set to revision when
// it has none and stamp is set; it removes the labels recorded in
// AnnotationTemplateLabels that the template no longer has, and keeps that
// record: the keys it recorded that the template still has, and those it
// writes. Labels and annotations it did not write are left as they are;
// so are annotations the template no longer has.
func inPlacer(probe client.Object, revision string) inPlaceFunc {
	want := maps.Clone(probe.GetLabels())
	delete(want, RevisionLabel)
	wantAnnotations := maps.Clone(probe.GetAnnotations())
	delete(wantAnnotations, AnnotationTemplateLabels)
	return func(child client.Object, stamp bool) client.Object {
		labels, annotations := child.GetLabels(), child.GetAnnotations()
		recorded := recordedKeys(annotations[AnnotationTemplateLabels])
		_, labelled := labels[RevisionLabel]
		if !changes(labels, annotations, recorded, want, wantAnnotations, stamp && !labelled) {
			return nil
		}
		l := maps.Clone(labels)
		if l == nil {
			l = map[string]string{}
		}
		var record []string
		for _, k := range recorded {
			if _, kept := want[k]; kept {
				record = append(record, k)
			} else {
				delete(l, k)
			}
		}
		for k, v := range want {
			if l[k] != v {
				l[k] = v
				if recordable(k) && !slices.Contains(record, k) {
					record = append(record, k)
				}
			}
		}
		if stamp && !labelled {
			l[RevisionLabel] = revision
		}
		a := maps.Clone(annotations)
		if a == nil {
			a = map[string]string{}
		}
		maps.Copy(a, wantAnnotations)
		if slices.Sort(record); len(record) > 0 {
			a[AnnotationTemplateLabels] = strings.Join(record, ",")
		} else {
			delete(a, AnnotationTemplateLabels)
		}
		out := child.DeepCopyObject().(client.Object)
		out.SetLabels(l)
		if len(a) == 0 {
			a = annotations // nil or empty, as it was
		}
		out.SetAnnotations(a)
		return out
	}
}

// changes reports whether the in-place update would change the child: a
// label of the template missing or different, a recorded label the
// template dropped, an annotation of the template missing or different,
// or the revision label to stamp.
func changes(labels, annotations map[string]string, recorded []string, want, wantAnnotations map[string]string, stamp bool) bool {
	if stamp {
		return true
	}
	for k, v := range want {
		if labels[k] != v {
			return true
		}
	}
	for _, k := range recorded {
		if _, kept := want[k]; !kept {
			return true // the label goes, or at least its record
		}
	}
	for k, v := range wantAnnotations {
		if annotations[k] != v {
			return true
		}
	}
	return false
}

// recordedKeys reads AnnotationTemplateLabels: the label keys the binding
// put on a child. Keys it never records are dropped, so that a record
// edited by hand cannot make the binding remove them.
func recordedKeys(v string) []string {
	if v == "" {
		return nil
	}
	keys := strings.Split(v, ",")
	return slices.DeleteFunc(keys, func(k string) bool { return !recordable(k) })
}

// recordable reports whether the binding records label key k as one it
// put on a child from the template: not the labels it keeps itself.
func recordable(k string) bool {
	return k != "" && k != RevisionLabel && k != ZoneLabel
}

// templateKeys lists the keys of a template's labels that the binding
// records (AnnotationTemplateLabels), sorted.
func templateKeys(template map[string]string) []string {
	keys := slices.Sorted(maps.Keys(template))
	return slices.DeleteFunc(keys, func(k string) bool { return !recordable(k) })
}

// stampNew labels a new child, before it is created, with revision and
// records in AnnotationTemplateLabels the keys of its template's labels
// (templateKeys of the labels NewChild built it with); it does nothing
// without a revision (rollouts off).
func stampNew(child client.Object, keys []string, revision string) {
	if revision == "" {
		return
	}
	l := maps.Clone(child.GetLabels())
	if l == nil {
		l = map[string]string{}
	}
	l[RevisionLabel] = revision
	child.SetLabels(l)
	a := maps.Clone(child.GetAnnotations())
	if a == nil {
		a = map[string]string{}
	}
	if len(keys) > 0 {
		a[AnnotationTemplateLabels] = strings.Join(keys, ",")
	} else {
		delete(a, AnnotationTemplateLabels)
	}
	child.SetAnnotations(a)
}

// updates lists the members, not being deleted, deleted or restarted in
// this pass, that the template changes in place (child.templated) or
// whose AnnotationHealth changes (health, by UID: the copies heal made).
func updates(members []child, deleted []replicaset.Replica, health map[string]client.Object, restarted []restart) []inPlaceUpdate {
	var out []inPlaceUpdate
	gone := make(map[string]bool, len(deleted)+len(restarted))
	for _, r := range deleted {
		gone[r.UID] = true
	}
	for _, r := range restarted {
		gone[string(r.from.GetUID())] = true
	}
	for _, c := range members {
		if c.replica.Deleting || gone[c.replica.UID] {
			continue
		}
		to := c.templated
		if h, ok := health[c.replica.UID]; ok {
			if to == nil {
				to = h
			} else {
				to = withAnnotations(to, map[string]string{AnnotationHealth: h.GetAnnotations()[AnnotationHealth]})
			}
		}
		if to != nil {
			out = append(out, inPlaceUpdate{from: c.obj, to: to})
		}
	}
	return out
}
