package vsphere

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// chooseHost names the host of a clone into clone.Location.Pool where
// vCenter needs one. vSphere's API reference for
// VirtualMachineRelocateSpec.host: with a resource pool and no host, a
// pool of a standalone host uses that host, a pool of a DRS-enabled
// cluster a host DRS selects, and a pool of a cluster without DRS makes
// the call fail with InvalidArgument. So in a cluster the host is chosen
// here: DRS's recommendation (ClusterComputeResource.PlaceVm) where DRS is
// on, and where it is off the connected host out of maintenance mode with
// the fewest VMs (the first by name on a tie). An error says which way
// failed, and in which cluster.
func (p *Provider) chooseHost(ctx context.Context, tmpl *object.VirtualMachine, name string, clone *types.VirtualMachineCloneSpec) error {
	pc := property.DefaultCollector(p.client)
	var pool mo.ResourcePool
	if err := pc.RetrieveOne(ctx, *clone.Location.Pool, []string{"owner"}, &pool); err != nil {
		return fmt.Errorf("read the owner of resource pool %s: %w", clone.Location.Pool.Value, err)
	}
	if pool.Owner.Type != "ClusterComputeResource" {
		return nil // a standalone host's pool: vCenter uses that host
	}
	var cluster mo.ClusterComputeResource
	if err := pc.RetrieveOne(ctx, pool.Owner, []string{"name", "host", "configurationEx"}, &cluster); err != nil {
		return fmt.Errorf("read cluster %s: %w", pool.Owner.Value, err)
	}
	if drsOn(cluster) {
		host, err := p.placeByDRS(ctx, cluster, tmpl, name, clone)
		if err != nil {
			return fmt.Errorf("cluster %s has DRS on, and its placement (PlaceVm) chose no host: %w", cluster.Name, err)
		}
		clone.Location.Host = &host
		return nil
	}
	host, err := p.placeByHosts(ctx, cluster)
	if err != nil {
		return fmt.Errorf("cluster %s has DRS off, so a host must be named, and %w", cluster.Name, err)
	}
	clone.Location.Host = &host
	return nil
}

// drsOn reports whether the cluster's DRS is enabled.
func drsOn(c mo.ClusterComputeResource) bool {
	cfg, ok := c.ConfigurationEx.(*types.ClusterConfigInfoEx)
	return ok && cfg.DrsConfig.Enabled != nil && *cfg.DrsConfig.Enabled
}

// placeByDRS asks the cluster's DRS where the clone goes, on the clone's
// datastore, and returns the host of its first recommendation.
func (p *Provider) placeByDRS(ctx context.Context, cluster mo.ClusterComputeResource, tmpl *object.VirtualMachine, name string, clone *types.VirtualMachineCloneSpec) (types.ManagedObjectReference, error) {
	src := tmpl.Reference()
	spec := types.PlacementSpec{
		PlacementType: string(types.PlacementSpecPlacementTypeClone),
		Vm:            &src,
		CloneSpec:     clone,
		CloneName:     name,
	}
	if clone.Location.Datastore != nil {
		spec.Datastores = []types.ManagedObjectReference{*clone.Location.Datastore}
	}
	res, err := methods.PlaceVm(ctx, p.client, &types.PlaceVm{This: cluster.Self, PlacementSpec: spec})
	if err != nil {
		return types.ManagedObjectReference{}, err
	}
	for _, rec := range res.Returnval.Recommendations {
		for _, a := range rec.Action {
			if pa, ok := a.(*types.PlacementAction); ok && pa.TargetHost != nil {
				return *pa.TargetHost, nil
			}
		}
	}
	if f := res.Returnval.DrsFault; f != nil {
		for _, byVM := range f.FaultsByVm {
			if fs := byVM.GetClusterDrsFaultsFaultsByVm().Fault; len(fs) > 0 {
				return types.ManagedObjectReference{}, fmt.Errorf("DRS answered: %s", fs[0].LocalizedMessage)
			}
		}
	}
	return types.ManagedObjectReference{}, fmt.Errorf("DRS recommended no host")
}

// placeByHosts chooses among the cluster's hosts: connected, out of
// maintenance mode, the fewest VMs, then the first by name.
func (p *Provider) placeByHosts(ctx context.Context, cluster mo.ClusterComputeResource) (types.ManagedObjectReference, error) {
	if len(cluster.Host) == 0 {
		return types.ManagedObjectReference{}, fmt.Errorf("it has no host")
	}
	var hosts []mo.HostSystem
	if err := property.DefaultCollector(p.client).Retrieve(ctx, cluster.Host,
		[]string{"name", "vm", "runtime.connectionState", "runtime.inMaintenanceMode"}, &hosts); err != nil {
		return types.ManagedObjectReference{}, fmt.Errorf("reading its hosts failed: %w", err)
	}
	var up []mo.HostSystem
	var down []string
	for _, h := range hosts {
		switch {
		case h.Runtime.ConnectionState != types.HostSystemConnectionStateConnected:
			down = append(down, fmt.Sprintf("%s (%s)", h.Name, h.Runtime.ConnectionState))
		case h.Runtime.InMaintenanceMode:
			down = append(down, h.Name+" (in maintenance mode)")
		default:
			up = append(up, h)
		}
	}
	if len(up) == 0 {
		slices.Sort(down)
		return types.ManagedObjectReference{}, fmt.Errorf("none of its hosts is connected and out of maintenance mode: %s", strings.Join(down, ", "))
	}
	best := slices.MinFunc(up, func(a, b mo.HostSystem) int {
		return cmp.Or(cmp.Compare(len(a.Vm), len(b.Vm)), cmp.Compare(a.Name, b.Name))
	})
	return best.Self, nil
}
