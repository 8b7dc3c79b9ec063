package deletionpolicytest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/replicaset"
)

// Verify checks p against sample replica sets, including odd ones (unknown
// and extreme times, extreme deletion costs, unknown phases), and returns an
// error joining every violation it finds, or nil:
//
//   - Rank never panics;
//   - Rank is a pure function: the same replica and Env give the same Rank;
//   - plans computed with p are the same whatever the order of the replicas,
//     so a retried pass or a relisted cache never picks another victim;
//   - under p, replicas already being deleted are never chosen again,
//     marked replicas go before unmarked ones and protected replicas are
//     never chosen (Compute enforces these, so a violation means p broke
//     Compute's assumptions, for example by panicking).
func Verify(p deletionpolicy.Policy) error {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	env := replicaset.Env{Now: now, MinReady: 30 * time.Second}
	var errs []error
	for _, r := range oddReplicas(now) {
		first, err := rank(p, r, env)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if again, _ := rank(p, r, env); again != first {
			errs = append(errs, fmt.Errorf("Rank(%q) is not repeatable: %v, then %v", r.Name, first, again))
		}
	}
	rng := rand.New(rand.NewPCG(2026, 11))
	for set := range 50 {
		rs := sampleSet(rng, now, 1+rng.IntN(30))
		spec := replicaset.Spec{Desired: rng.IntN(len(rs) + 1), MinReady: env.MinReady}
		if err := checkPlans(p, spec, rs, rng, now); err != nil {
			errs = append(errs, fmt.Errorf("sample set %d (desired %d of %d): %w", set, spec.Desired, len(rs), err))
		}
	}
	return errors.Join(errs...)
}

// rank calls p.Rank, turning a panic into an error.
func rank(p deletionpolicy.Policy, r replicaset.Replica, env replicaset.Env) (rk replicaset.Rank, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("Rank(%+v) panics: %v", r, v)
		}
	}()
	return p.Rank(r, env), nil
}

// checkPlans computes a plan for rs and a shuffled copy and checks both.
func checkPlans(p deletionpolicy.Policy, spec replicaset.Spec, rs []replicaset.Replica, rng *rand.Rand, now time.Time) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("replicaset.Compute panics: %v", v)
		}
	}()
	plan, err := replicaset.Compute(spec, rs, p, now)
	if err != nil {
		return fmt.Errorf("replicaset.Compute: %w", err)
	}
	shuffled := slices.Clone(rs)
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	again, err := replicaset.Compute(spec, shuffled, p, now)
	if err != nil {
		return fmt.Errorf("Compute(shuffled): %w", err)
	}
	if plan.String() != again.String() {
		return fmt.Errorf("plan depends on input order: %v, then %v", plan, again)
	}
	var errs []error
	unmarkedSeen := false
	for _, r := range plan.Delete {
		switch {
		case r.Deleting:
			errs = append(errs, fmt.Errorf("%q is chosen though already being deleted", r.Name))
		case r.Protected:
			errs = append(errs, fmt.Errorf("%q is chosen though protected", r.Name))
		case r.MarkedForDeletion && unmarkedSeen:
			errs = append(errs, fmt.Errorf("marked %q comes after an unmarked replica", r.Name))
		}
		unmarkedSeen = unmarkedSeen || !r.MarkedForDeletion
	}
	return errors.Join(errs...)
}

// oddReplicas returns replicas at the edges of every field.
func oddReplicas(now time.Time) []replicaset.Replica {
	far := time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	return []replicaset.Replica{
		{Name: "zero"},
		{Name: "unknown-times", Ready: true, Phase: replicaset.PhaseRunning},
		{Name: "far-future", CreatedAt: far, ReadySince: far, Ready: true},
		{Name: "ancient", CreatedAt: time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC)},
		{Name: "min-cost", DeletionCost: math.MinInt64, CreatedAt: now},
		{Name: "max-cost", DeletionCost: math.MaxInt64, CreatedAt: now},
		{Name: "odd-phase", Phase: replicaset.Phase(99)},
		{Name: "max-ordinal", HasOrdinal: true, Ordinal: math.MaxInt},
		{Name: "min-ordinal", HasOrdinal: true, Ordinal: math.MinInt},
		{Name: "", UID: ""},
	}
}

// sampleSet returns n replicas with every field drawn from rng.
func sampleSet(rng *rand.Rand, now time.Time, n int) []replicaset.Replica {
	rs := make([]replicaset.Replica, n)
	for i := range rs {
		age := time.Duration(rng.IntN(7200)) * time.Second
		rs[i] = replicaset.Replica{
			Name:              fmt.Sprintf("r-%d", i),
			UID:               fmt.Sprintf("uid-%d", i),
			CreatedAt:         now.Add(-age),
			Deleting:          rng.IntN(5) == 0,
			MarkedForDeletion: rng.IntN(5) == 0,
			Protected:         rng.IntN(6) == 0,
			DeletionCost:      int64(rng.IntN(3) - 1),
			Phase:             replicaset.Phase(rng.IntN(4)),
			Ready:             rng.IntN(2) == 0,
			ReadySince:        now.Add(-age / 2),
			Ordinal:           i,
			HasOrdinal:        rng.IntN(4) != 0,
		}
	}
	return rs
}
