package vsphere

import (
	"regexp"
	"testing"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	"pgregory.net/rapid"
)

// TestInstanceUUID_NamesItsOwner: an instance UUID made for an owner is a
// well-formed version 8 UUID that names that owner and no other, and two
// made for one owner differ.
func TestInstanceUUID_NamesItsOwner(t *testing.T) {
	form := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	rapid.Check(t, func(t *rapid.T) {
		owner := rapid.StringN(1, 40, -1).Draw(t, "owner")
		other := rapid.StringN(1, 40, -1).Filter(func(s string) bool { return s != owner }).Draw(t, "other")
		u := newInstanceUUID(owner)
		if !form.MatchString(u) {
			t.Fatalf("%q is not a version 8 UUID", u)
		}
		if !ownsUUID(u, owner) {
			t.Fatalf("%q does not name its owner %q", u, owner)
		}
		if ownsUUID(u, other) {
			t.Fatalf("%q names %q too", u, other)
		}
		if ownsUUID(u, "") {
			t.Fatalf("%q names the empty owner", u)
		}
		if v := newInstanceUUID(owner); v == u {
			t.Fatalf("two UUIDs for %q are both %q", owner, u)
		}
	})
	for _, u := range []string{"", "not-a-uuid", "42316b3c-5a2d-11ee-8c99-0242ac120002", "4231"} {
		if ownsUUID(u, "uid-a") {
			t.Errorf("ownsUUID(%q) = true for a UUID vCenter made", u)
		}
	}
}

// TestRead_Unreadable: a VM read as vCenter shows one it cannot read (its
// connection state not connected, its configuration unset, or set without
// the instance UUID every configuration has, as a watch may see it in
// between) is reported unreachable with what was last read of it; such a
// read never replaces what is remembered; a VM never read is known by its
// summary's instance UUID alone.
func TestRead_Unreadable(t *testing.T) {
	p := &Provider{}
	ref := types.ManagedObjectReference{Type: "VirtualMachine", Value: "vm-7"}
	uuid := newInstanceUUID("uid-a")
	readable := &mo.VirtualMachine{Config: &types.VirtualMachineConfigInfo{InstanceUuid: uuid,
		ExtraConfig: []types.BaseOptionValue{&types.OptionValue{Key: KeyOwnerUID, Value: "uid-a"},
			&types.OptionValue{Key: KeyZone, Value: "z1"}, &types.OptionValue{Key: KeyIdentity, Value: uuid}}}}
	readable.Self, readable.Name = ref, "web-0"
	readable.Runtime.ConnectionState = types.VirtualMachineConnectionStateConnected
	readable.Summary.Config.InstanceUuid = uuid
	if vm := p.read(readable); vm.Unreachable != "" || vm.Owner != "uid-a" || vm.Zone != "z1" {
		t.Fatalf("read(readable) = %+v", vm)
	}
	for _, tc := range []struct {
		name  string
		state types.VirtualMachineConnectionState
		cfg   *types.VirtualMachineConfigInfo
		want  string
	}{
		{"inaccessible", types.VirtualMachineConnectionStateInaccessible, nil, "inaccessible"},
		{"disconnected, config kept", types.VirtualMachineConnectionStateDisconnected, readable.Config, "disconnected"},
		{"orphaned", types.VirtualMachineConnectionStateOrphaned, nil, "orphaned"},
		{"connected, config unset", types.VirtualMachineConnectionStateConnected, nil, "no configuration"},
		{"connected, config without its UUID", types.VirtualMachineConnectionStateConnected, &types.VirtualMachineConfigInfo{}, "no configuration"},
	} {
		m := *readable
		m.Runtime.ConnectionState, m.Config = tc.state, tc.cfg
		vm := p.read(&m)
		if vm.Unreachable != tc.want || vm.Owner != "uid-a" || vm.Zone != "z1" || vm.InstanceUUID != uuid {
			t.Errorf("%s: read = %+v, want unreachable %q with the marks last read", tc.name, vm, tc.want)
		}
		if got, ok := claims(vm, "uid-a"); !ok || got.Owner != "uid-a" {
			t.Errorf("%s: claims = %+v, %t; want the owner's", tc.name, got, ok)
		}
	}
	fresh := &Provider{}
	m := *readable
	m.Runtime.ConnectionState, m.Config = types.VirtualMachineConnectionStateInaccessible, nil
	vm := fresh.read(&m)
	if vm.Owner != "" || vm.InstanceUUID != uuid || vm.Unreachable != "inaccessible" {
		t.Fatalf("a provider that never read it: read = %+v", vm)
	}
	if got, ok := claims(vm, "uid-a"); !ok || got.Owner != "uid-a" {
		t.Errorf("claims by UUID = %+v, %t; want uid-a's, with its Owner set", got, ok)
	}
	if _, ok := claims(vm, "uid-b"); ok {
		t.Errorf("another owner claims it")
	}
}
