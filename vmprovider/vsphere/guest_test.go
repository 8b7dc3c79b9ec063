package vsphere_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/vmprovider"
)

// TestCreate_NetworksAndCloudInit: the template's adapter moves to the
// first network, a second adapter joins the second, and cloud-init's
// metadata reaches the guest as its hostname and addresses, which the
// provider reports.
func TestCreate_NetworksAndCloudInit(t *testing.T) {
	sim, p := start(t)
	ctx := context.Background()
	spec := vmprovider.Spec{
		Name: "web-0", Owner: ownerA, PowerOn: true,
		Networks: []string{"DC0_DVPG0", "VM Network"},
		CloudInit: &vmprovider.CloudInit{
			UserData: "#cloud-config\npackages: [nginx]\n",
			MetaData: "local-hostname: web-0\nnetwork:\n  version: 2\n  ethernets:\n    eth0:\n      addresses: [10.20.0.5/24]\n    eth1:\n      addresses: [192.168.1.7/24]\n",
		},
	}
	vm, err := p.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	want := vmprovider.VM{Name: "web-0", Hostname: "web-0", IPAddresses: []string{"10.20.0.5", "192.168.1.7"}, Power: vmprovider.PoweredOn, Heartbeat: vmprovider.HeartbeatGray}
	got := vmprovider.VM{Name: vm.Name, Hostname: vm.Hostname, IPAddresses: vm.IPAddresses, Power: vm.Power, Heartbeat: vm.Heartbeat, ToolsRunning: vm.ToolsRunning}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("created VM (-want +got):\n%s", diff)
	}

	obj := sim.Model.Map().Get(mustRef(t, sim, "web-0")).(*simulator.VirtualMachine)
	cards := object.VirtualDeviceList(obj.Config.Hardware.Device).SelectByType((*types.VirtualEthernetCard)(nil))
	var backings []string
	for _, c := range cards {
		switch b := c.GetVirtualDevice().Backing.(type) {
		case *types.VirtualEthernetCardDistributedVirtualPortBackingInfo:
			pg := sim.Model.Map().Get(types.ManagedObjectReference{Type: "DistributedVirtualPortgroup", Value: b.Port.PortgroupKey})
			backings = append(backings, "dvpg:"+pg.(*simulator.DistributedVirtualPortgroup).Name)
		case *types.VirtualEthernetCardNetworkBackingInfo:
			backings = append(backings, "net:"+b.DeviceName)
		default:
			backings = append(backings, "other")
		}
	}
	if diff := cmp.Diff([]string{"dvpg:DC0_DVPG0", "net:VM Network"}, backings); diff != "" {
		t.Errorf("network adapters (-want +got):\n%s", diff)
	}

	listed, err := p.List(ctx, ownerA.UID)
	if err != nil || len(listed) != 1 || !slices.Equal(listed[0].IPAddresses, want.IPAddresses) || listed[0].Hostname != "web-0" {
		t.Errorf("List = %+v, %v; want web-0 with its hostname and addresses", listed, err)
	}
}

// TestCreate_GuestHeartbeat: the provider reports the tools and heartbeat
// the guest shows (set here behind its back, as VMware Tools would).
func TestCreate_GuestHeartbeat(t *testing.T) {
	sim, p := start(t)
	ctx := context.Background()
	if _, err := p.Create(ctx, vmprovider.Spec{Name: "hb", Owner: ownerA, PowerOn: true}); err != nil {
		t.Fatal(err)
	}
	obj := sim.Model.Map().Get(mustRef(t, sim, "hb")).(*simulator.VirtualMachine)
	sim.Model.Map().Update(sim.Model.Service.Context, obj, []types.PropertyChange{
		{Name: "guest.toolsRunningStatus", Val: string(types.VirtualMachineToolsRunningStatusGuestToolsRunning)},
		{Name: "guestHeartbeatStatus", Val: types.ManagedEntityStatusGreen},
	})
	vm, err := p.Get(ctx, "hb")
	if err != nil {
		t.Fatal(err)
	}
	if !vm.ToolsRunning || vm.Heartbeat != vmprovider.HeartbeatGreen {
		t.Errorf("Get = tools %v heartbeat %q, want running and green", vm.ToolsRunning, vm.Heartbeat)
	}
	if !vmprovider.ReadyWhenGuestHeartbeat.Ready(vm) || vmprovider.ReadyWhenIPAddress.Ready(vm) {
		t.Errorf("readiness of %+v: want ready by heartbeat and not by address", vm)
	}
}

