package replicaset

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestQueue_MatchesASort: a queue pops its victims in the order of a full
// sort under compareVictims, for sets large enough to take the radix path
// (buckets over smallBucket), with ranks from a few values (long runs of
// equal keys, decided by identity) to full 64-bit ones, in one or several
// columns, in one tier or several, read in part or whole.
func TestQueue_MatchesASort(t *testing.T) {
	w := new(scratch)
	rapid.Check(t, func(t *rapid.T) {
		size := rapid.IntRange(1, 400).Draw(t, "size")
		spread := rapid.SampledFrom([]int64{1, 3, 1000, 1 << 62}).Draw(t, "spread")
		columns := rapid.IntRange(1, len(Rank{})).Draw(t, "columns")
		replicas := make([]Replica, size)
		vs := make([]victim, size)
		for i := range vs {
			replicas[i] = Replica{Name: fmt.Sprintf("r-%03d", rapid.IntRange(0, 999).Draw(t, "name")), UID: fmt.Sprint(i)}
			var rank Rank
			for c := range columns {
				rank[c] = rapid.Int64Range(-spread, spread).Draw(t, "rank")
			}
			vs[i] = victim{tier: uint8(rapid.IntRange(0, tiers-1).Draw(t, "tier") % 3), rank: rank, r: &replicas[i]}
		}
		n := rapid.IntRange(0, size).Draw(t, "n")
		hint := rapid.IntRange(0, size).Draw(t, "hint")
		want := slices.Clone(vs)
		slices.SortFunc(want, compareVictims)
		// w reused dirty: the queue must not rely on cleared memory.
		q := queue{vs: vs, idx: make([]int32, len(vs))}
		for i := range n {
			j := q.pop(hint, w)
			if got := vs[j].r; got.Name != want[i].r.Name || got.UID != want[i].r.UID {
				t.Fatalf("position %d of %d: %s/%s, want %s/%s", i, n, got.Name, got.UID, want[i].r.Name, want[i].r.UID)
			}
		}
	})
}

// TestScratch_ResetDropsReplicas: a scratch as it goes back to the pool
// points into no caller's replicas, after a large call and after a smaller
// one that reused it.
func TestScratch_ResetDropsReplicas(t *testing.T) {
	w := new(scratch)
	for _, n := range []int{300, 40} {
		rs := make([]Replica, n)
		for i := range rs {
			rs[i] = Replica{Name: fmt.Sprintf("r%d", i), CreatedAt: time.Unix(int64(i*7%n), 0), Zone: []string{"a", "b", "c"}[i%3], Phase: PhaseRunning, Ready: i%5 > 0}
		}
		ps := newPass(&Spec{Desired: n / 2, Zones: []string{"a", "b"}}, rs, rankByCreation{}, time.Time{}, w)
		ps.scale()
		if len(ps.chosen) != n/2 {
			t.Fatalf("chose %d of %d, want %d", len(ps.chosen), n, n/2)
		}
		w.reset()
		for k := range w.victim {
			for i, v := range w.victim[k][:cap(w.victim[k])] {
				if v.r != nil {
					t.Fatalf("after a call with %d replicas, victim %d of buffer %d still points to %s", n, i, k, v.r.Name)
				}
			}
		}
	}
}

type rankByCreation struct{}

func (rankByCreation) Rank(r Replica, _ Env) Rank { return Rank{r.CreatedAt.Unix()} }

// TestZoneIndex_MatchesAScan: looking a zone up by its key finds what a
// scan of the listed zones finds, for lists whose zones share keys (names
// from a small alphabet, of a few lengths) and for lists that hold a zone
// with a key of its own after 127 or more zones that share one (at index
// 255 it would read as no zone if its index wrapped to -1 in the table),
// asking for listed zones, unlisted ones and the empty zone.
func TestZoneIndex_MatchesAScan(t *testing.T) {
	name := rapid.StringMatching(`[ab0]{1,4}`)
	sameKey := []string{"zone-a"} // 300 zones that share a key
	for i := int64(0); len(sameKey) < 300 && i < 1<<20; i++ {
		if z := strconv.FormatInt(i, 36); zoneKey(z) == zoneKey(sameKey[0]) {
			sameKey = append(sameKey, z)
		}
	}
	if len(sameKey) < 300 {
		t.Fatalf("found %d zone names that share zone-a's key, want 300", len(sameKey))
	}
	rapid.Check(t, func(t *rapid.T) {
		var zones []string
		if rapid.Bool().Draw(t, "many") {
			zones = slices.Clone(sameKey[:rapid.SampledFrom([]int{127, 128, 255, 256, 300}).Draw(t, "sharing")])
			for i := range rapid.IntRange(1, 3).Draw(t, "own") {
				zones = append(zones, []string{"last", "more", "again"}[i])
			}
		} else {
			zones = rapid.SliceOfNDistinct(name, 1, 12, rapid.ID).Draw(t, "zones")
		}
		var byKey [256]int8
		zoneIndex(&byKey, zones)
		asked := append(slices.Clone(zones), "", "z200", rapid.StringMatching(`[ab0z1-9]{0,4}`).Draw(t, "other"))
		for _, zone := range asked {
			if got, want := zoneIndexOf(&byKey, zones, zone), slices.Index(zones, zone); got != want {
				t.Fatalf("index(%q) = %d, want %d in %q", zone, got, want, zones)
			}
		}
	})
}

// compareVictims orders candidates by tier, then policy rank, then
// identity: the order sortFirst sorts by, as a comparison.
func compareVictims(a, b victim) int {
	if c := cmp.Compare(a.tier, b.tier); c != 0 {
		return c
	}
	if c := a.rank.Compare(b.rank); c != 0 {
		return c
	}
	return compareIdentity(a.r, b.r)
}
