package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"pgregory.net/rapid"
)

// TestRevisionOf: the revision is a valid label value, depends on the
// child's spec and data, and not on its metadata.
func TestRevisionOf(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		data := rapid.MapOf(rapid.StringMatching(`[a-z]{1,5}`), rapid.String()).Draw(t, "data")
		meta := metav1.ObjectMeta{
			Name:        rapid.StringMatching(`[a-z]{0,8}`).Draw(t, "name"),
			Labels:      rapid.MapOf(rapid.StringMatching(`[a-z]{1,5}`), rapid.StringMatching(`[a-z]{0,5}`)).Draw(t, "labels"),
			Annotations: rapid.MapOf(rapid.StringMatching(`[a-z]{1,5}`), rapid.String()).Draw(t, "annotations"),
		}
		a, err := revisionOf(&corev1.ConfigMap{ObjectMeta: meta, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		if errs := validation.IsValidLabelValue(a); len(errs) > 0 || len(a) != 10 {
			t.Fatalf("revision %q is not a ten-character label value: %v", a, errs)
		}
		b, err := revisionOf(&corev1.ConfigMap{Data: data})
		if err != nil || a != b {
			t.Fatalf("metadata changed the revision: %q, %q (%v)", a, b, err)
		}
		changed := map[string]string{"extra-key-not-drawn": "x"}
		for k, v := range data {
			changed[k] = v
		}
		c, err := revisionOf(&corev1.ConfigMap{Data: changed})
		if err != nil || c == a {
			t.Fatalf("different data, same revision %q (%v)", c, err)
		}
	})
}

// TestInPlace: a child gets the template's labels and annotations and,
// when it has none, the revision label; nothing else changes, labels the
// template does not have stay, and a child already in line is left alone.
func TestInPlace(t *testing.T) {
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Labels:      map[string]string{"app": "web", "tier": "front", RevisionLabel: "ignored"},
		Annotations: map[string]string{"note": "hi"},
	}}
	old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-1",
		Labels: map[string]string{"app": "web", "mine": "kept"}}, Data: map[string]string{"k": "v"}}
	got := inPlace(old, probe, "rev1")
	if got == nil {
		t.Fatal("no change for a child without the template's labels")
	}
	cm := got.(*corev1.ConfigMap)
	want := map[string]string{"app": "web", "tier": "front", "mine": "kept", RevisionLabel: "rev1"}
	if len(cm.Labels) != len(want) {
		t.Fatalf("labels %v, want %v", cm.Labels, want)
	}
	for k, v := range want {
		if cm.Labels[k] != v {
			t.Fatalf("labels %v, want %v", cm.Labels, want)
		}
	}
	if cm.Annotations["note"] != "hi" || cm.Data["k"] != "v" || old.Labels["tier"] != "" {
		t.Fatalf("annotations %v, data %v, original labels %v", cm.Annotations, cm.Data, old.Labels)
	}
	if again := inPlace(cm, probe, "rev2"); again != nil {
		t.Fatalf("a child in line was changed again: %v", again.GetLabels())
	}
}
