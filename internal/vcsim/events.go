package vcsim

import (
	"context"
	"fmt"

	"github.com/vmware/govmomi/event"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// PowerOns counts the times vCenter says the VM called name in cfg's
// datacenter was powered on (its VmPoweredOnEvent events): once when it
// was made powered on, and once more for each reset (the simulator plays
// a reset as a power-off and a power-on) or power-on since. It reads
// vCenter's event history over the API, so it works on any vCenter that
// keeps the VM's events.
func PowerOns(ctx context.Context, cfg vsphere.Config, name string) (int, error) {
	vc, logout, err := vsphere.Connect(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer func() { _ = logout(context.WithoutCancel(ctx)) }()
	f := find.NewFinder(vc, false)
	dc, err := f.DatacenterOrDefault(ctx, cfg.Datacenter)
	if err != nil {
		return 0, err
	}
	f.SetDatacenter(dc)
	vm, err := f.VirtualMachine(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("vcsim: count the power-ons of %s: %w", name, err)
	}
	evs, err := event.NewManager(vc).QueryEvents(ctx, types.EventFilterSpec{
		Entity:      &types.EventFilterSpecByEntity{Entity: vm.Reference(), Recursion: types.EventFilterSpecRecursionOptionSelf},
		EventTypeId: []string{"VmPoweredOnEvent"},
	})
	if err != nil {
		return 0, fmt.Errorf("vcsim: count the power-ons of %s: %w", name, err)
	}
	return len(evs), nil
}
