package vsphere

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/vmprovider"
)

// allChanges draws a value for every property a VM's parts are read from,
// as vCenter reports them.
func allChanges(t *rapid.T) []types.PropertyChange {
	at := func(label string) *time.Time {
		v := time.Unix(rapid.Int64Range(1, 1<<32).Draw(t, label), 0).UTC()
		return &v
	}
	addr := func(label string) string {
		return rapid.SampledFrom([]string{"10.0.0.1", "10.0.0.2", "192.168.1.7", "fe80::1", ""}).Draw(t, label)
	}
	set := map[string]any{
		"name":                rapid.StringMatching(`[a-z]{1,6}`).Draw(t, "name"),
		"config.instanceUuid": rapid.StringMatching(`[0-9a-f]{4}`).Draw(t, "uuid"),
		"config.extraConfig": []types.BaseOptionValue{
			&types.OptionValue{Key: KeyOwnerUID, Value: rapid.SampledFrom([]string{"", "uid-a"}).Draw(t, "owner")},
			&types.OptionValue{Key: KeyOwnerName, Value: "ns/a"},
			&types.OptionValue{Key: KeyZone, Value: rapid.SampledFrom([]string{"", "z1"}).Draw(t, "zone")},
			&types.OptionValue{Key: KeyRevision, Value: rapid.SampledFrom([]string{"", "r1"}).Draw(t, "revision")},
			&types.OptionValue{Key: KeyBaseRevision, Value: rapid.SampledFrom([]string{"", "b1"}).Draw(t, "base revision")},
		},
		"config.hardware.numCPU":            rapid.Int32Range(1, 16).Draw(t, "cpus"),
		"config.hardware.memoryMB":          rapid.Int32Range(1, 1<<16).Draw(t, "memory"),
		"config.hardware.numCoresPerSocket": rapid.Int32Range(1, 8).Draw(t, "cores per socket"),
		"config.hotPlugMemoryLimit":         rapid.Int64Range(0, 1<<20).Draw(t, "hot-add limit"),
		"config.hotPlugMemoryIncrementSize": rapid.Int64Range(0, 1024).Draw(t, "hot-add increment"),
		"config.cpuHotAddEnabled":           rapid.Bool().Draw(t, "cpu hot-add"),
		"config.cpuHotRemoveEnabled":        rapid.Bool().Draw(t, "cpu hot-remove"),
		"config.memoryHotAddEnabled":        rapid.Bool().Draw(t, "memory hot-add"),
		"config.createDate":                 at("created"),
		"runtime.powerState": rapid.SampledFrom([]types.VirtualMachinePowerState{types.VirtualMachinePowerStatePoweredOn,
			types.VirtualMachinePowerStatePoweredOff, types.VirtualMachinePowerStateSuspended}).Draw(t, "power"),
		"runtime.bootTime": at("booted"),
		"runtime.connectionState": rapid.SampledFrom([]types.VirtualMachineConnectionState{types.VirtualMachineConnectionStateConnected,
			types.VirtualMachineConnectionStateInaccessible}).Draw(t, "connection"),
		"summary.config.instanceUuid": rapid.StringMatching(`[0-9a-f]{4}`).Draw(t, "summary uuid"),
		"guest.ipAddress":             addr("primary"),
		"guest.net": []types.GuestNicInfo{{IpAddress: []string{addr("nic0")}},
			{IpAddress: []string{addr("nic1a"), addr("nic1b")}}},
		"guest.hostName": rapid.StringMatching(`[a-z]{0,6}`).Draw(t, "hostname"),
		"guest.toolsRunningStatus": rapid.SampledFrom([]string{string(types.VirtualMachineToolsRunningStatusGuestToolsRunning),
			string(types.VirtualMachineToolsRunningStatusGuestToolsNotRunning)}).Draw(t, "tools"),
		"guest.guestStateChangeSupported": rapid.Bool().Draw(t, "state change"),
		"guest.customizationInfo": &types.GuestInfoCustomizationInfo{
			CustomizationStatus: string(rapid.SampledFrom(types.GuestInfoCustomizationStatus("").Values()).Draw(t, "customization")),
			ErrorMsg:            rapid.SampledFrom([]string{"", "NicSettingMismatch"}).Draw(t, "customization error"),
		},
		"guestHeartbeatStatus": rapid.SampledFrom([]types.ManagedEntityStatus{types.ManagedEntityStatusGreen,
			types.ManagedEntityStatusYellow, types.ManagedEntityStatusRed}).Draw(t, "heartbeat"),
	}
	var out []types.PropertyChange
	for _, name := range slices.Sorted(maps.Keys(set)) {
		out = append(out, types.PropertyChange{Name: name, Op: types.PropertyChangeOpAssign, Val: set[name]})
	}
	return out
}

