package replicaset_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/internal/replicagen"
	"github.com/replicakit/replicakit/replicaset"
)

// notReady returns rs with every replica running but not ready: a guest
// agent late, a network blip, as the operator sees it.
func notReady(rs []replicaset.Replica) []replicaset.Replica {
	for i := range rs {
		rs[i].Ready = false
	}
	return rs
}

// TestCompute_OldNotAvailableMayServe replays Cluster API's rolling-update
// case (3 desired, 1 surge, none unavailable; the new replica not ready,
// the 3 old ones not ready): Cluster API deletes none, and neither may
// Compute, since an old replica not seen available may still serve.
func TestCompute_OldNotAvailableMayServe(t *testing.T) {
	set := append(notReady(on("a", "A", 3)), notReady(on("b", "B", 1))...)
	spec := replicaset.Spec{Desired: 3, Revision: "B"}
	p, err := checkedCompute(t, spec, set, deletionpolicy.HighestOrdinal{}, replicagen.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Delete) != 0 || p.Create != 0 {
		t.Fatalf("plan %v: want nothing deleted or created while no replica on B is available", p)
	}
	// Once the new replica is available, one old replica may go: four
	// may serve, three must.
	set[3].Ready = true
	p, err = checkedCompute(t, spec, set, deletionpolicy.HighestOrdinal{}, replicagen.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Delete) != 1 {
		t.Fatalf("plan %v: want one replica on A deleted once the one on B is available", p)
	}
	// A broken old replica (failed) does not serve: it goes at once.
	set[3].Ready = false
	set[0].Phase = replicaset.PhaseFailed
	p, err = checkedCompute(t, spec, set, deletionpolicy.HighestOrdinal{}, replicagen.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := names(p.Delete); !gocmp.Equal(got, []string{"a-0"}) {
		t.Fatalf("plan %v: want only the failed a-0 deleted", p)
	}
}

// TestCompute_ZoneByZoneScaleDown: the surge replica up in b while zone a
// still has replicas on A to replace. The pass scales the surge excess
// down in a, the zone being updated, never in b, whose replicas the same
// plan's hold says wait for a.
func TestCompute_ZoneByZoneScaleDown(t *testing.T) {
	set := append(zoned(on("a", "A", 8), "a", "a", "b", "b", "b", "c", "c", "c"),
		zoned(on("b", "B", 2), "a", "b")...)
	spec := replicaset.Spec{Desired: 9, Revision: "B", Zones: []string{"a", "b", "c"},
		Strategy: replicaset.Strategy{ZoneByZone: true}}
	p, err := checkedCompute(t, spec, set, deletionpolicy.HighestOrdinal{}, replicagen.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range p.Delete {
		if v.Zone != "a" {
			t.Errorf("%s in zone %s is deleted while zone a is updated: %v", v.Name, v.Zone, p)
		}
	}
	if len(p.Delete) != 1 {
		t.Errorf("plan %v: want one replica on A in zone a deleted", p)
	}
}

// TestCompute_ZoneByZoneSurgeInUpdateZone: a ZoneByZone rollout makes its
// surge replica in the zone it updates, so that every zone keeps its
// replicas' count: here in a, which has one replica on A left, not in
// b or c, which have none on B yet.
func TestCompute_ZoneByZoneSurgeInUpdateZone(t *testing.T) {
	set := append(zoned(on("a", "A", 7), "a", "b", "b", "b", "c", "c", "c"),
		zoned(on("b", "B", 2), "a", "a")...)
	spec := replicaset.Spec{Desired: 9, Revision: "B", Zones: []string{"a", "b", "c"},
		Strategy: replicaset.Strategy{ZoneByZone: true}}
	p, err := checkedCompute(t, spec, set, deletionpolicy.HighestOrdinal{}, replicagen.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !gocmp.Equal(p.CreateZones, []string{"a"}) {
		t.Errorf("plan %v: want the surge create in zone a", p)
	}
}

// TestLimits_UnavailableAtMostDesired: MaxUnavailable resolves to no more
// than Desired, as the Deployment controller and Cluster API cap it.
func TestLimits_UnavailableAtMostDesired(t *testing.T) {
	s := replicaset.Strategy{MaxUnavailable: replicaset.Count(10)}
	if got := s.Limits(5).Unavailable; got != 5 {
		t.Errorf("Limits(5).Unavailable = %d for MaxUnavailable 10, want 5", got)
	}
}

// TestSpec_ValidateBothZero: MaxSurge and MaxUnavailable both set to zero
// leave a rollout no way to replace a replica; the Deployment rejects
// them, and so does Validate, naming both fields.
func TestSpec_ValidateBothZero(t *testing.T) {
	for _, s := range []replicaset.Strategy{
		{MaxSurge: replicaset.Count(0), MaxUnavailable: replicaset.Count(0)},
		{MaxSurge: replicaset.Percent(0), MaxUnavailable: replicaset.Count(0)},
		{MaxSurge: replicaset.Count(0), MaxUnavailable: replicaset.Percent(0)},
	} {
		err := replicaset.Spec{Desired: 3, Revision: "B", Strategy: s}.Validate()
		if !errors.Is(err, replicaset.ErrInvalidSpec) || !strings.Contains(err.Error(), "MaxSurge") || !strings.Contains(err.Error(), "MaxUnavailable") {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidSpec naming MaxSurge and MaxUnavailable", s, err)
		}
	}
	// Zero by rounding is not an error: Unavailable becomes 1.
	ok := replicaset.Strategy{MaxSurge: replicaset.Count(0), MaxUnavailable: replicaset.Percent(25)}
	if err := (replicaset.Spec{Desired: 3, Revision: "B", Strategy: ok}).Validate(); err != nil {
		t.Errorf("Validate(%+v) = %v, want nil", ok, err)
	}
	if got := ok.Limits(3).Unavailable; got != 1 {
		t.Errorf("Limits(3).Unavailable = %d for 0 surge and 25%% of 3, want 1", got)
	}
}

// TestCompute_RebalanceWaitsOnBackoffSaysSo: with Rebalance, zones a=1
// b=3 and a backing off, nothing moves, and Plan.Unbalanced says it is the
// backoff, not that rebalancing is under way.
func TestCompute_RebalanceWaitsOnBackoffSaysSo(t *testing.T) {
	spec := replicaset.Spec{Desired: 4, Zones: []string{"a", "b"}, Rebalance: true,
		History: replicaset.History{ZoneBackoff: []replicaset.ZoneBackoff{{Zone: "a", Until: replicagen.Now().Add(time.Minute)}}}}
	set := zoned(on("w", "", 4), "a", "b", "b", "b")
	p, err := checkedCompute(t, spec, set, deletionpolicy.HighestOrdinal{}, replicagen.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !p.IsZero() || !strings.Contains(p.Unbalanced, "backing off") {
		t.Errorf("plan %v: want nothing done and Unbalanced naming the backoff", p)
	}
}

// TestCompute_NoSurgeForProtectedOld: a set without zones whose only
// replica on an older revision is protected has nothing left to replace,
// so it makes no surge replica for it. One made would be the excess of
// the next pass's scale-down, which takes a replica on the wanted
// revision (the protected one stays), and the pass after would make it
// again: a create and a delete on every other pass, for ever. With zones
// the picker counts no protected replica (surgeRoom); without, it did.
func TestCompute_NoSurgeForProtectedOld(t *testing.T) {
	set := append(on("b", "B", 1), on("a", "A", 1)...)
	set[1].Protected = true
	spec := replicaset.Spec{Desired: 2, Revision: "B"}
	p, err := replicaset.Compute(spec, set, deletionpolicy.HighestOrdinal{}, replicagen.Now())
	if err != nil {
		t.Fatal(err)
	}
	if p.Create != 0 || len(p.Delete) != 0 {
		t.Fatalf("plan %v: want no surge replica for a-0, protected, which is never replaced", p)
	}
}

// TestCompute_NoSurgeForProtectedOldOverPasses: the surge for the one
// unprotected replica on an older revision counts the new replica already
// coming up for it, pass after pass, as the zoned picker does: a set of 3
// on A, two of them protected, with MaxSurge 3 makes one new replica, not
// one on each pass until MaxSurge is spent (which the next scale-down
// would delete again).
func TestCompute_NoSurgeForProtectedOldOverPasses(t *testing.T) {
	set := on("a", "A", 3)
	set[0].Protected, set[1].Protected = true, true
	spec := replicaset.Spec{Desired: 3, Revision: "B", Strategy: replicaset.Strategy{
		MaxSurge: replicaset.Count(3), MaxUnavailable: replicaset.Count(0)}}
	p, err := replicaset.Compute(spec, set, deletionpolicy.HighestOrdinal{}, replicagen.Now())
	if err != nil {
		t.Fatal(err)
	}
	if p.Create != 1 {
		t.Fatalf("first pass %v: want one surge replica, for a-2", p)
	}
	set = append(set, pending(on("b", "B", 1)[0]))
	p, err = replicaset.Compute(spec, set, deletionpolicy.HighestOrdinal{}, replicagen.Now())
	if err != nil {
		t.Fatal(err)
	}
	if p.Create != 0 {
		t.Fatalf("second pass %v: b-0 is coming up for a-2, the only replica left to replace; want no create", p)
	}
}

// TestCompute_CyclingIsNoReplacement: a replica power-cycling onto the
// wanted revision is one of the replicas it replaces, not a replacement
// coming up for another, with zones as without: a set of 2 on A, one
// cycling in place and one that cannot be updated in place, makes the
// surge replica for the second in both. The zoned picker counted the
// cycling replica as coming up and made none until the cycle ended.
func TestCompute_CyclingIsNoReplacement(t *testing.T) {
	for _, zones := range [][]string{nil, {"z1"}} {
		set := on("a", "A", 2)
		for i := range set {
			set[i].Zone = "z1"
		}
		set[0].InPlace = replicaset.InPlacePowerCycle
		set[0].Preparing = &replicaset.Preparing{Since: replicagen.Now(), Update: true}
		set[1].InPlace = replicaset.InPlaceNone
		spec := replicaset.Spec{Desired: 2, Revision: "B", Zones: zones, Lifecycle: &replicaset.Lifecycle{},
			Strategy: replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible,
				MaxSurge: replicaset.Count(1), MaxUnavailable: replicaset.Count(1)}}
		p, err := replicaset.Compute(spec, set, deletionpolicy.HighestOrdinal{}, replicagen.Now())
		if err != nil {
			t.Fatal(err)
		}
		if p.Create != 1 {
			t.Errorf("zones %v: plan %v: want the surge replica for a-1 (a-0 cycling is no replacement for it)", zones, p)
		}
	}
}

// TestCompute_NoRevisionIsNoReplacement: a replica that records no
// revision while the spec names one (adopted) counts as on the wanted
// revision, but it was not made for the rollout: when it is not
// available it is no surge replica coming up for the replicas left to
// replace, with zones as without.
func TestCompute_NoRevisionIsNoReplacement(t *testing.T) {
	for _, zones := range [][]string{nil, {"z1"}} {
		set := append(on("a", "A", 1), pending(on("b", "", 1)[0]))
		for i := range set {
			set[i].Zone = "z1"
		}
		set[0].InPlace = replicaset.InPlaceNone
		spec := replicaset.Spec{Desired: 2, Revision: "B", Zones: zones,
			Strategy: replicaset.Strategy{MaxSurge: replicaset.Count(1), MaxUnavailable: replicaset.Count(0)}}
		p, err := checkedCompute(t, spec, set, deletionpolicy.HighestOrdinal{}, replicagen.Now())
		if err != nil {
			t.Fatal(err)
		}
		if p.Create != 1 {
			t.Errorf("zones %v: plan %v: want the surge replica for a-0 (b-0, adopted with no revision, is no replacement for it)", zones, p)
		}
	}
}
