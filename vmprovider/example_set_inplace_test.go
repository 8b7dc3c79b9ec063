package vmprovider_test

import (
	"context"
	"fmt"
	"time"

	"github.com/replicakit/replicakit/deletionpolicy"
	simgate "github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// inPlaceExample starts a vCenter simulator that changes VMs' sizes only
// as vCenter does, and returns a Provider on it and a Set of two VMs of
// 512 MiB with memory hot-add on, rolled in place where it can be; stop
// ends both. A program gives its own vsphere.Config.
func inPlaceExample(lc *vmprovider.Lifecycle) (set *vmprovider.Set, p *vsphere.Provider, stop func()) {
	ctx := context.Background()
	sim, err := simgate.New(simgate.Serialized, simgate.Hotplug)
	if err != nil {
		panic(err)
	}
	if p, err = vsphere.New(ctx, sim.Config()); err != nil {
		panic(err)
	}
	set = &vmprovider.Set{
		Provider: p,
		Template: vmprovider.Spec{Owner: vmprovider.Owner{UID: "uid-web"}, PowerOn: true, CPUs: 1, MemoryMiB: 512, MemoryHotAdd: true},
		Policy:   deletionpolicy.Oldest{},
		Names:    naming.Indexed{Base: "web"},
		Rollout: &replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible,
			MaxSurge: replicaset.Count(0), MaxUnavailable: replicaset.Count(1)},
		Lifecycle: lc,
	}
	for range 2 {
		if _, _, err := set.Scale(ctx, 2, time.Now()); err != nil {
			panic(err)
		}
	}
	return set, p, func() { _ = p.Close(ctx); sim.Close() }
}

// A Set whose Rollout updates in place gives its VMs more memory where
// they run: its VMs record their base revision, so a Template that
// changes only their size needs no new VM, and memory hot-add lets
// vCenter raise it without stopping them.
func ExampleSet_inPlace() {
	set, p, stop := inPlaceExample(nil)
	defer stop()
	ctx := context.Background()
	before, _ := p.List(ctx, "uid-web")

	next := set.Template
	next.MemoryMiB = 1024
	set.SetTemplate(next)
	plan, _, err := set.Scale(ctx, 2, time.Now())
	fmt.Println(plan, err)

	after, _ := p.List(ctx, "uid-web")
	for i, vm := range after {
		// The simulator derives a VM's instance UUID from its path, so a VM
		// made anew under the same name would keep it: its creation time
		// tells.
		same := vm.InstanceUUID == before[i].InstanceUUID && vm.CreatedAt.Equal(before[i].CreatedAt)
		fmt.Printf("%s: %d MiB, %v, the same VM: %v\n", vm.Name, vm.MemoryMiB, vm.Power, same)
	}
	// Output:
	// create=0 delete=[] deleting=[] deferred=0 update=[web-0 web-1] <nil>
	// web-0: 1024 MiB, PoweredOn, the same VM: true
	// web-1: 1024 MiB, PoweredOn, the same VM: true
}

// Lowering memory needs each VM off: with a Lifecycle, the Set drains a
// VM through PreDelete first, whose ctx says it is for an update (the VM
// comes back), and power-cycles it once PreDelete returned nil, one VM at
// a time under MaxUnavailable 1. A program calls Scale on a ticker; here
// a loop does.
func ExamplePreparingUpdate() {
	drains := make(chan string, 2)
	set, p, stop := inPlaceExample(&vmprovider.Lifecycle{
		Lifecycle: replicaset.Lifecycle{Timeout: 10 * time.Minute},
		PreDelete: func(ctx context.Context, vm vmprovider.VM) error {
			if to, ok := vmprovider.PreparingUpdate(ctx); ok {
				drains <- fmt.Sprintf("drain %s for a power cycle to %d MiB, then take it back", vm.Name, to.MemoryMiB)
			} else {
				drains <- "drain " + vm.Name + " for good"
			}
			return nil // drained
		},
	})
	defer stop()
	ctx := context.Background()

	next := set.Template
	next.MemoryMiB = 256
	set.SetTemplate(next)
	for range 2 {
		fmt.Println(scaleUntil(ctx, set, func(p replicaset.Plan) bool { return len(p.PrepareUpdate) > 0 }))
		fmt.Println(<-drains)
		fmt.Println(scaleUntil(ctx, set, func(p replicaset.Plan) bool { return len(p.Update) > 0 }))
	}
	vms, _ := p.List(ctx, "uid-web")
	for _, vm := range vms {
		fmt.Printf("%s: %d MiB, %v\n", vm.Name, vm.MemoryMiB, vm.Power)
	}
	// Output:
	// prepare-update=[web-0]
	// drain web-0 for a power cycle to 256 MiB, then take it back
	// update=[web-0 power cycle true]
	// prepare-update=[web-1]
	// drain web-1 for a power cycle to 256 MiB, then take it back
	// update=[web-1 power cycle true]
	// web-0: 256 MiB, PoweredOn
	// web-1: 256 MiB, PoweredOn
}

// scaleUntil calls set.Scale until a plan meets done (for up to a
// minute), and says what it prepared or updated.
func scaleUntil(ctx context.Context, set *vmprovider.Set, done func(replicaset.Plan) bool) string {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		plan, _, err := set.Scale(ctx, 2, time.Now())
		switch {
		case err != nil:
			return err.Error()
		case !done(plan):
			continue
		case len(plan.PrepareUpdate) > 0:
			return fmt.Sprintf("prepare-update=[%s]", plan.PrepareUpdate[0].Name)
		}
		u := plan.Update[0]
		return fmt.Sprintf("update=[%s power cycle %v]", u.Replica.Name, u.PowerCycle)
	}
	return "no such plan within a minute"
}
