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

// TestBackoff_MatchesAModel: after any sequence of failures and reads at
// moving times, Active lists exactly the zones whose latest failure's
// until is after now, by name.
func TestBackoff_MatchesAModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var b replicaset.Backoff
		model := map[string]time.Time{}
		start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
		now := start
		for i := range rapid.IntRange(0, 30).Draw(t, "steps") {
			now = now.Add(time.Duration(rapid.IntRange(0, 90).Draw(t, fmt.Sprint("wait ", i))) * time.Second)
			if rapid.Bool().Draw(t, fmt.Sprint("fail ", i)) {
				zones := rapid.SliceOfDistinct(rapid.SampledFrom([]string{"a", "b", "c"}), rapid.ID).Draw(t, fmt.Sprint("zones ", i))
				until := now.Add(time.Duration(rapid.IntRange(0, 120).Draw(t, fmt.Sprint("for ", i))) * time.Second)
				b.Fail(zones, until)
				for _, z := range zones {
					model[z] = until
				}
				continue
			}
			var want []replicaset.ZoneBackoff
			for _, z := range []string{"a", "b", "c"} {
				if until, ok := model[z]; ok && now.Before(until) {
					want = append(want, replicaset.ZoneBackoff{Zone: z, Until: until})
				}
			}
			if diff := cmp.Diff(want, b.Active(now)); diff != "" {
				t.Fatalf("at +%v, Active (-want +got):\n%s", now.Sub(start), diff)
			}
		}
	})
}

// Keep a set's zone backoff between passes: what failed in one pass is
// avoided by the next ones until its backoff ends.
func ExampleBackoff() {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var backoff replicaset.Backoff
	backoff.Fail([]string{"zone-b"}, now.Add(replicaset.DefaultZoneBackoff)) // execute.Result.FailedZones
	spec := replicaset.Spec{Desired: 3, Zones: []string{"zone-a", "zone-b", "zone-c"}, ZoneBackoff: backoff.Active(now.Add(time.Second))}
	plan, _ := replicaset.Compute(spec, nil, deletionpolicy.Oldest{}, now.Add(time.Second))
	fmt.Println(plan.CreateZones, len(backoff.Active(now.Add(2*time.Minute))))
	// Output: [zone-a zone-c zone-a] 0
}
