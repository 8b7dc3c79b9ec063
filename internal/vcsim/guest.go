package vcsim

import (
	"context"
	"fmt"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// ReportGuest makes the simulator report, for the VM called name in cfg's
// datacenter, what VMware Tools would report once its guest is up and has
// leased address from a DHCP server: address as its IP address, tools
// running and a green heartbeat. The simulator has no guests, tools or
// DHCP; this stands in for them in tests and the demo, through the API
// (a reconfigure with vcsim's "SET." ExtraConfig keys, which vcsim applies
// to the VM's properties; a real vCenter would store them as ordinary
// ExtraConfig, so call it only on the simulator).
func ReportGuest(ctx context.Context, cfg vsphere.Config, name, address string) error {
	vc, logout, err := vsphere.Connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() { _ = logout(context.WithoutCancel(ctx)) }()
	f := find.NewFinder(vc, false)
	dc, err := f.DatacenterOrDefault(ctx, cfg.Datacenter)
	if err != nil {
		return err
	}
	f.SetDatacenter(dc)
	vm, err := f.VirtualMachine(ctx, name)
	if err != nil {
		return fmt.Errorf("vcsim: report the guest of %s: %w", name, err)
	}
	task, err := vm.Reconfigure(ctx, types.VirtualMachineConfigSpec{ExtraConfig: []types.BaseOptionValue{
		&types.OptionValue{Key: "SET.guest.ipAddress", Value: address},
		&types.OptionValue{Key: "SET.guest.toolsRunningStatus", Value: string(types.VirtualMachineToolsRunningStatusGuestToolsRunning)},
		&types.OptionValue{Key: "SET.guestHeartbeatStatus", Value: string(types.ManagedEntityStatusGreen)},
	}})
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		return fmt.Errorf("vcsim: report the guest of %s: %w", name, err)
	}
	return nil
}
