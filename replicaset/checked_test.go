package replicaset_test

import (
	"time"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/replicasettest"
)

// fataler is what checkedCompute needs of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// checkedCompute is replicaset.Compute with the one invariant checker,
// replicasettest.Check, run on every plan it returns: every test of this
// package that plans a pass checks every documented invariant of it.
func checkedCompute(t fataler, spec replicaset.Spec, current []replicaset.Replica, policy replicaset.Ranker, now time.Time) (replicaset.Plan, error) {
	t.Helper()
	p, err := replicaset.Compute(spec, current, policy, now)
	if err != nil {
		return p, err
	}
	if err := replicasettest.Check(replicasettest.Input{Spec: spec, Replicas: current, Now: now, Policy: policy}, p); err != nil {
		t.Fatalf("plan %v breaks an invariant:\n%v", p, err)
	}
	return p, nil
}
