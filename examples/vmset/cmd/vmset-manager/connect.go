package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// connectTimeout bounds each attempt to connect to a vCenter: a link that
// drops what it carries holds a dial far longer.
const connectTimeout = 30 * time.Second

// startTimeout bounds the first attempts over several vCenters, made at
// once: one that does not answer is tried again later, and the manager
// must serve its probes long before the liveness probe gives up on it.
const startTimeout = 10 * time.Second

// connectVCenters connects to the vCenter of the -vsphere-* flags, vc, and
// to those of -vcenter, and returns the VirtualMachine reconciler over
// them and a function that logs out of each. Over one vCenter, one that
// does not answer is an error (the manager exits, and is started again).
// Over several, all are tried at once, each for up to startTimeout; a
// vCenter that does not answer (vmprovider.ErrUnreachable) is connected
// later (VirtualMachineReconciler.ConnectLater), so that the others are
// served meanwhile; any other failure, such as refused credentials or a
// missing placement, is an error.
func connectVCenters(ctx context.Context, log logr.Logger, vc vsphere.Config, more map[string]vsphere.Config) (*controllers.VirtualMachineReconciler, func(), error) {
	var providers []*vsphere.Provider
	closeAll := func() {
		for _, p := range providers {
			_ = p.Close(context.WithoutCancel(ctx))
		}
	}
	connect := func(ctx context.Context, cfg vsphere.Config) (*vsphere.Provider, error) {
		ctx, cancel := context.WithTimeout(ctx, connectTimeout)
		defer cancel()
		return vsphere.New(ctx, cfg)
	}
	if len(more) == 0 {
		p, err := connect(ctx, vc)
		if err != nil {
			return nil, nil, err
		}
		log.Info("connected to vCenter", "config", vc.String())
		providers = append(providers, p)
		return controllers.NewVirtualMachineReconciler(p), closeAll, nil
	}
	all := maps.Clone(more)
	all[defaultVCenter] = vc
	type result struct {
		p   *vsphere.Provider
		err error
	}
	results := make(map[string]*result, len(all))
	var wg sync.WaitGroup
	for name, cfg := range all {
		res := &result{}
		results[name] = res
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, startTimeout)
			defer cancel()
			res.p, res.err = vsphere.New(ctx, cfg)
		})
	}
	wg.Wait()
	connected := map[string]*vsphere.Provider{}
	var later []string
	var failed error
	for _, name := range slices.Sorted(maps.Keys(all)) {
		res := results[name]
		switch {
		case errors.Is(res.err, vmprovider.ErrUnreachable):
			log.Info("vCenter does not answer; its VMs are unknown until it does", "vcenter", name, "error", res.err.Error())
			later = append(later, name)
		case res.err != nil:
			failed = errors.Join(failed, fmt.Errorf("vCenter %s: %w", name, res.err))
		default:
			log.Info("connected to vCenter", "vcenter", name, "config", all[name].String())
			providers = append(providers, res.p)
			connected[name] = res.p
		}
	}
	if failed != nil {
		closeAll()
		return nil, nil, failed
	}
	r := controllers.NewVirtualMachineReconcilerOver(connected, defaultVCenter)
	for _, name := range later {
		cfg := all[name]
		r.ConnectLater(name, func(ctx context.Context) (*vsphere.Provider, error) { return connect(ctx, cfg) })
	}
	return r, closeAll, nil
}
