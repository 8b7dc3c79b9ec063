package vmprovider_test

import (
	"context"
	"fmt"
	"time"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vmprovidertest"
)

// Drain a VM before the Set deletes it: PreDelete runs in a goroutine of
// its own (here it waits until the example lets it go, as a drain waits
// for connections to end), every pass meanwhile holds the VM, and the
// first pass after PreDelete returned nil deletes it. A program calls
// Scale on a ticker, or at Plan.Lifecycle.NextCheck; here a loop does.
func ExampleLifecycle() {
	ctx := context.Background()
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	p := &vmprovidertest.Fake{Now: func() time.Time { return start }}
	draining, drained := make(chan string, 1), make(chan struct{})
	set := &vmprovider.Set{
		Provider: p,
		Template: vmprovider.Spec{Owner: vmprovider.Owner{UID: "uid-web"}, PowerOn: true},
		Policy:   deletionpolicy.HighestOrdinal{},
		Names:    naming.Indexed{Base: "web"},
		Lifecycle: &vmprovider.Lifecycle{
			Lifecycle: replicaset.Lifecycle{Timeout: 10 * time.Minute},
			PreDelete: func(ctx context.Context, vm vmprovider.VM) error {
				draining <- vm.Name // deregister it from the load balancer, say
				select {
				case <-drained: // its connections ended
					return nil
				case <-ctx.Done(): // taken back, or timed out
					return ctx.Err()
				}
			},
		},
	}
	pass := func(desired int, at time.Time) {
		plan, _, err := set.Scale(ctx, desired, at)
		if err != nil {
			fmt.Println(err)
		}
		fmt.Println(plan)
	}
	pass(3, start)
	pass(2, start.Add(time.Minute))
	select {
	case name := <-draining:
		fmt.Println("draining", name)
	case <-time.After(10 * time.Second):
		fmt.Println("PreDelete was not called")
		return
	}
	pass(2, start.Add(2*time.Minute))

	close(drained)
	for range 1000 {
		plan, _, err := set.Scale(ctx, 2, start.Add(3*time.Minute))
		if err != nil {
			fmt.Println(err)
			return
		}
		if len(plan.Delete) > 0 {
			fmt.Println(plan)
			break
		}
		time.Sleep(time.Millisecond) // PreDelete's answer is on its way
	}
	vms, _ := p.List(ctx, "uid-web")
	for _, vm := range vms {
		fmt.Println(vm.Name)
	}
	// Output:
	// create=3 delete=[] deleting=[] deferred=0
	// create=0 delete=[] deleting=[] deferred=0 prepare=[web-2]
	// draining web-2
	// create=0 delete=[] deleting=[] deferred=0 holds=[PreDelete:1]
	// create=0 delete=[web-2] deleting=[] deferred=0
	// web-0
	// web-1
}