// TestCreate_PlacementOverride: a VM placed in another cluster, datastore
// and a folder below the provider's is created there, and Get, List and
// Delete still find it.
func TestCreate_PlacementOverride(t *testing.T) {
	sim, p := start(t)
	ctx := context.Background()
	c, err := simulatorClient(ctx, sim)
	if err != nil {
		t.Fatal(err)
	}
	vmFolder := object.NewFolder(c, mustFolder(t, sim.Model, "vm"))
	if _, err := vmFolder.CreateFolder(ctx, "team-a"); err != nil {
		t.Fatal(err)
	}
	spec := vmprovider.Spec{Name: "placed", Owner: ownerA, Placement: vmprovider.Placement{
		ResourcePool: "/DC0/host/DC0_C0", Folder: "/DC0/vm/team-a", Datastore: "LocalDS_0",
	}}
	if _, err := p.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	obj := sim.Model.Map().Get(mustRef(t, sim, "placed")).(*simulator.VirtualMachine)
	pool := sim.Model.Map().Get(*obj.ResourcePool).(*simulator.ResourcePool)
	if cl, ok := sim.Model.Map().Get(pool.Owner).(*simulator.ClusterComputeResource); !ok || cl.Name != "DC0_C0" {
		t.Errorf("placed in a pool of %v, want cluster DC0_C0", pool.Owner)
	}
	if parent := sim.Model.Map().Get(*obj.Parent).(*simulator.Folder); parent.Name != "team-a" {
		t.Errorf("filed in folder %q, want team-a", parent.Name)
	}
	if _, err := p.Get(ctx, "placed"); err != nil {
		t.Errorf("Get: %v", err)
	}
	if l, err := p.List(ctx, ownerA.UID); err != nil || len(l) != 1 {
		t.Errorf("List = %v, %v; want the placed VM", l, err)
	}
	if err := p.Delete(ctx, "placed", ownerA.UID); err != nil {
		t.Fatal(err)
	}
	if n := count(t, sim, "placed"); n != 0 {
		t.Errorf("%d VMs called placed after Delete, want 0", n)
	}
}

// mustFolder finds a folder by name in the simulator.
func mustFolder(t *testing.T, sim *simulator.Model, name string) types.ManagedObjectReference {
	t.Helper()
	for _, ref := range sim.Map().All("Folder") {
		if f := ref.(*simulator.Folder); f.Name == name {
			return f.Self
		}
	}
	t.Fatalf("no folder %s in vcsim", name)
	return types.ManagedObjectReference{}
}

// TestCreate_InvalidSpec: a bad network, metadata or placement is an
// invalid spec naming the field, found before anything is cloned.
func TestCreate_InvalidSpec(t *testing.T) {
	sim, p := start(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		spec    vmprovider.Spec
		field   string
		missing bool // ErrPlacement: the placement is not in the inventory
	}{
		{name: "unknown network", spec: vmprovider.Spec{Networks: []string{"no-such-net"}}, field: `networks[0] "no-such-net"`},
		{name: "empty network", spec: vmprovider.Spec{Networks: []string{"VM Network", ""}}, field: "networks[1] is empty"},
		{name: "metadata not YAML", spec: vmprovider.Spec{CloudInit: &vmprovider.CloudInit{MetaData: "local-hostname: [web"}}, field: "cloudInit.metaData"},
		{name: "metadata not a mapping", spec: vmprovider.Spec{CloudInit: &vmprovider.CloudInit{MetaData: "- a\n- b\n"}}, field: "cloudInit.metaData"},
		{name: "unknown pool", spec: vmprovider.Spec{Placement: vmprovider.Placement{ResourcePool: "/DC0/host/nope"}}, field: `placement.resourcePool "/DC0/host/nope"`, missing: true},
		{name: "unknown datastore", spec: vmprovider.Spec{Placement: vmprovider.Placement{Datastore: "nope"}}, field: `placement.datastore "nope"`, missing: true},
		{name: "folder outside", spec: vmprovider.Spec{Placement: vmprovider.Placement{Folder: "/DC0/host"}}, field: `placement.folder "/DC0/host"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			spec.Name, spec.Owner, spec.PowerOn = "bad", ownerA, true
			_, err := p.Create(ctx, spec)
			if !errors.Is(err, vmprovider.ErrInvalidSpec) || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("Create = %v; want ErrInvalidSpec naming %s", err, tc.field)
			}
			if got := errors.Is(err, vmprovider.ErrPlacement); got != tc.missing {
				t.Errorf("Create = %v; ErrPlacement %v, want %v", err, got, tc.missing)
			}
			if n := count(t, sim, "bad"); n != 0 {
				t.Errorf("%d VMs left behind", n)
			}
		})
	}
}

// TestCreate_MetaDataShape: metadata that is YAML but not a mapping, or a
// mapping of the wrong shape, says so in words, not in Go types.
func TestCreate_MetaDataShape(t *testing.T) {
	_, p := start(t)
	for _, md := range []string{"just a string", "[1, 2]", "network:\n  ethernets:\n    eth0:\n      addresses: 10.0.0.1\n"} {
		_, err := p.Create(context.Background(), vmprovider.Spec{Name: "shape", Owner: ownerA, CloudInit: &vmprovider.CloudInit{MetaData: md}})
		if !errors.Is(err, vmprovider.ErrInvalidSpec) || !strings.Contains(err.Error(), "cloudInit.metaData") || strings.Contains(err.Error(), "struct {") {
			t.Errorf("metadata %q: %v; want ErrInvalidSpec naming cloudInit.metaData without Go types", md, err)
		}
	}
}
