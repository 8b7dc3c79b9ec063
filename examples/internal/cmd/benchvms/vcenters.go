package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/benchkit"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// vcenters times 0→n VMs in one set over two zones, the zones on two
// vCenters (two simulators, each serving its own calls one at a time)
// beside the same zones on one: the like-for-like measure of what a
// second vCenter buys. Both runs give the VirtualMachine controller
// twice a provider's task bound in workers, so that two vCenters can use
// both their task bounds.
func (b *bench) vcenters(ctx context.Context, n int) (row, error) {
	var took [2]time.Duration
	for i, count := range []int{1, 2} {
		ns, err := b.ns.New(ctx, fmt.Sprintf("vcenters-%d", count))
		if err != nil {
			return row{}, err
		}
		if took[i], err = b.overVCenters(ctx, ns, count, n); err != nil {
			return row{}, err
		}
		fmt.Printf("  0→%d VMs over two zones on %d vCenter(s): %v\n", n, count, took[i].Round(time.Millisecond))
	}
	return row{what: fmt.Sprintf("0→%d VMs over two zones on two vCenters", n), took: took[1], ref: took[0],
		refName: "the same on one vCenter", goal: "→ 0.5"}, nil
}

// overVCenters runs the operator over count simulators, with zone-0 on the
// first and zone-1 on the last, and times one set of n VMs over both
// zones from 0 until it settled.
func (b *bench) overVCenters(ctx context.Context, ns string, count, n int) (took time.Duration, err error) {
	var sims []*vcsim.Sim
	providers := map[string]*vsphere.Provider{}
	defer func() {
		for _, p := range providers {
			_ = p.Close(context.Background())
		}
		for _, s := range sims {
			s.Close()
		}
	}()
	var cfgs []vsphere.Config
	for i := range count {
		sim, err := vcsim.New(vcsim.Serialized)
		if err != nil {
			return 0, err
		}
		sims = append(sims, sim)
		cfgs = append(cfgs, sim.Config())
		if providers[fmt.Sprintf("vc%d", i)], err = vsphere.New(ctx, sim.Config()); err != nil {
			return 0, err
		}
	}
	last := fmt.Sprintf("vc%d", count-1)
	r := controllers.NewVirtualMachineReconcilerOver(providers, "vc0")
	r.Zones = map[string]vmprovider.Placement{
		"zone-0": {ResourcePool: "/DC0/host/DC0_C0", Endpoint: "vc0"},
		"zone-1": {ResourcePool: "/DC0/host/DC0_C1", Endpoint: last},
	}
	stop, err := benchkit.RunManager(b.env.Config, vmcheck.Scheme(), 2*vsphere.DefaultMaxTasks, func(mgr ctrl.Manager) error {
		return controllers.Setup(mgr, r)
	}, ns)
	if err != nil {
		return 0, err
	}
	defer stop()
	set := vmSet(ns, "set-000", n)
	set.Spec.Zones = []string{"zone-0", "zone-1"}
	start := time.Now()
	if err := b.c.Create(ctx, set); err != nil {
		return 0, err
	}
	var st vmcheck.State
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		if !kubernetesSettled(ctx, b, ns, 1, n) {
			return false, nil
		}
		var err error
		st, err = vmcheck.ObserveAll(ctx, b.c, cfgs, ns, "")
		return err == nil && st.Settled(n), nil
	})
	if err != nil {
		return 0, errors.Join(fmt.Errorf("%s: %d VMs over %d vCenters: %v", ns, n, count, st), err)
	}
	return time.Since(start), nil
}
