package vmprovider_test

import (
	"testing"

	"github.com/replicakit/replicakit/vmprovider"
)

// TestTemplateRevision_LinkedClone: a linked clone is the same VM as a
// full one, stored differently; turning LinkedClone on is no rollout.
func TestTemplateRevision_LinkedClone(t *testing.T) {
	for _, base := range []vmprovider.Spec{{}, goldenSpec} {
		linked := base
		linked.LinkedClone = true
		if got, want := vmprovider.TemplateRevision(linked), vmprovider.TemplateRevision(base); got != want {
			t.Errorf("TemplateRevision(%+v with LinkedClone) = %s, want %s as without", base, got, want)
		}
	}
}