// TestFields_Properties: for any set of fields, a VM read with only the
// properties the set watches (what vCenter would send its watch) is the VM
// read whole with the other fields cleared (what Cached pins after a
// write); the kept parts are always there; AllFields keeps everything;
// and a Provider reads every property.
func TestFields_Properties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := Fields(rapid.UintRange(0, uint(AllFields)).Draw(t, "fields"))
		changes := allChanges(t)
		whole := &mo.VirtualMachine{}
		whole.Self = types.ManagedObjectReference{Type: "VirtualMachine", Value: "vm-1"}
		mo.ApplyPropertyChange(whole, changes)
		watched := &mo.VirtualMachine{}
		watched.Self = whole.Self
		props := f.props()
		for _, c := range changes {
			if slices.Contains(props, c.Name) {
				mo.ApplyPropertyChange(watched, []types.PropertyChange{c})
			}
		}
		var none *Provider // remembers nothing
		full := none.read(whole)
		if diff := cmp.Diff(f.keep(full), none.read(watched)); diff != "" {
			t.Fatalf("fields %b: kept VM (-keep +watched):\n%s", f, diff)
		}
		kept := vmprovider.VM{Name: full.Name, InstanceUUID: full.InstanceUUID, Power: full.Power, Owner: full.Owner,
			OwnerName: full.OwnerName, Zone: full.Zone, Revision: full.Revision, BaseRevision: full.BaseRevision,
			CPUs: full.CPUs, MemoryMiB: full.MemoryMiB, CPUHotAdd: full.CPUHotAdd, CPUHotRemove: full.CPUHotRemove,
			MemoryHotAdd: full.MemoryHotAdd, Heartbeat: vmprovider.HeartbeatGray, Unreachable: full.Unreachable,
			CoresPerSocket: full.CoresPerSocket, MemoryHotAddLimitMiB: full.MemoryHotAddLimitMiB,
			MemoryHotAddIncrementMiB: full.MemoryHotAddIncrementMiB, Failed: full.Failed}
		if diff := cmp.Diff(kept, Fields(0).keep(full)); diff != "" {
			t.Fatalf("the parts always kept (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(full, AllFields.keep(full)); diff != "" {
			t.Fatalf("AllFields dropped something (-want +got):\n%s", diff)
		}
		if !cmp.Equal(f.keep(f.keep(full)), f.keep(full)) {
			t.Fatalf("keep is not idempotent")
		}
		drawn := make([]string, 0, len(changes))
		for _, c := range changes {
			drawn = append(drawn, c.Name)
		}
		if diff := cmp.Diff(slices.Sorted(slices.Values(drawn)), slices.Sorted(slices.Values(vmProps))); diff != "" {
			t.Fatalf("the properties a Provider reads are not those a VM's parts come from (-parts +read):\n%s", diff)
		}
		if n := len(props); n != len(slices.Compact(slices.Sorted(slices.Values(props)))) {
			t.Fatalf("fields %b watch a property twice: %v", f, props)
		}
	})
}
