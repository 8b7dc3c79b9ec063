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

// TestTemplateRevision_LinkedCloneSnapshot: naming the snapshot linked
// clones link to changes the revision and the base revision (other disks),
// and only for linked clones; naming none leaves them as they were.
func TestTemplateRevision_LinkedCloneSnapshot(t *testing.T) {
	for _, base := range []vmprovider.Spec{{}, goldenSpec} {
		named := base
		named.LinkedCloneSnapshot = "golden"
		if vmprovider.TemplateRevision(named) != vmprovider.TemplateRevision(base) ||
			vmprovider.BaseRevision(named) != vmprovider.BaseRevision(base) {
			t.Errorf("a snapshot named for full clones changed the revisions of %+v", base)
		}
		linked := base
		linked.LinkedClone = true
		named.LinkedClone = true
		if vmprovider.TemplateRevision(named) == vmprovider.TemplateRevision(linked) ||
			vmprovider.BaseRevision(named) == vmprovider.BaseRevision(linked) {
			t.Errorf("naming the snapshot of linked clones left the revisions of %+v as they were", base)
		}
	}
}
