package kube_test

import (
	"context"
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset/kube"
)

// TestRollout_DroppedTemplateLabelsGo: a label the template drops is
// removed in place from the children the binding put it on, and stays
// where someone else put it: a label a person added, and one a child
// carried, with the template's value, before the template had it. No
// child is replaced for it. (Before: every dropped label stayed on every
// child.)
func TestRollout_DroppedTemplateLabelsGo(t *testing.T) {
	c, ns := startManager(t)
	w := widget(ns, "relabel", 3)
	if err := unstructured.SetNestedStringMap(w.Object, map[string]string{"app": "relabel", "tier": "web"}, "spec", "template", "metadata", "labels"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(w.Object, map[string]any{}, "spec", "strategy"); err != nil {
		t.Fatal(err)
	}
	createObject(t, c, w)
	converge(t, c, w, 3)
	made := childObjects(t, c, w)
	for name, cm := range made {
		if got := cm.Annotations[kube.AnnotationTemplateLabels]; got != "app,tier" {
			t.Errorf("%s records %s=%q; want the template's label keys, app,tier", name, kube.AnnotationTemplateLabels, got)
		}
	}

	// A person labels one child: team=ops, and env=prod before the
	// template has env.
	var theirs string
	for name := range made {
		theirs = name
		break
	}
	cm := made[theirs]
	patched := cm.DeepCopy()
	maps.Copy(patched.Labels, map[string]string{"team": "ops", "env": "prod"})
	if err := c.Patch(context.Background(), patched, client.MergeFrom(&cm)); err != nil {
		t.Fatal(err)
	}

	mergePatch(t, c, w, `{"spec":{"template":{"metadata":{"labels":{"env":"prod"}}}}}`)
	await(t, "env=prod on every child", func() bool {
		now := childObjects(t, c, w)
		for _, cm := range now {
			if cm.Labels["env"] != "prod" {
				return false
			}
		}
		return len(now) == 3
	})

	mergePatch(t, c, w, `{"spec":{"template":{"metadata":{"labels":{"tier":null,"env":null}}}}}`)
	await(t, "tier gone from every child, and env from those the binding put it on", func() bool {
		now := childObjects(t, c, w)
		for name, cm := range now {
			_, tier := cm.Labels["tier"]
			_, env := cm.Labels["env"]
			if tier || env && name != theirs {
				return false
			}
		}
		return len(now) == 3
	})
	now := childObjects(t, c, w)
	if got := now[theirs].Labels; got["team"] != "ops" || got["env"] != "prod" || got["app"] != "relabel" {
		t.Errorf("%s's labels are %v; want the person's team=ops and env=prod kept, and app=relabel", theirs, got)
	}
	for name, cm := range now {
		if made[name].UID != cm.UID {
			t.Errorf("%s was replaced for a change of labels", name)
		}
		if got := cm.Annotations[kube.AnnotationTemplateLabels]; got != "app" {
			t.Errorf("%s records %q; want app, the template's only label left", name, got)
		}
	}
}

// matchingWidgets is the Widget adapter with a TemplateMatcher: a child
// matches the template when its data is the template's.
type matchingWidgets struct{ widgets }

var _ kube.TemplateMatcher[*unstructured.Unstructured, *corev1.ConfigMap] = matchingWidgets{}

func (m matchingWidgets) MatchesTemplate(w *unstructured.Unstructured, c *corev1.ConfigMap) bool {
	want, err := m.NewChild(w)
	return err == nil && maps.Equal(want.Data, c.Data)
}

// TestRollout_TemplateMatcherRollsUnlabelled: children made before
// rollouts were turned on, from a template changed since, are replaced
// once rollouts are on when the Adapter's TemplateMatcher says they do
// not match, within the default strategy's bounds (an independent watch
// checks them); children of an owner whose template did not change are
// labelled in place, not replaced. (Before: all were labelled as current
// and RolledOut said True on the old data.)
func TestRollout_TemplateMatcherRollsUnlabelled(t *testing.T) {
	c, ns := startManagerWith(t, func(r *reconciler, _ ctrl.Manager) { r.Adapter = matchingWidgets{} })
	changed, same := widget(ns, "changed", 3), widget(ns, "same", 2)
	createObject(t, c, changed)
	createObject(t, c, same)
	converge(t, c, changed, 3)
	converge(t, c, same, 2)

	// Rollouts off: a change of the template replaces nothing.
	mergePatch(t, c, changed, `{"spec":{"template":{"data":{"version":"2"}}}}`)
	converge(t, c, changed, 3)
	before, sameBefore := childObjects(t, c, changed), childObjects(t, c, same)
	for name, cm := range before {
		if cm.Data["version"] != "" {
			t.Fatalf("%s took the new template with rollouts off: %v", name, cm.Data)
		}
	}

	x := watchChildren(t, changed, before)
	mergePatch(t, c, changed, `{"spec":{"strategy":{}}}`)
	mergePatch(t, c, same, `{"spec":{"strategy":{}}}`)
	var rev string
	await(t, "every child of changed on the new template, labelled", func() bool {
		now := childObjects(t, c, changed)
		for _, cm := range now {
			if cm.Data["version"] != "2" || cm.Labels[kube.RevisionLabel] == "" {
				return false
			}
			rev = cm.Labels[kube.RevisionLabel]
		}
		return len(now) == 3
	})
	awaitStatus(t, c, changed, 3, rev, kube.ReasonRolloutComplete)
	for name := range before {
		if _, ok := childObjects(t, c, changed)[name]; ok {
			t.Errorf("%s, made from the old template, is still there", name)
		}
	}
	if fewest, most := x.bounds(); fewest < 3 || most > 4 {
		t.Errorf("the watch saw between %d and %d live children; want 3 to 4 (Desired 3, MaxSurge 1, MaxUnavailable 0)", fewest, most)
	}

	var sameRev string
	await(t, "every child of same labelled with one revision", func() bool {
		now := childObjects(t, c, same)
		for _, cm := range now {
			if sameRev = cm.Labels[kube.RevisionLabel]; sameRev == "" {
				return false
			}
		}
		return len(now) == 2
	})
	awaitStatus(t, c, same, 2, sameRev, kube.ReasonRolloutComplete)
	for name, cm := range childObjects(t, c, same) {
		if sameBefore[name].UID != cm.UID {
			t.Errorf("%s, which matches its template, was replaced", name)
		}
	}
}
