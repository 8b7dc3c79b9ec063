package deletionpolicy_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/replicaset"
)

// deleteAll prints the order in which Compute deletes all of replicas
// under policy.
func deleteAll(replicas []replicaset.Replica, policy deletionpolicy.Policy, now time.Time) {
	plan, err := replicaset.Compute(replicaset.Spec{Desired: 0}, replicas, policy, now)
	if err != nil {
		fmt.Println(err)
		return
	}
	var names []string
	for _, r := range plan.Delete {
		names = append(names, r.Name)
	}
	fmt.Println(names)
}

// Oldest deletes in order of creation; a replica with a higher deletion
// cost goes after all the cheaper ones, whatever its age.
func ExampleOldest() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	replicas := []replicaset.Replica{
		{Name: "web-r9slq", CreatedAt: now.Add(-1 * time.Hour)},
		{Name: "web-zmdmm", CreatedAt: now.Add(-3 * time.Hour), DeletionCost: 100},
		{Name: "web-x2bkp", CreatedAt: now.Add(-2 * time.Hour)},
	}
	deleteAll(replicas, deletionpolicy.Oldest{}, now)
	// Output:
	// [web-x2bkp web-r9slq web-zmdmm]
}

// Newest deletes the most recently created replicas first, keeping the
// ones that have run longest.
func ExampleNewest() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	replicas := []replicaset.Replica{
		{Name: "web-r9slq", CreatedAt: now.Add(-1 * time.Hour)},
		{Name: "web-zmdmm", CreatedAt: now.Add(-3 * time.Hour)},
		{Name: "web-x2bkp", CreatedAt: now.Add(-2 * time.Hour)},
	}
	deleteAll(replicas, deletionpolicy.Newest{}, now)
	// Output:
	// [web-r9slq web-x2bkp web-zmdmm]
}

// An ordinally named set shrinks from the top, as a StatefulSet does; a
// replica without an ordinal is outside the sequence and goes first.
func ExampleHighestOrdinal() {
	replicas := []replicaset.Replica{
		{Name: "db-0", Ordinal: 0, HasOrdinal: true},
		{Name: "db-2", Ordinal: 2, HasOrdinal: true},
		{Name: "db-manual"},
		{Name: "db-1", Ordinal: 1, HasOrdinal: true},
	}
	plan, err := replicaset.Compute(replicaset.Spec{Desired: 2}, replicas, deletionpolicy.HighestOrdinal{}, time.Time{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range plan.Delete {
		fmt.Println(r.Name)
	}
	// Output:
	// db-manual
	// db-2
}

// A controller that names its replicas randomly has no ordinals to give a
// policy: it refuses the policies that need them.
func ExampleUsesOrdinals() {
	reg := deletionpolicy.Default()
	for _, name := range reg.Names() {
		p, err := reg.Lookup(name)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(name, deletionpolicy.UsesOrdinals(p))
	}
	// Output:
	// HighestOrdinal true
	// Newest false
	// Oldest false
	// Random false
	// UnhealthyFirst false
}

// A controller can tell an unknown policy name, the user's mistake, from
// other errors, and show the names it knows.
func ExampleUnknownPolicyError() {
	_, err := deletionpolicy.Default().Lookup("LeastLoaded")
	var unknown *deletionpolicy.UnknownPolicyError
	if errors.As(err, &unknown) {
		fmt.Printf("spec.deletePolicy %q: use one of %v\n", unknown.Name, unknown.Known)
	}
	// Output:
	// spec.deletePolicy "LeastLoaded": use one of [HighestOrdinal Newest Oldest Random UnhealthyFirst]
}
