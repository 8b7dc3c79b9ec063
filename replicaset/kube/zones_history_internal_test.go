package kube

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/execute"
)

// TestZonesAfter_History: the zones' part of an owner's History changes
// through replicaset.History.After alone. A pass whose creates in b fail
// backs b off and leaves CreatesFailing, which the next pass's planner
// reads (before, the binding kept the backoff but never CreatesFailing); a
// member first seen failing in c backs c off in the pass that sees it; a
// pass that creates nothing clears CreatesFailing, and a held pass keeps
// the zones still backing off.
func TestZonesAfter_History(t *testing.T) {
	o := observed(3, nil, zoned("a", "b", "c"))
	d := decide(o, ordinal)
	out := zoneFails("b", errors.New("zone b is full"))(d)
	v := settle(o, d, out)
	want := replicaset.History{ZoneBackoff: []replicaset.ZoneBackoff{{Zone: "b", Until: testNow.Add(replicaset.DefaultZoneBackoff)}}, CreatesFailing: true}
	if diff := cmp.Diff(want, v.zones); diff != "" {
		t.Fatalf("after creates failing in b (-want +got):\n%s", diff)
	}
	var tb zoneBackoffs
	tb.record(o.key, v.zones)
	if got := tb.history(o.key); !cmp.Equal(want, got) {
		t.Fatalf("recorded %+v, want %+v", got, want)
	}

	next := observed(3, kids(kid("web-0", inZone("a")), kid("web-2", inZone("c"), failed)), zoned("a", "b", "c"),
		func(n *observation) { n.zones, n.now = tb.history(o.key), testNow.Add(time.Second) })
	if s := planSpec(next, ordinal); !s.History.CreatesFailing {
		t.Fatal("the next pass's planner does not hear that creates are failing")
	}
	d = decide(next, ordinal)
	if got := d.failedZones; !cmp.Equal(got, []string{"c"}) {
		t.Fatalf("failed zones %v, want [c]", got)
	}
	v = settle(next, d, outcome{ran: true, acted: okActed(d)})
	want = replicaset.History{ZoneBackoff: []replicaset.ZoneBackoff{
		{Zone: "b", Until: testNow.Add(replicaset.DefaultZoneBackoff)},
		{Zone: "c", Until: next.now.Add(replicaset.DefaultZoneBackoff)},
	}}
	if diff := cmp.Diff(want, v.zones); diff != "" {
		t.Fatalf("after a member failed in c, its replacement made (-want +got):\n%s", diff)
	}

	held := observed(3, nil, zoned("a", "b", "c"), func(n *observation) {
		n.zones, n.now, n.spec.Paused = want, testNow.Add(60*time.Second+500*time.Millisecond), true
	})
	d = decide(held, ordinal)
	v = settle(held, d, outcome{})
	want = replicaset.History{ZoneBackoff: want.ZoneBackoff[1:]} // b's time is up
	if diff := cmp.Diff(want, v.zones); diff != "" {
		t.Fatalf("a paused pass (-want +got):\n%s", diff)
	}
}

// okActed is the executor's result when every create and delete of d
// succeeded.
func okActed(d decision) (res execute.Result) {
	res.Created = d.create
	for _, r := range d.delete {
		res.Deleted = append(res.Deleted, r.Name)
	}
	return res
}
