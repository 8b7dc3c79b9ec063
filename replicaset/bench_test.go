package replicaset_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/replicaset"
)

// BenchmarkCompute measures a scale-down of n replicas to n/2 under the
// Random policy, beside a bare sort of n uint64 keys in the same run (the
// "baseline" sub-benchmark; make bench prints the ratio). Two caps are
// measured: the default (500 victims, the common case) and no effective cap
// (n/2 victims, a full deletion order).
func BenchmarkCompute(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		rng := rand.New(rand.NewPCG(1, uint64(n)))
		now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		replicas := make([]replicaset.Replica, n)
		keys := make([]uint64, n)
		for i := range replicas {
			replicas[i] = replicaset.Replica{
				Name:      fmt.Sprintf("set-%08d", rng.IntN(1<<30)) + fmt.Sprint(i),
				UID:       fmt.Sprintf("uid-%d", i),
				CreatedAt: now.Add(-time.Duration(rng.IntN(1<<20)) * time.Second),
				Phase:     replicaset.PhaseRunning,
				Ready:     true,
			}
			keys[i] = rng.Uint64()
		}
		policy := deletionpolicy.Random{Seed: 7}
		b.Run(fmt.Sprintf("n=%d/baseline", n), func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]uint64, n)
			for b.Loop() {
				copy(buf, keys)
				slices.Sort(buf)
			}
		})
		for _, c := range []struct {
			name string
			cap  int
		}{{"compute-cap500", 0}, {"compute-nocap", n}} {
			spec := replicaset.Spec{Desired: n / 2, MaxPerPass: c.cap}
			b.Run(fmt.Sprintf("n=%d/%s", n, c.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := replicaset.Compute(spec, replicas, policy, now); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
