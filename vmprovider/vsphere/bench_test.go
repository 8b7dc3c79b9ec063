package vsphere_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

const benchVMs = 100

// BenchmarkCreate100 creates 100 VMs on vcsim through the provider, beside
// a raw govmomi loop (the "baseline") cloning the same template with the same
// placement and ExtraConfig from as many goroutines as the provider's task
// bound. make bench prints the ratio. VMs are destroyed between iterations,
// outside the timer. The simulator serves calls concurrently (tests
// serialize it, see vcsim.Serialized), so that the provider's task bound is
// what is measured.
func BenchmarkCreate100(b *testing.B) {
	sim := vcsimtest.StartConcurrent(b)
	ctx := context.Background()
	cfg := sim.Config()
	p, err := vsphere.New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = p.Close(ctx) }() // logging out of the simulator: nothing to measure
	owner := vmprovider.Owner{UID: "bench"}
	cleanup := func(b *testing.B) {
		b.StopTimer()
		defer b.StartTimer()
		for i := range benchVMs {
			if err := p.Delete(ctx, fmt.Sprintf("bench-%03d", i), owner.UID); err != nil {
				b.Fatal(err)
			}
		}
	}

	b.Run("baseline", func(b *testing.B) {
		c, err := simulatorClient(ctx, sim)
		if err != nil {
			b.Fatal(err)
		}
		f := find.NewFinder(c)
		dc, _ := f.Datacenter(ctx, cfg.Datacenter)
		f.SetDatacenter(dc)
		tmpl, _ := f.VirtualMachine(ctx, cfg.Template)
		folder, _ := f.Folder(ctx, cfg.Folder)
		cluster, _ := f.ClusterComputeResource(ctx, cfg.ResourcePool)
		pool, _ := cluster.ResourcePool(ctx)
		store, _ := f.Datastore(ctx, cfg.Datastore)
		poolRef, storeRef := pool.Reference(), store.Reference()
		for b.Loop() {
			work := make(chan int)
			var wg sync.WaitGroup
			for range vsphere.DefaultMaxTasks {
				wg.Go(func() {
					for i := range work {
						spec := types.VirtualMachineCloneSpec{
							Location: types.VirtualMachineRelocateSpec{Pool: &poolRef, Datastore: &storeRef},
							Config: &types.VirtualMachineConfigSpec{ExtraConfig: []types.BaseOptionValue{
								&types.OptionValue{Key: vsphere.KeyOwnerUID, Value: owner.UID},
								&types.OptionValue{Key: vsphere.KeyOwnerName, Value: owner.Name},
							}},
						}
						task, err := tmpl.Clone(ctx, folder, fmt.Sprintf("bench-%03d", i), spec)
						if err == nil {
							err = task.Wait(ctx)
						}
						if err != nil {
							b.Error(err)
						}
					}
				})
			}
			for i := range benchVMs {
				work <- i
			}
			close(work)
			wg.Wait()
			cleanup(b)
		}
	})

	b.Run("provider", func(b *testing.B) {
		for b.Loop() {
			var wg sync.WaitGroup
			for i := range benchVMs {
				wg.Go(func() {
					if _, err := p.Create(ctx, vmprovider.Spec{Name: fmt.Sprintf("bench-%03d", i), Owner: owner}); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
			cleanup(b)
		}
	})
}
