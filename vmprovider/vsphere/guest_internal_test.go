package vsphere

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vmware/govmomi/vim25/types"
)

// TestGuestAddresses_PseudoNICs: the addresses of adapters the guest
// reports that are no device of the VM (docker0, a CNI bridge, which VMware
// Tools report with deviceConfigId -1) are left out; those of the VM's
// adapters, the first one's key included, are kept.
func TestGuestAddresses_PseudoNICs(t *testing.T) {
	g := &types.GuestInfo{IpAddress: "10.0.0.5", Net: []types.GuestNicInfo{
		{DeviceConfigId: 4000, IpAddress: []string{"10.0.0.5", "fe80::1"}},
		{DeviceConfigId: -1, IpAddress: []string{"172.17.0.1"}},    // docker0
		{DeviceConfigId: -1, IpAddress: []string{"10.244.0.1"}},    // cni0
		{DeviceConfigId: 4001, IpAddress: []string{"192.168.7.9"}}, // a second adapter
	}}
	if diff := cmp.Diff([]string{"10.0.0.5", "192.168.7.9"}, guestAddresses(g)); diff != "" {
		t.Errorf("guestAddresses (-want +got):\n%s", diff)
	}
}
