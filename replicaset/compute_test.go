package replicaset_test

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/internal/replicagen"
	"github.com/replicakit/replicakit/replicaset"
)

var now = replicagen.Now()

// aged returns a running, ready replica created age ago.
func aged(name string, age time.Duration) replicaset.Replica {
	return replicaset.Replica{Name: name, UID: "uid-" + name, CreatedAt: now.Add(-age),
		Phase: replicaset.PhaseRunning, Ready: true, ReadySince: now.Add(-age)}
}

func deleting(r replicaset.Replica) replicaset.Replica  { r.Deleting = true; return r }
func marked(r replicaset.Replica) replicaset.Replica    { r.MarkedForDeletion = true; return r }
func protected(r replicaset.Replica) replicaset.Replica { r.Protected = true; return r }

func TestCompute(t *testing.T) {
	a, b, c, d := aged("a", 4*time.Hour), aged("b", 3*time.Hour), aged("c", 2*time.Hour), aged("d", time.Hour)
	tests := []struct {
		desc     string
		spec     replicaset.Spec
		replicas []replicaset.Replica
		want     replicaset.Plan
	}{{
		desc:     "create 3 from nothing",
		spec:     replicaset.Spec{Desired: 3},
		replicas: nil,
		want:     replicaset.Plan{Create: 3},
	}, {
		desc:     "3 to 1 deletes the two oldest",
		spec:     replicaset.Spec{Desired: 1},
		replicas: []replicaset.Replica{c, a, b},
		want:     replicaset.Plan{Delete: []replicaset.Replica{a, b}},
	}, {
		desc:     "1 to 2 keeps the survivor and creates one",
		spec:     replicaset.Spec{Desired: 2},
		replicas: []replicaset.Replica{c},
		want:     replicaset.Plan{Create: 1},
	}, {
		desc:     "2 to 0 deletes both",
		spec:     replicaset.Spec{Desired: 0},
		replicas: []replicaset.Replica{d, c},
		want:     replicaset.Plan{Delete: []replicaset.Replica{c, d}},
	}, {
		desc:     "3 to 1 with one deleting: it goes first, one more is chosen",
		spec:     replicaset.Spec{Desired: 1},
		replicas: []replicaset.Replica{a, deleting(b), c},
		want:     replicaset.Plan{Delete: []replicaset.Replica{a}, Deleting: []replicaset.Replica{deleting(b)}},
	}, {
		desc:     "deleting replicas that cover the excess: nothing new",
		spec:     replicaset.Spec{Desired: 2},
		replicas: []replicaset.Replica{a, deleting(b), c},
		want:     replicaset.Plan{Deleting: []replicaset.Replica{deleting(b)}},
	}, {
		desc:     "a deleting replica counts toward desired by default: no replacement",
		spec:     replicaset.Spec{Desired: 3},
		replicas: []replicaset.Replica{a, deleting(b), c},
		want:     replicaset.Plan{Deleting: []replicaset.Replica{deleting(b)}},
	}, {
		desc:     "ReplaceDeleting replaces a deleting replica at once",
		spec:     replicaset.Spec{Desired: 3, ReplaceDeleting: true},
		replicas: []replicaset.Replica{a, deleting(b), c},
		want:     replicaset.Plan{Create: 1, Deleting: []replicaset.Replica{deleting(b)}},
	}, {
		desc:     "ReplaceDeleting 3 to 1 with one deleting deletes the same as counting",
		spec:     replicaset.Spec{Desired: 1, ReplaceDeleting: true},
		replicas: []replicaset.Replica{a, deleting(b), c},
		want:     replicaset.Plan{Delete: []replicaset.Replica{a}, Deleting: []replicaset.Replica{deleting(b)}},
	}, {
		desc:     "marked goes before the policy's choice",
		spec:     replicaset.Spec{Desired: 2},
		replicas: []replicaset.Replica{a, b, marked(d)},
		want:     replicaset.Plan{Delete: []replicaset.Replica{marked(d)}},
	}, {
		desc:     "protected is never chosen",
		spec:     replicaset.Spec{Desired: 2},
		replicas: []replicaset.Replica{protected(a), b, c},
		want:     replicaset.Plan{Delete: []replicaset.Replica{b}},
	}, {
		desc:     "protected and marked: protection wins",
		spec:     replicaset.Spec{Desired: 2},
		replicas: []replicaset.Replica{protected(marked(a)), b, c},
		want:     replicaset.Plan{Delete: []replicaset.Replica{b}},
	}, {
		desc:     "protection blocks the scale-down: shortfall",
		spec:     replicaset.Spec{Desired: 1},
		replicas: []replicaset.Replica{protected(a), protected(b), c},
		want: replicaset.Plan{Delete: []replicaset.Replica{c}, Shortfall: replicaset.Shortfall{Count: 1,
			Reason: "2 of 3 live replicas are protected from scale-in; remove the protection from 1 of them to reach 1"}},
	}, {
		desc:     "the cap defers creates",
		spec:     replicaset.Spec{Desired: 5, MaxPerPass: 2},
		replicas: []replicaset.Replica{a},
		want:     replicaset.Plan{Create: 2, Deferred: 2},
	}, {
		desc:     "the cap defers deletes, the first in order go now",
		spec:     replicaset.Spec{Desired: 0, MaxPerPass: 3},
		replicas: []replicaset.Replica{d, c, b, a},
		want:     replicaset.Plan{Delete: []replicaset.Replica{a, b, c}, Deferred: 1},
	}, {
		desc:     "converged",
		spec:     replicaset.Spec{Desired: 2},
		replicas: []replicaset.Replica{a, b},
		want:     replicaset.Plan{},
	}}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			got, err := checkedCompute(t, tt.spec, tt.replicas, deletionpolicy.Oldest{}, now)
			if err != nil {
				t.Fatalf("Compute(%+v) error: %v", tt.spec, err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Compute(%+v) plan mismatch (-want +got):\n%s", tt.spec, diff)
			}
		})
	}
}

