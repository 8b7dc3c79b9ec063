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
			replicas[i] = benchReplica(rng, now, i)
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

// rolloutSet returns n available replicas, every other one on revision
// "A" and the rest on "B".
func rolloutSet(n int) ([]replicaset.Replica, time.Time) {
	rng := rand.New(rand.NewPCG(2, uint64(n)))
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	replicas := make([]replicaset.Replica, n)
	for i := range replicas {
		rev := "A"
		if i%2 == 0 {
			rev = "B"
		}
		replicas[i] = benchReplica(rng, now, i)
		replicas[i].Revision = rev
	}
	return replicas, now
}

// rollingSpec is a rollout to "B" of n replicas under Deployment's 25%
// surge and 25% unavailable: a pass over rolloutSet(n) deletes
// min(n/4, 500) replicas on "A" (the per-pass cap) and creates n/4.
func rollingSpec(n int) replicaset.Spec {
	return replicaset.Spec{Desired: n, Revision: "B", Strategy: replicaset.Strategy{
		MaxSurge: replicaset.Percent(25), MaxUnavailable: replicaset.Percent(25),
	}}
}

// BenchmarkComputeRollout measures a pass over a set in mid-rollout (n
// available replicas at the desired count, half of them on an older
// revision, rollingSpec), beside Compute on the same set without
// revisions (the "baseline" sub-benchmark: what a pass over it cost before
// rollouts existed, a pass that finds nothing to do), and a pass over a
// set with revisions that has none to replace ("settled").
func BenchmarkComputeRollout(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		replicas, now := rolloutSet(n)
		settled := slices.Clone(replicas)
		for i := range settled {
			settled[i].Revision = "B"
		}
		policy := deletionpolicy.Random{Seed: 7}
		for _, c := range []struct {
			name string
			spec replicaset.Spec
			set  []replicaset.Replica
		}{
			{"baseline", replicaset.Spec{Desired: n}, replicas},
			{"mid-rollout", rollingSpec(n), replicas},
			{"settled", rollingSpec(n), settled},
		} {
			b.Run(fmt.Sprintf("n=%d/%s", n, c.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := replicaset.Compute(c.spec, c.set, policy, now); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkComputeRolloutLikeForLike measures the same mid-rollout pass
// beside a pass of today's Compute that does the same work on the same
// set without revisions (the "baseline" sub-benchmark): a scale-down that
// ranks the candidates under the policy and chooses as many victims,
// min(n/4, 500).
func BenchmarkComputeRolloutLikeForLike(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		replicas, now := rolloutSet(n)
		policy := deletionpolicy.Random{Seed: 7}
		for _, c := range []struct {
			name string
			spec replicaset.Spec
		}{
			{"baseline", replicaset.Spec{Desired: n - min(n/4, replicaset.DefaultMaxPerPass)}},
			{"mid-rollout", rollingSpec(n)},
		} {
			b.Run(fmt.Sprintf("n=%d/%s", n, c.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := replicaset.Compute(c.spec, replicas, policy, now); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkComputeHealth compares Compute on 100,000 replicas with
// Spec.Remediation and a Health on every replica ("health") against the
// same call without either ("without"), both scaling down by half and at
// the desired count; "health-1pct-due" has 1% of them unhealthy past
// their window, so that the pass replaces some (MaxInFlight 10%).
func BenchmarkComputeHealth(b *testing.B) {
	const n = 100_000
	rng := rand.New(rand.NewPCG(3, n))
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	plain := make([]replicaset.Replica, n)
	healthy := make([]replicaset.Replica, n)
	due := make([]replicaset.Replica, n)
	for i := range plain {
		plain[i] = benchReplica(rng, now, i)
		healthy[i], due[i] = plain[i], plain[i]
		healthy[i].Health = &replicaset.Health{Started: plain[i].CreatedAt, Healthy: true}
		due[i].Health = healthy[i].Health
		if i%100 == 0 {
			due[i].Ready = false
			due[i].Health = &replicaset.Health{Started: plain[i].CreatedAt, Healthy: true, Unhealthy: true, Since: now.Add(-time.Hour)}
		}
	}
	policy := deletionpolicy.Random{Seed: 7}
	for _, desired := range []int{n / 2, n} {
		for _, c := range []struct {
			name     string
			replicas []replicaset.Replica
			heal     bool
		}{{"without", plain, false}, {"health", healthy, true}, {"health-1pct-due", due, true}} {
			spec := replicaset.Spec{Desired: desired}
			if c.heal {
				spec.Remediation = &replicaset.Remediation{}
			}
			b.Run(fmt.Sprintf("desired=%d/%s", desired, c.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := replicaset.Compute(spec, c.replicas, policy, now); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// benchReplica returns the benchmarks' i-th replica: running and ready, a
// random name and age drawn from rng.
func benchReplica(rng *rand.Rand, now time.Time, i int) replicaset.Replica {
	return replicaset.Replica{
		Name:      fmt.Sprintf("set-%08d", rng.IntN(1<<30)) + fmt.Sprint(i),
		UID:       fmt.Sprintf("uid-%d", i),
		CreatedAt: now.Add(-time.Duration(rng.IntN(1<<20)) * time.Second),
		Phase:     replicaset.PhaseRunning,
		Ready:     true,
	}
}

// BenchmarkComputeFeatures measures a pass over n available replicas at
// the desired count, plain (every replica on the wanted revision) and
// mid-rollout (half on an older one, rollingSpec), with no feature, with
// self-healing (a Health on every replica, 1% of them unhealthy past
// their window) and with lifecycle hooks (1% preparing to leave, held by
// a hook). `make bench-base` runs it beside the same benchmark at an
// earlier commit.
func BenchmarkComputeFeatures(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		replicas, now := rolloutSet(n)
		for _, mode := range []string{"plain", "mid-rollout"} {
			spec := rollingSpec(n)
			set := slices.Clone(replicas)
			if mode == "plain" {
				for i := range set {
					set[i].Revision = "B"
				}
			}
			for _, feature := range []string{"none", "health", "hooks"} {
				spec, set := spec, slices.Clone(set)
				switch feature {
				case "health":
					spec.Remediation = &replicaset.Remediation{}
					for i := range set {
						set[i].Health = &replicaset.Health{Started: set[i].CreatedAt, Healthy: true}
						if i%100 == 0 {
							set[i].Ready = false
							set[i].Health = &replicaset.Health{Started: set[i].CreatedAt, Healthy: true, Unhealthy: true, Since: now.Add(-time.Hour)}
						}
					}
				case "hooks":
					spec.Lifecycle = &replicaset.Lifecycle{}
					for i := range set {
						if i%100 == 0 {
							set[i].Preparing = &replicaset.Preparing{Since: now.Add(-time.Minute), Hooks: []string{"drain"}}
						}
					}
				}
				policy := deletionpolicy.Random{Seed: 7}
				b.Run(fmt.Sprintf("n=%d/%s/%s", n, mode, feature), func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if _, err := replicaset.Compute(spec, set, policy, now); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
