package execute_test

import (
	"context"
	"fmt"
	"slices"
	"sync"

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
