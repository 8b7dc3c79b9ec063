package replicaset_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/replicaset"
)

// TestHistory_ZoneBackoffMatchesAModel: after any sequence of passes
// whose creates failed in some zones, at moving times, History.After
// lists exactly the zones whose latest failure is less than the backoff
// ago, by name, each until that failure plus the backoff; and
// CreatesFailing says whether the last pass's creates fell short.
func TestHistory_ZoneBackoffMatchesAModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var h replicaset.History
		model := map[string]time.Time{}
		start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
		now := start
		avoid := time.Duration(rapid.IntRange(0, 120).Draw(t, "avoid")) * time.Second
		d := avoid
		if d == 0 {
			d = replicaset.DefaultZoneBackoff
		}
		for i := range rapid.IntRange(0, 30).Draw(t, "steps") {
			now = now.Add(time.Duration(rapid.IntRange(0, 90).Draw(t, fmt.Sprint("wait ", i))) * time.Second)
			failed := rapid.SliceOf(rapid.SampledFrom([]string{"a", "b", "c"})).Draw(t, fmt.Sprint("failed ", i))
			p := replicaset.Plan{Create: rapid.IntRange(0, 3).Draw(t, fmt.Sprint("create ", i))}
			created := rapid.IntRange(0, p.Create).Draw(t, fmt.Sprint("created ", i))
			h = h.After(p, created, failed, avoid, now)
			for _, z := range failed {
				model[z] = now.Add(d)
			}
			var want []replicaset.ZoneBackoff
			for _, z := range []string{"a", "b", "c"} {
				if until, ok := model[z]; ok && now.Before(until) {
					want = append(want, replicaset.ZoneBackoff{Zone: z, Until: until})
				}
			}
			if diff := cmp.Diff(want, h.ZoneBackoff); diff != "" {
				t.Fatalf("at +%v, ZoneBackoff (-want +got):\n%s", now.Sub(start), diff)
			}
			if h.CreatesFailing != (created < p.Create) {
				t.Fatalf("created %d of %d: CreatesFailing %v", created, p.Create, h.CreatesFailing)
			}
		}
	})
}

// Keep a set's History between passes: a zone in which a create failed is
// avoided by the next passes until its backoff ends.
func ExampleHistory_After() {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	spec := replicaset.Spec{Desired: 3, Zones: []string{"zone-a", "zone-b", "zone-c"}}
	plan, _ := replicaset.Compute(spec, nil, deletionpolicy.Oldest{}, now)
	// Carry the plan out (execute.Plan, say): the create in zone-b failed.
	spec.History = spec.History.After(plan, 2, []string{"zone-b"}, 0, now)

	later := now.Add(time.Second)
	plan, _ = replicaset.Compute(spec, nil, deletionpolicy.Oldest{}, later)
	fmt.Println(plan.CreateZones, spec.History.ZoneBackoff[0].Until.Sub(now))
	spec.History = spec.History.After(plan, 3, nil, 0, now.Add(2*time.Minute))
	fmt.Println(len(spec.History.ZoneBackoff), spec.History.CreatesFailing)
	// Output:
	// [zone-a zone-c zone-a] 1m0s
	// 0 false
}
