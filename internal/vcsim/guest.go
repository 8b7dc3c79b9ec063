package vcsim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/vmprovider"
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
	return setGuest(ctx, cfg, name, "report the guest of", []types.BaseOptionValue{
		&types.OptionValue{Key: "SET.guest.ipAddress", Value: address},
		&types.OptionValue{Key: "SET.guest.toolsRunningStatus", Value: string(types.VirtualMachineToolsRunningStatusGuestToolsRunning)},
		&types.OptionValue{Key: "SET.guestHeartbeatStatus", Value: string(types.ManagedEntityStatusGreen)},
	})
}

// SetHeartbeat makes the simulator report h as the guest heartbeat of the
// VM called name in cfg's datacenter, as ReportGuest does (call it only on
// the simulator): HeartbeatRed plays a guest that hung, HeartbeatGreen one
// that came back. A reset of the VM does not change it: the test or demo
// says whether the reset helped.
func SetHeartbeat(ctx context.Context, cfg vsphere.Config, name string, h vmprovider.Heartbeat) error {
	return setGuest(ctx, cfg, name, "set the heartbeat of", []types.BaseOptionValue{
		&types.OptionValue{Key: "SET.guestHeartbeatStatus", Value: string(h)},
	})
}

// SetHeartbeats is SetHeartbeat for the VMs called names at once, as a
// network blip or a storage outage takes many guests together: it finds
// them all in one session first, then sends every reconfigure together,
// so that a serialized simulator serves them back to back and a watch
// sees them in one update or a few close together, not one guest at a
// time over seconds. It returns how long the reconfigures took, from the
// first sent to the last done.
func SetHeartbeats(ctx context.Context, cfg vsphere.Config, names []string, h vmprovider.Heartbeat) (time.Duration, error) {
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
	vms := make([]*object.VirtualMachine, len(names))
	for i, name := range names {
		if vms[i], err = f.VirtualMachine(ctx, name); err != nil {
			return 0, fmt.Errorf("vcsim: set the heartbeat of %s: %w", name, err)
		}
	}
	spec := types.VirtualMachineConfigSpec{ExtraConfig: []types.BaseOptionValue{
		&types.OptionValue{Key: "SET.guestHeartbeatStatus", Value: string(h)},
	}}
	errs := make([]error, len(vms))
	start := time.Now()
	var wg sync.WaitGroup
	for i, vm := range vms {
		wg.Go(func() {
			task, err := vm.Reconfigure(ctx, spec)
			if err == nil {
				err = task.Wait(ctx)
			}
			if err != nil {
				errs[i] = fmt.Errorf("vcsim: set the heartbeat of %s: %w", names[i], err)
			}
		})
	}
	wg.Wait()
	return time.Since(start), errors.Join(errs...)
}

// setGuest reconfigures the VM called name with vcsim's "SET." keys; what
// names the change for errors.
func setGuest(ctx context.Context, cfg vsphere.Config, name, what string, values []types.BaseOptionValue) error {
	return withVM(ctx, cfg, name, what, func(_ *vim25.Client, vm *object.VirtualMachine) error {
		task, err := vm.Reconfigure(ctx, types.VirtualMachineConfigSpec{ExtraConfig: values})
		if err == nil {
			err = task.Wait(ctx)
		}
		return err
	})
}

// withVM logs in to cfg's vCenter, finds the VM called name in its
// datacenter and calls do with them, logging out after; an error is
// wrapped as "vcsim: <what> <name>".
func withVM(ctx context.Context, cfg vsphere.Config, name, what string, do func(*vim25.Client, *object.VirtualMachine) error) error {
	return withDatacenter(ctx, cfg, func(vc *vim25.Client, dc *object.Datacenter) error {
		f := find.NewFinder(vc, false)
		f.SetDatacenter(dc)
		vm, err := f.VirtualMachine(ctx, name)
		if err == nil {
			err = do(vc, vm)
		}
		if err != nil {
			return fmt.Errorf("vcsim: %s %s: %w", what, name, err)
		}
		return nil
	})
}
