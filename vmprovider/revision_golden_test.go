package vmprovider_test

import (
	"testing"

	"github.com/replicakit/replicakit/vmprovider"
)

// goldenSpec shapes a VM with every field TemplateRevision reads set.
var goldenSpec = vmprovider.Spec{Template: "ubuntu-24.04", CPUs: 2, MemoryMiB: 2048, PowerOn: true, Networks: []string{"VM Network"},
	CloudInit: &vmprovider.CloudInit{UserData: "#cloud-config\n", MetaData: "local-hostname: web\n"},
	Placement: vmprovider.Placement{ResourcePool: "/DC0/host/DC0_C1", Datastore: "LocalDS_0"}}

// TestTemplateRevision_Golden pins the revisions of two specs as the
// releases before Spec.LinkedClone computed them: a Set with a Rollout
// replaces every VM whose recorded revision differs from its Template's,
// so a revision that changes for a spec that did not would replace every
// VM of every such Set on upgrade. A new Spec field that is not part of
// the revision leaves these alone; one that is must not change them when
// it is zero.
func TestTemplateRevision_Golden(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec vmprovider.Spec
		want string
	}{
		{"zero", vmprovider.Spec{}, "5hf7dfcwmp"},
		{"every field", goldenSpec, "sxntwcf4qq"},
	} {
		if got := vmprovider.TemplateRevision(tc.spec); got != tc.want {
			t.Errorf("TemplateRevision(%s) = %s, want %s as before", tc.name, got, tc.want)
		}
	}
}

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
