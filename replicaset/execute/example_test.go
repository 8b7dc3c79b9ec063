package execute_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/execute"
)

// shelf is the smallest platform: a set of names.
type shelf struct {
	mu    sync.Mutex
	names []string
}

func (s *shelf) Create(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.names, name) { // idempotent by name
		s.names = append(s.names, name)
	}
	return nil
}

func (s *shelf) Delete(_ context.Context, r replicaset.Replica) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names = slices.DeleteFunc(s.names, func(n string) bool { return n == r.Name })
	return nil
}

// Carry out a plan that creates three replicas, with names made beforehand
// so a retried create cannot make a duplicate.
func ExamplePlan() {
	s := &shelf{}
	plan := replicaset.Plan{Create: 3}
	res := execute.Plan(context.Background(), s, plan, []string{"web-0", "web-1", "web-2"}, execute.Options{})
	slices.Sort(s.names)
	fmt.Println(res.Created, res.Err)
	fmt.Println(s.names)
	// Output:
	// [web-0 web-1 web-2] <nil>
	// [web-0 web-1 web-2]
}

// racks is a platform of zones, one of which refuses every create.
type racks struct {
	shelf
	down string
}

func (r *racks) CreateIn(ctx context.Context, name, zone string) error {
	if zone == r.down {
		return fmt.Errorf("zone %s: no capacity", zone)
	}
	return r.Create(ctx, zone+"/"+name)
}

// Spread three replicas over three zones while zone-b is down: the result
// names it, for the next pass to back off from it (History.After) and
// place the missing replica elsewhere.
func ExampleZonedActuator() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	spec := replicaset.Spec{Desired: 3, Zones: []string{"zone-a", "zone-b", "zone-c"}}
	plan, _ := replicaset.Compute(spec, nil, deletionpolicy.Random{}, now)
	r := &racks{down: "zone-b"}
	res := execute.Plan(context.Background(), r, plan, []string{"web-0", "web-1", "web-2"}, execute.Options{InitialBatch: 3})
	slices.Sort(r.names)
	fmt.Println(r.names, res.FailedZones)

	var current []replicaset.Replica
	for _, n := range r.names {
		zone, name, _ := strings.Cut(n, "/")
		current = append(current, replicaset.Replica{Name: name, Zone: zone})
	}
	spec.History = spec.History.After(plan, len(res.Created), res.FailedZones, 0, now)
	next, _ := replicaset.Compute(spec, current, deletionpolicy.Random{}, now)
	fmt.Println(next.CreateZones)
	// Output:
	// [zone-a/web-0 zone-c/web-2] [zone-b]
	// [zone-a]
}

// errBusy is what a platform says when it cannot delete a replica yet.
var errBusy = errors.New("replica is busy")

// busy is a platform that refuses to delete one replica.
type busy struct {
	shelf
	name string
}

func (b *busy) Delete(ctx context.Context, r replicaset.Replica) error {
	if r.Name == b.name {
		return errBusy
	}
	return b.shelf.Delete(ctx, r)
}

// Every failed operation is an *OpError naming the replica, and wraps the
// platform's error, which a caller can test for.
func ExampleOpError() {
	b := &busy{shelf: shelf{names: []string{"web-0", "web-1", "web-2"}}, name: "web-1"}
	plan := replicaset.Plan{Delete: []replicaset.Replica{{Name: "web-1"}, {Name: "web-2"}}}
	res := execute.Plan(context.Background(), b, plan, nil, execute.Options{})
	fmt.Println(res.Deleted, b.names)

	var op *execute.OpError
	if errors.As(res.Err, &op) {
		fmt.Println(op.Op, op.Name, errors.Is(op, errBusy))
	}
	fmt.Println(res.Err)
	// Output:
	// [web-2] [web-0 web-1]
	// delete web-1 true
	// delete web-1: replica is busy
}
