package kube

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"
)

// labelKeys are the keys the in-place property draws labels from: a few
// of the template's or anyone's, and the two the binding keeps itself.
var labelKeys = []string{"app", "tier", "team", "env", ZoneLabel, RevisionLabel}

func labelMap(t *rapid.T, label string) map[string]string {
	return rapid.MapOf(rapid.SampledFrom(labelKeys), rapid.SampledFrom([]string{"1", "2"})).Draw(t, label)
}

// TestInPlacer_TemplateLabels: the in-place update gives a child every
// label of the template and removes those it recorded putting there that
// the template dropped, and no other; it keeps the record of what it
// put there; it stamps the revision only on a child without one, when
// asked; it changes nothing the second time, and never its input.
func TestInPlacer_TemplateLabels(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		template := labelMap(t, "template")
		have := labelMap(t, "child")
		record := rapid.SliceOfDistinct(rapid.SampledFrom(labelKeys), func(k string) string { return k }).Draw(t, "record")
		stamp := rapid.Bool().Draw(t, "stamp")
		annotations := map[string]string{"other": "x"}
		if len(record) > 0 {
			annotations[AnnotationTemplateLabels] = strings.Join(record, ",")
		}
		child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: maps.Clone(have), Annotations: maps.Clone(annotations)}}
		probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Labels: template}}
		update := inPlacer(probe, "rev")

		out := update(child, stamp)
		if !maps.Equal(child.Labels, have) || !maps.Equal(child.Annotations, annotations) {
			t.Fatalf("the input changed: labels %v, annotations %v", child.Labels, child.Annotations)
		}
		got, gotRecord := have, recordedKeys(annotations[AnnotationTemplateLabels])
		if out != nil {
			got, gotRecord = out.GetLabels(), recordedKeys(out.GetAnnotations()[AnnotationTemplateLabels])
			if out.GetAnnotations()["other"] != "x" {
				t.Fatalf("an annotation of someone else's went: %v", out.GetAnnotations())
			}
		}
		for k, v := range template {
			if k != RevisionLabel && got[k] != v {
				t.Fatalf("label %s=%q, want the template's %q (labels %v)", k, got[k], v, got)
			}
		}
		for k, v := range have {
			_, inTemplate := template[k]
			ours := recordable(k) && slices.Contains(record, k)
			switch {
			case k == RevisionLabel && got[k] != v:
				t.Fatalf("the revision label changed from %q to %q", v, got[k])
			case inTemplate:
			case ours:
				if _, still := got[k]; still {
					t.Fatalf("label %s, recorded as the template's and dropped by it, stayed: %v", k, got)
				}
			case got[k] != v:
				t.Fatalf("label %s=%q, not the binding's, became %q", k, v, got[k])
			}
		}
		if _, had := have[RevisionLabel]; !had {
			if v, stamped := got[RevisionLabel]; stamped != stamp || stamped && v != "rev" {
				t.Fatalf("stamp %v: revision label %q, present %v", stamp, v, stamped)
			}
		}
		for _, k := range gotRecord {
			if _, ok := template[k]; !ok || !recordable(k) {
				t.Fatalf("record %v holds %s, not a recordable label of the template %v", gotRecord, k, template)
			}
		}
		for k, v := range template {
			wrote := have[k] != v
			kept := slices.Contains(record, k)
			if recordable(k) && (wrote || kept) && !slices.Contains(gotRecord, k) {
				t.Fatalf("record %v lacks %s (written %v, recorded before %v)", gotRecord, k, wrote, kept)
			}
		}
		if out != nil && !slices.IsSorted(gotRecord) {
			t.Fatalf("the record written, %v, is not sorted", gotRecord)
		}
		if out != nil {
			if again := update(out, stamp); again != nil {
				t.Fatalf("a second update changed %v", cmp.Diff(out, again))
			}
		}
	})
}

// TestStampNew: a new child records its template's labels, but the two
// the binding keeps itself, and carries the revision; without one
// (rollouts off) it is left as it was.
func TestStampNew(t *testing.T) {
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"tier": "a", "app": "b", ZoneLabel: "z"}}}
	keys := templateKeys(child.Labels)
	stampNew(child, keys, "rev")
	want := map[string]string{"tier": "a", "app": "b", ZoneLabel: "z", RevisionLabel: "rev"}
	if diff := cmp.Diff(want, child.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if got := child.Annotations[AnnotationTemplateLabels]; got != "app,tier" {
		t.Errorf("record %q, want %q", got, "app,tier")
	}
	plain := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "b"}}}
	stampNew(plain, templateKeys(plain.Labels), "")
	if len(plain.Labels) != 1 || plain.Annotations != nil {
		t.Errorf("without rollouts: labels %v, annotations %v", plain.Labels, plain.Annotations)
	}
}
