package vcsim

import (
	"context"
	"fmt"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// ThirdCluster is the cluster the zone tests, the demo and the chaos
// suite add (AddCluster) beside the model's DC0_C0 and DC0_C1.
const ThirdCluster = "DC0_C2"

// Zones are three zones, one per cluster of a simulator to which
// ThirdCluster was added: zone-a, zone-b and zone-c in DC0_C0, DC0_C1 and
// DC0_C2.
func Zones() map[string]vmprovider.Placement {
	return map[string]vmprovider.Placement{
		"zone-a": {ResourcePool: "/DC0/host/DC0_C0"},
		"zone-b": {ResourcePool: "/DC0/host/DC0_C1"},
		"zone-c": {ResourcePool: "/DC0/host/" + ThirdCluster},
	}
}

// AddCluster adds a cluster called name, with one host (name_H0), to the
// simulator's datacenter DC0, over the API as a vCenter administrator
// would: a third failure domain beside DC0_C0 and DC0_C1, without the
// VMs the simulator would make for a cluster in its model.
func (s *Sim) AddCluster(ctx context.Context, name string) error {
	vc, logout, err := vsphere.Connect(ctx, s.Config())
	if err != nil {
		return err
	}
	defer func() { _ = logout(context.WithoutCancel(ctx)) }()
	dc, err := find.NewFinder(vc, true).Datacenter(ctx, "DC0")
	if err != nil {
		return err
	}
	folders, err := dc.Folders(ctx)
	if err != nil {
		return err
	}
	cluster, err := folders.HostFolder.CreateCluster(ctx, name, types.ClusterConfigSpecEx{})
	if err != nil {
		return fmt.Errorf("vcsim: create cluster %s: %w", name, err)
	}
	task, err := cluster.AddHost(ctx, types.HostConnectSpec{HostName: name + "_H0", UserName: "root", Password: "secret"}, true, nil, nil)
	var info *types.TaskInfo
	if err == nil {
		info, err = task.WaitForResult(ctx)
	}
	if err != nil {
		return fmt.Errorf("vcsim: add a host to %s: %w", name, err)
	}
	// The host sees the datastore the provider clones to, as the model's
	// hosts do, and vCenter lists it on the cluster too
	// (ClusterComputeResource.datastore); the simulator adds a host with
	// no datastore, and its PlaceVm panics on a cluster without one. The
	// datastore's own list of mounts (Datastore.host) is left as it was:
	// nothing here reads it.
	hostRef, ok := info.Result.(types.ManagedObjectReference)
	if !ok {
		return fmt.Errorf("vcsim: add a host to %s: the task returned %T", name, info.Result)
	}
	ds, err := find.NewFinder(vc, false).Datastore(ctx, "/DC0/datastore/"+s.Config().Datastore)
	if err != nil {
		return fmt.Errorf("vcsim: find the datastore for %s: %w", name, err)
	}
	m := s.Model.Map()
	host, hok := m.Get(hostRef).(*simulator.HostSystem)
	cl, cok := m.Get(cluster.Reference()).(*simulator.ClusterComputeResource)
	if !hok || !cok {
		return fmt.Errorf("vcsim: cluster %s or its host not in the simulator", name)
	}
	sc := &simulator.Context{Context: ctx, Map: m}
	m.WithLock(sc, host, func() { host.Datastore = append(host.Datastore, ds.Reference()) })
	m.WithLock(sc, cl, func() { cl.Datastore = append(cl.Datastore, ds.Reference()) })
	// The template's network adapter is on the distributed switch's port
	// group: the host joins the switch, as an administrator adds a new
	// host to it, so that a clone placed on the host can keep it.
	net, err := find.NewFinder(vc, false).Network(ctx, "/DC0/network/DVS0")
	if err != nil {
		return fmt.Errorf("vcsim: find the distributed switch: %w", err)
	}
	dvs, ok := net.(*object.DistributedVirtualSwitch)
	if !ok {
		return fmt.Errorf("vcsim: /DC0/network/DVS0 is a %T, not a distributed switch", net)
	}
	task, err = dvs.Reconfigure(ctx, &types.DVSConfigSpec{Host: []types.DistributedVirtualSwitchHostMemberConfigSpec{
		{Operation: string(types.ConfigSpecOperationAdd), Host: hostRef}}})
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		return fmt.Errorf("vcsim: add %s's host to the distributed switch: %w", name, err)
	}
	return nil
}

// ResourcePool finds the resource pool at path (such as
// /DC0/host/DC0_C2/Resources) over the API: what Faults.Refuse names to
// refuse clones into one cluster.
func (s *Sim) ResourcePool(ctx context.Context, path string) (types.ManagedObjectReference, error) {
	vc, logout, err := vsphere.Connect(ctx, s.Config())
	if err != nil {
		return types.ManagedObjectReference{}, err
	}
	defer func() { _ = logout(context.WithoutCancel(ctx)) }()
	pool, err := find.NewFinder(vc, false).ResourcePool(ctx, path)
	if err != nil {
		return types.ManagedObjectReference{}, fmt.Errorf("vcsim: find resource pool %s: %w", path, err)
	}
	return pool.Reference(), nil
}
