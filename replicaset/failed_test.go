package replicaset_test

import (
	"cmp"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/internal/replicagen"
	"github.com/replicakit/replicakit/replicaset"
)

// TestReplaceFailed_AgainstNaive checks Spec.ReplaceFailed against the
// Zones section's rule, stated naively: the replicas failed in a listed,
// reachable zone (not being deleted, not protected) are replaced, the
// first MaxPerPass of them by name, while some listed reachable zone
// neither backs off nor holds one; otherwise they stay under a
// HoldZoneBackoff that counts them all. Beside that the plan is the one
// without ReplaceFailed for the set with the replaced replicas being
// deleted, with them deleted first within the per-pass cap; and the plan
// does not depend on the order of the replicas.
func TestReplaceFailed_AgainstNaive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spec := replicagen.Spec().Draw(t, "spec")
		if len(spec.Zones) == 0 {
			spec.Zones = replicagen.Zones().Draw(t, "zones")
		}
		for _, z := range spec.Zones {
			if rapid.IntRange(0, 4).Draw(t, "unreachable") == 0 {
				spec.Unreachable = append(spec.Unreachable, z)
			}
		}
		spec.ReplaceFailed = true
		rs := replicagen.Replicas(30).Draw(t, "replicas")
		_, policy := replicagen.Policy(t)
		now := replicagen.Now()
		p, err := checkedCompute(t, spec, rs, policy, now)
		if err != nil {
			t.Fatal(err)
		}

		reachable := func(z string) bool {
			return slices.Contains(spec.Zones, z) && !slices.Contains(spec.Unreachable, z)
		}
		var failed []replicaset.Replica
		sick := map[string]bool{}
		for _, r := range rs {
			if r.Phase == replicaset.PhaseFailed && !r.Deleting && !r.Protected && reachable(r.Zone) {
				failed = append(failed, r)
				sick[r.Zone] = true
			}
		}
		slices.SortFunc(failed, func(a, b replicaset.Replica) int { return cmp.Compare(a.Name, b.Name) })
		healthy := slices.ContainsFunc(spec.Zones, func(z string) bool {
			return reachable(z) && !sick[z] && !slices.ContainsFunc(spec.History.ZoneBackoff, func(b replicaset.ZoneBackoff) bool { return b.Zone == z && now.Before(b.Until) })
		})
		limit := cmp.Or(spec.MaxPerPass, replicaset.DefaultMaxPerPass)
		var want []replicaset.Replica
		if healthy {
			want = failed[:min(len(failed), limit)]
		}
		if diff := gocmp.Diff(names(want), names(p.Replace), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("replaced (-want +got):\n%s\nplan %v", diff, p)
		}
		stayed := slices.IndexFunc(p.Holds, func(h replicaset.Hold) bool {
			return h.By == replicaset.HoldZoneBackoff && h.Waiting == len(failed)
		})
		if stays := !healthy && len(failed) > 0; stays != (stayed >= 0) {
			t.Fatalf("failed replicas stay: %v, yet the plan holds them: %v (%v)", stays, stayed >= 0, p)
		}

		// The rest of the plan: as without ReplaceFailed, the replaced
		// being deleted.
		plain := spec
		plain.ReplaceFailed = false
		planned := slices.Clone(rs)
		for i := range planned {
			if slices.ContainsFunc(want, func(r replicaset.Replica) bool { return r.Name == planned[i].Name }) {
				planned[i].Deleting = true
			}
		}
		q, err := checkedCompute(t, plain, planned, policy, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) > 0 {
			q.Replace = want
			q.Deleting = slices.DeleteFunc(q.Deleting, func(r replicaset.Replica) bool {
				return slices.ContainsFunc(want, func(x replicaset.Replica) bool { return x.Name == r.Name })
			})
			if over := len(want) + len(q.Delete) - limit; over > 0 {
				// The replaced count toward the cap from the start, so
				// the zones' spread is that of the deletes left.
				q.Delete, q.Deferred, q.Unbalanced = q.Delete[:len(q.Delete)-over], q.Deferred+over, p.Unbalanced
			}
			q.Delete = append(slices.Clone(want), q.Delete...)
		}
		if stayed >= 0 {
			p.Holds = slices.Delete(p.Holds, stayed, stayed+1)
		}
		if diff := gocmp.Diff(q, p, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("plan beside the replacements (-want +got):\n%s", diff)
		}

		shuffled := rapid.Permutation(rs).Draw(t, "shuffled")
		again, err := checkedCompute(t, spec, shuffled, policy, now)
		if err != nil {
			t.Fatal(err)
		}
		if diff := gocmp.Diff(names(p.Replace), names(again.Replace), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("the replicas replaced depend on their order (-first +shuffled):\n%s", diff)
		}
	})
}

// TestHealing_FailedInZones: with Remediation, a replica failed in its
// zone is replaced at once (no window: it failed) while another zone is
// healthy, and stays, held by HoldZoneBackoff, while none is; the storm
// guard still counts it.
func TestHealing_FailedInZones(t *testing.T) {
	now := replicagen.Now()
	up := func(name, zone string) replicaset.Replica {
		return replicaset.Replica{Name: name, UID: name, Zone: zone, Phase: replicaset.PhaseRunning, Ready: true,
			Health: &replicaset.Health{Started: now.Add(-time.Hour), Healthy: true}}
	}
	failed := func(name, zone string) replicaset.Replica {
		return replicaset.Replica{Name: name, UID: name, Zone: zone, Phase: replicaset.PhaseFailed}
	}
	spec := replicaset.Spec{Desired: 6, Zones: []string{"a", "b"}, Remediation: &replicaset.Remediation{}}
	for _, tt := range []struct {
		name    string
		set     []replicaset.Replica
		replace []string
		hold    replicaset.HoldKind
	}{
		{"another zone healthy", []replicaset.Replica{failed("a1", "a"), up("a2", "a"), up("a3", "a"), up("b1", "b"), up("b2", "b"), up("b3", "b")}, []string{"a1"}, 0},
		{"every zone holds a failed replica", []replicaset.Replica{failed("a1", "a"), up("a2", "a"), up("a3", "a"), failed("b1", "b"), up("b2", "b"), up("b3", "b")}, nil, replicaset.HoldZoneBackoff},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := checkedCompute(t, spec, tt.set, deletionpolicy.Random{}, now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := gocmp.Diff(tt.replace, names(p.Replace), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("replaced (-want +got):\n%s\n%v", diff, p)
			}
			if held := slices.ContainsFunc(p.Holds, func(h replicaset.Hold) bool { return h.By == replicaset.HoldZoneBackoff }); held != (tt.hold != 0) {
				t.Errorf("held by History: replicaset.History{ZoneBackoff: %v}, want %v: %v", held, tt.hold != 0, p)
			}
			nfailed := 0
			for _, r := range tt.set {
				if r.Phase == replicaset.PhaseFailed {
					nfailed++
				}
			}
			if p.Health.Unhealthy != nfailed {
				t.Errorf("%d unhealthy, want the failed ones, %d", p.Health.Unhealthy, nfailed)
			}
		})
	}
}
