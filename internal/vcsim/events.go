package vcsim

import (
	"context"

	"github.com/vmware/govmomi/event"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25"
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
	n := 0
	err := withVM(ctx, cfg, name, "count the power-ons of", func(vc *vim25.Client, vm *object.VirtualMachine) error {
		evs, err := event.NewManager(vc).QueryEvents(ctx, types.EventFilterSpec{
			Entity:      &types.EventFilterSpecByEntity{Entity: vm.Reference(), Recursion: types.EventFilterSpecRecursionOptionSelf},
			EventTypeId: []string{"VmPoweredOnEvent"},
		})
		n = len(evs)
		return err
	})
	return n, err
}
