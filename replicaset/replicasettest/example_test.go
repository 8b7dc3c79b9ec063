package replicasettest_test

import (
	"fmt"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/replicasettest"
)

// ExampleCheck draws inputs with every feature on at once, plans each with
// Compute and checks the plan, then shows what Check says of a plan with
// a planted mistake. In a test, draw the input inside rapid.Check and
// fail with Check's error, so that rapid shrinks the input to a minimal
// one:
//
//	rapid.Check(t, func(t *rapid.T) {
//		in := replicasettest.Inputs().Draw(t, "input")
//		in.Policy = policy // so Check states the order inside each tier
//		plan, err := replicaset.Compute(in.Spec, in.Replicas, in.Policy, in.Now)
//		if err != nil {
//			t.Fatal(err)
//		}
//		if err := replicasettest.Check(in, plan); err != nil {
//			t.Fatalf("%v\n%v", plan, err)
//		}
//	})
func ExampleCheck() {
	broken := 0
	for seed := range 100 {
		in := replicasettest.Inputs().Example(seed)
		in.Policy = deletionpolicy.Oldest{}
		plan, err := replicaset.Compute(in.Spec, in.Replicas, in.Policy, in.Now)
		if err != nil {
			fmt.Println("a drawn input is invalid:", err)
			return
		}
		if err := replicasettest.Check(in, plan); err != nil {
			broken++ // in a test: t.Fatal, with the plan and err
		}
	}
	fmt.Println(broken == 0)

	// A plan that deletes a protected replica in an unreachable zone,
	// and leaves it out of Unknown.
	in := replicasettest.Input{
		Spec: replicaset.Spec{Desired: 1, Unreachable: []string{"b"}},
		Replicas: []replicaset.Replica{
			{Name: "a", UID: "uid-a", Phase: replicaset.PhaseRunning, Ready: true, Zone: "a"},
			{Name: "b", UID: "uid-b", Phase: replicaset.PhaseRunning, Ready: true, Zone: "b", Protected: true},
		},
		Now: replicasettest.Now(),
	}
	fmt.Println(replicasettest.Check(in, replicaset.Plan{Delete: in.Replicas[1:]}))
	// Output:
	// true
	// unreachable: "b" in unreachable zone "b" is in Delete
	// unreachable: Unknown is [], want the unknown replicas (unreachable, or in unreachable zones) [b]
	// protected: protected "b" is in Delete
}