// TestCompute_NoCap: MaxPerPass math.MaxInt, as its doc says, lifts the
// cap: 1,200 creates (with zones, 400 for each) and 1,200 deletes in one
// pass, nothing deferred.
func TestCompute_NoCap(t *testing.T) {
	const n = 1_200
	zones := []string{"a", "b", "c"}
	up, err := checkedCompute(t, replicaset.Spec{Desired: n, MaxPerPass: math.MaxInt, Zones: zones}, nil, deletionpolicy.Oldest{}, now)
	if err != nil {
		t.Fatal(err)
	}
	perZone := map[string]int{}
	for _, z := range up.CreateZones {
		perZone[z]++
	}
	if diff := cmp.Diff(map[string]int{"a": n / 3, "b": n / 3, "c": n / 3}, perZone); up.Create != n || up.Deferred != 0 || diff != "" {
		t.Errorf("scale-up from 0 to %d: Create %d, Deferred %d, zones (-want +got):\n%s", n, up.Create, up.Deferred, diff)
	}
	set := make([]replicaset.Replica, n)
	for i := range set {
		set[i] = replicaset.Replica{Name: fmt.Sprintf("r-%d", i), Zone: zones[i%3]}
	}
	down, err := checkedCompute(t, replicaset.Spec{MaxPerPass: math.MaxInt, Zones: zones}, set, deletionpolicy.Oldest{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(down.Delete) != n || down.Deferred != 0 {
		t.Errorf("scale-down from %d to 0: %d deletes, Deferred %d; want %d and 0", n, len(down.Delete), down.Deferred, n)
	}
}

// TestCompute_SeedStory walks the story of the VirtualMachineReplicaSet pull
// request at planner level, under the Random policy it shipped with: create
// 3, scale to 1, scale to 2 (the survivor kept), scale to 0.
func TestCompute_SeedStory(t *testing.T) {
	policy := deletionpolicy.Random{Seed: 42}
	var set []replicaset.Replica
	serial := 0
	pass := func(desired int) replicaset.Plan {
		t.Helper()
		p, err := checkedCompute(t, replicaset.Spec{Desired: desired}, set, policy, now)
		if err != nil {
			t.Fatalf("Compute(desired=%d): %v", desired, err)
		}
		created := replicagen.Names("test-rs-", &serial, p.Create)
		set = replicagen.Apply(set, p, created, true)
		return p
	}
	names := func() []string {
		var s []string
		for _, r := range set {
			s = append(s, r.Name)
		}
		return s
	}

	if p := pass(3); p.Create != 3 || len(p.Delete) != 0 {
		t.Fatalf("0→3: plan %v, want create=3 and no deletes", p)
	}
	if p := pass(1); p.Create != 0 || len(p.Delete) != 2 {
		t.Fatalf("3→1: plan %v, want 2 deletes", p)
	}
	survivor := names()
	if len(survivor) != 1 {
		t.Fatalf("after 3→1: replicas %v, want 1", survivor)
	}
	if p := pass(2); p.Create != 1 || len(p.Delete) != 0 {
		t.Fatalf("1→2: plan %v, want create=1", p)
	}
	if got := names(); len(got) != 2 || got[0] != survivor[0] {
		t.Fatalf("after 1→2: replicas %v, want the survivor %v and one new", got, survivor)
	}
	if p := pass(2); !p.IsZero() {
		t.Fatalf("2→2: plan %v, want nothing to do", p)
	}
	if p := pass(0); len(p.Delete) != 2 {
		t.Fatalf("2→0: plan %v, want 2 deletes", p)
	}
	if got := names(); len(got) != 0 {
		t.Fatalf("after 2→0: replicas %v, want none", got)
	}
}

func TestCompute_BadInput(t *testing.T) {
	a := aged("a", time.Hour)
	tests := []struct {
		desc     string
		spec     replicaset.Spec
		replicas []replicaset.Replica
		policy   replicaset.Ranker
		want     error
		message  string
	}{{
		desc:    "negative desired",
		spec:    replicaset.Spec{Desired: -1},
		policy:  deletionpolicy.Oldest{},
		want:    replicaset.ErrInvalidSpec,
		message: "desired replicas -1 is negative: replicaset: invalid spec",
	}, {
		desc:    "negative cap",
		spec:    replicaset.Spec{MaxPerPass: -5},
		policy:  deletionpolicy.Oldest{},
		want:    replicaset.ErrInvalidSpec,
		message: "max per pass -5 is negative (use 0 for the default 500): replicaset: invalid spec",
	}, {
		desc:    "negative min ready",
		spec:    replicaset.Spec{MinReady: -time.Second},
		policy:  deletionpolicy.Oldest{},
		want:    replicaset.ErrInvalidSpec,
		message: "min ready -1s is negative: replicaset: invalid spec",
	}, {
		desc:     "duplicate names",
		spec:     replicaset.Spec{Desired: 1},
		replicas: []replicaset.Replica{a, a},
		policy:   deletionpolicy.Oldest{},
		want:     replicaset.ErrInvalidReplica,
		message:  `replica name "a" appears twice: replicaset: invalid replica` + "\n" + `replicas "a" and "a" share UID "uid-a": replicaset: invalid replica`,
	}, {
		desc:     "empty name",
		spec:     replicaset.Spec{Desired: 1},
		replicas: []replicaset.Replica{a, {UID: "x"}},
		policy:   deletionpolicy.Oldest{},
		want:     replicaset.ErrInvalidReplica,
		message:  "replica 1 has an empty name: replicaset: invalid replica",
	}, {
		desc:    "no policy",
		spec:    replicaset.Spec{Desired: 1},
		policy:  nil,
		want:    replicaset.ErrNoPolicy,
		message: "compute needs a deletion policy such as deletionpolicy.Random: replicaset: no deletion policy",
	}, {
		desc:     "typed nil policy",
		spec:     replicaset.Spec{Desired: 0},
		replicas: []replicaset.Replica{a},
		policy:   (*deletionpolicy.Random)(nil),
		want:     replicaset.ErrNoPolicy,
		message:  "compute needs a deletion policy such as deletionpolicy.Random: replicaset: no deletion policy",
	}}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			_, err := checkedCompute(t, tt.spec, tt.replicas, tt.policy, now)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Compute(%+v) error = %v, want %v", tt.spec, err, tt.want)
			}
			if err.Error() != tt.message {
				t.Errorf("Compute(%+v) error message\n got: %s\nwant: %s", tt.spec, err, tt.message)
			}
		})
	}
}

func TestPlan_String(t *testing.T) {
	p := replicaset.Plan{Create: 0, Delete: []replicaset.Replica{{Name: "b"}, {Name: "c"}},
		Deleting: []replicaset.Replica{{Name: "a"}}, Shortfall: replicaset.Shortfall{Count: 1, Reason: "why"}}
	const want = "create=0 delete=[b c] deleting=[a] deferred=0 shortfall=1 (why)"
	if got := p.String(); got != want {
		t.Errorf("Plan.String() = %q, want %q", got, want)
	}
}
