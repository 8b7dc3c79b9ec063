package vcsim

import (
	"context"
	"fmt"

	"github.com/vmware/govmomi/event"
	"github.com/vmware/govmomi/find"
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

// maxEvents is the most events one QueryEvents returns (vCenter's and the
// simulator's bound on EventFilterSpec.MaxCount), and the most the
// simulator keeps.
const maxEvents = 1000

// PowerOffs tells how the VMs called name in cfg's datacenter were stopped,
// from vCenter's event history: guest counts the guest shutdowns vCenter
// accepted (ShutdownGuest: a VmGuestShutdownEvent each), hard the
// power-offs it made itself (PowerOffVM_Task: a VmStoppingEvent each). A
// guest shutdown posts no VmStoppingEvent, so a VM deleted through its
// guest counts 1 and 0; one whose guest did not stop within the grace and
// was then powered off counts 1 and 1, or 0 and 1 if the request was
// refused or never reached the simulator (Faults.Refuse, Faults.Ignore,
// Faults.Hold). The simulator plays a reset as a power-off and a
// power-on, so there a reset counts as a hard power-off too.
//
// Events keep the VM's name, so PowerOffs finds those of a VM already
// destroyed; it counts every VM that has had the name in the datacenter,
// among the latest 1000 such events (the simulator keeps its latest 1000
// events of all kinds).
func PowerOffs(ctx context.Context, cfg vsphere.Config, name string) (guest, hard int, err error) {
	err = withDatacenter(ctx, cfg, func(vc *vim25.Client, dc *object.Datacenter) error {
		evs, err := event.NewManager(vc).QueryEvents(ctx, types.EventFilterSpec{
			Entity:      &types.EventFilterSpecByEntity{Entity: dc.Reference(), Recursion: types.EventFilterSpecRecursionOptionAll},
			EventTypeId: []string{"VmGuestShutdownEvent", "VmStoppingEvent"},
			MaxCount:    maxEvents,
		})
		for _, e := range evs {
			if vm := e.GetEvent().Vm; vm == nil || vm.Name != name {
				continue
			}
			switch e.(type) {
			case *types.VmGuestShutdownEvent:
				guest++
			case *types.VmStoppingEvent:
				hard++
			}
		}
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("vcsim: count the power-offs of %s: %w", name, err)
	}
	return guest, hard, nil
}

// withDatacenter logs in to cfg's vCenter, finds its datacenter and calls
// do with them, logging out after.
func withDatacenter(ctx context.Context, cfg vsphere.Config, do func(*vim25.Client, *object.Datacenter) error) error {
	vc, logout, err := vsphere.Connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() { _ = logout(context.WithoutCancel(ctx)) }()
	dc, err := find.NewFinder(vc, false).DatacenterOrDefault(ctx, cfg.Datacenter)
	if err != nil {
		return err
	}
	return do(vc, dc)
}
