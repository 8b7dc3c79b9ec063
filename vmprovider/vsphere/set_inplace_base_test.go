package vsphere_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
)

// TestSet_InPlaceRecordsBaseOnVCenter: VMs made before base revisions
// were recorded (web-0 on the Template's revision, web-1 with no revision
// at all) are given the Template's base revision in vCenter by the Set's
// first pass, web-1 its revision too; web-2, on an older revision, is
// left without one and replaced. A later change of memory then reaches
// web-0 and web-1 in place.
func TestSet_InPlaceRecordsBaseOnVCenter(t *testing.T) {
	_, p := start(t)
	ctx := context.Background()
	s := inPlaceSet(p, 512, replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible})
	rev, base := vmprovider.TemplateRevision(s.Template), vmprovider.BaseRevision(s.Template)
	older := s.Template
	older.CPUs = 2
	for name, revision := range map[string]string{"web-0": rev, "web-1": "", "web-2": vmprovider.TemplateRevision(older)} {
		spec := s.Template
		spec.Name, spec.Revision = name, revision
		if _, err := p.Create(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	before := fleet(t, p)
	plan, _, err := s.Scale(ctx, 3, time.Now())
	if err != nil || plan.Create != 1 || len(plan.Update) > 0 {
		t.Fatalf("first pass: %v, %v; want web-2 replaced by a surge VM", plan, err)
	}
	got := fleet(t, p)
	for _, name := range []string{"web-0", "web-1"} {
		want := before[name]
		want.Revision, want.BaseRevision = rev, base
		if diff := cmp.Diff(want, got[name]); diff != "" {
			t.Errorf("%s after the first pass (-want +got):\n%s", name, diff)
		}
	}
	if got["web-2"].BaseRevision != "" {
		t.Errorf("web-2, on an older revision, was given base revision %q", got["web-2"].BaseRevision)
	}
	for range 10 {
		if plan, _, err = s.Scale(ctx, 3, time.Now()); err != nil || plan.IsZero() {
			break
		}
	}
	got = fleet(t, p)
	if err != nil || len(got) != 3 || got["web-2"].UUID == before["web-2"].UUID {
		t.Fatalf("after the rollout: %+v, %v; want 3 VMs, web-2 replaced", got, err)
	}

	next := s.Template
	next.MemoryMiB = 1024
	s.SetTemplate(next)
	kept := got
	if plan, _, err = s.Scale(ctx, 3, time.Now()); err != nil || len(plan.Update) != 3 || plan.Create > 0 {
		t.Fatalf("1024 MiB: %v, %v; want all three changed in place", plan, err)
	}
	if diff := cmp.Diff(resized(kept, 1024, vmprovider.TemplateRevision(next)), fleet(t, p)); diff != "" {
		t.Errorf("VMs after 1024 MiB (-want +got):\n%s", diff)
	}
}
