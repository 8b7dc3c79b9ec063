package replicaset_test

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/internal/replicagen"
	"github.com/replicakit/replicakit/replicaset"
)

// manyReplicas draws between min and max replicas with every field drawn
// and names and UIDs distinct by construction, so that sets are large
// enough for the radix sort to recurse and for a zone to hold more
// candidates than a bucket that is insertion sorted.
func manyReplicas(t *rapid.T, label string, min, max int) []replicaset.Replica {
	rs := rapid.SliceOfN(replicagen.Replica(), min, max).Draw(t, label)
	for i := range rs {
		rs[i].Name, rs[i].UID = fmt.Sprintf("%s-%d", label, i), fmt.Sprintf("uid-%s-%d", label, i)
		if rs[i].HasOrdinal {
			rs[i].Ordinal = i
		}
	}
	return rs
}

// TestCompute_ManyAgainstNaive: plans of tens to hundreds of replicas, each
// computed right after a plan of another size (so that Compute reuses its
// pooled scratch memory dirty), agree with the naive reference.
func TestCompute_ManyAgainstNaive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		now := replicagen.Now()
		other := manyReplicas(t, "other", 0, 400)
		spec := replicagen.Spec().Draw(t, "spec")
		rs := manyReplicas(t, "r", 30, 300)
		spec.Desired = rapid.IntRange(0, len(rs)+10).Draw(t, "desired")
		spec.MaxPerPass = rapid.SampledFrom([]int{0, 3, 40}).Draw(t, "maxPerPass")
		_, policy := replicagen.Policy(t)

		if _, err := checkedCompute(t, replicaset.Spec{Desired: len(other) / 3, Zones: spec.Zones}, other, policy, now); err != nil {
			t.Fatalf("Compute of the other set: %v", err)
		}
		p, err := checkedCompute(t, spec, rs, policy, now)
		if err != nil {
			t.Fatalf("Compute: %v", err)
		}
		naive := naiveCompute(spec, rs, policy, now)
		naive.Unbalanced, p.Unbalanced = "", "" // checked by the zone properties
		if diff := gocmp.Diff(naive, p, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(replicaset.Shortfall{}, "Reason")); diff != "" {
			t.Fatalf("Compute disagrees with the naive reference (-naive +Compute):\n%s", diff)
		}
	})
}

// TestCompute_ConcurrentPlansAreTheirOwn: Compute called from many
// goroutines at once, on sets large and small, zoned and not, gives each
// caller the plan a lone call gives, and a plan does not change when later
// calls reuse Compute's scratch memory.
func TestCompute_ConcurrentPlansAreTheirOwn(t *testing.T) {
	now := replicagen.Now()
	type input struct {
		spec replicaset.Spec
		rs   []replicaset.Replica
	}
	var inputs []input
	for i, n := range []int{5, 3000, 40, 8000, 1, 700} {
		rs := make([]replicaset.Replica, n)
		for j := range rs {
			rs[j] = replicaset.Replica{Name: fmt.Sprintf("s%d-%d", i, j), UID: fmt.Sprintf("u%d-%d", i, j),
				Zone: []string{"a", "b", "c"}[j%3], CreatedAt: now.Add(-time.Duration(j*7%n) * time.Second),
				Phase: replicaset.PhaseRunning, Ready: true, MarkedForDeletion: j%11 == 0, Protected: j%13 == 0}
		}
		spec := replicaset.Spec{Desired: n / 3, MaxPerPass: n}
		if i%2 == 1 {
			spec.Zones = []string{"a", "b", "c"}
		}
		inputs = append(inputs, input{spec, rs})
	}
	policy := deletionpolicy.Random{Seed: 3}
	want := make([]replicaset.Plan, len(inputs))
	for i, in := range inputs {
		p, err := checkedCompute(t, in.spec, in.rs, policy, now)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = p
	}

	const workers = 8
	got := make([][]replicaset.Plan, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for k := range 3 * len(inputs) {
				i := (k + w) % len(inputs)
				p, err := checkedCompute(t, inputs[i].spec, inputs[i].rs, policy, now)
				if err != nil {
					t.Error(err)
					return
				}
				got[w] = append(got[w], p)
			}
		})
	}
	wg.Wait()
	for w := range workers {
		for k, p := range got[w] { // compared after every call has finished
			i := (k + w) % len(inputs)
			if reflect.DeepEqual(want[i], p) {
				continue // the cheap check first: Diff is slow on large plans
			}
			if diff := gocmp.Diff(want[i], p, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("worker %d, call %d (set %d): plan differs from a lone call's (-want +got):\n%s", w, k, i, diff)
			}
		}
	}
}
