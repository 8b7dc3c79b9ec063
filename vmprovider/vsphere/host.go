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
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// chooseHost names the host of a clone into clone.Location.Pool where
// vCenter needs one, and returns what it did, for an error to say.
// vSphere's API reference for VirtualMachineRelocateSpec.host: with a
// resource pool and no host, a pool of a standalone host uses that host,
// a pool of a DRS-enabled cluster a host DRS selects, and a pool of a
// cluster without DRS makes the call fail with InvalidArgument. So in a
// cluster the host is chosen here. Where DRS is on it is DRS's
// recommendation (ClusterComputeResource.PlaceVm); when DRS answers with
// a fault or recommends nothing, the clone names no host and vCenter's
// own DRS placement decides (and its error says why). Where DRS is off it
// is the host, connected, powered on, in neither maintenance nor standby
// mode and mounting the clone's datastore, with the fewest VMs, the first
// by name on a tie; without one the create fails, saying why of each host.
func (p *Provider) chooseHost(ctx context.Context, tmpl *object.VirtualMachine, name string, clone *types.VirtualMachineCloneSpec) (string, error) {
	pc := property.DefaultCollector(p.client)
	var pool mo.ResourcePool
	if err := pc.RetrieveOne(ctx, *clone.Location.Pool, []string{"owner"}, &pool); err != nil {
		return "", fmt.Errorf("read the owner of resource pool %s: %w", clone.Location.Pool.Value, err)
	}
	if pool.Owner.Type != "ClusterComputeResource" {
		return "", nil // a standalone host's pool: vCenter uses that host
	}
	var cluster mo.ClusterComputeResource
	if err := pc.RetrieveOne(ctx, pool.Owner, []string{"name", "host", "configurationEx"}, &cluster); err != nil {
		return "", fmt.Errorf("read cluster %s: %w", pool.Owner.Value, err)
	}
	if drsOn(cluster) {
		host, why, err := p.placeByDRS(ctx, cluster, tmpl, name, clone)
		switch {
		case err != nil:
			return "", fmt.Errorf("cluster %s has DRS on, and asking its placement (PlaceVm) failed: %w", cluster.Name, err)
		case why != "":
			return fmt.Sprintf("cluster %s has DRS on; its placement (PlaceVm) %s, so vCenter placed the clone itself", cluster.Name, why), nil
		}
		clone.Location.Host = &host
		return fmt.Sprintf("on the host DRS recommended in cluster %s", cluster.Name), nil
	}
	host, err := p.placeByHosts(ctx, cluster, clone.Location.Datastore)
	if err != nil {
		return "", fmt.Errorf("cluster %s has DRS off, so a host must be named, and %w", cluster.Name, err)
	}
	clone.Location.Host = &host
	return fmt.Sprintf("on a host chosen in cluster %s, whose DRS is off", cluster.Name), nil
}

// drsOn reports whether the cluster's DRS is enabled.
func drsOn(c mo.ClusterComputeResource) bool {
	cfg, ok := c.ConfigurationEx.(*types.ClusterConfigInfoEx)
	return ok && cfg.DrsConfig.Enabled != nil && *cfg.DrsConfig.Enabled
}

// placeByDRS asks the cluster's DRS where the clone goes, on the clone's
// datastore, and returns the host of its first recommendation; or why it
// gave none (a fault DRS answered with, or no recommendation); or the
// error of a call that did not reach it.
func (p *Provider) placeByDRS(ctx context.Context, cluster mo.ClusterComputeResource, tmpl *object.VirtualMachine, name string, clone *types.VirtualMachineCloneSpec) (types.ManagedObjectReference, string, error) {
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
	var none types.ManagedObjectReference
	res, err := methods.PlaceVm(ctx, p.client, &types.PlaceVm{This: cluster.Self, PlacementSpec: spec})
	if soap.IsSoapFault(err) {
		return none, "answered " + err.Error(), nil
	}
	if err != nil {
		return none, "", err
	}
	for _, rec := range res.Returnval.Recommendations {
		for _, a := range rec.Action {
			if pa, ok := a.(*types.PlacementAction); ok && pa.TargetHost != nil {
				return *pa.TargetHost, "", nil
			}
		}
	}
	if f := res.Returnval.DrsFault; f != nil {
		for _, byVM := range f.FaultsByVm {
			for _, fault := range byVM.GetClusterDrsFaultsFaultsByVm().Fault {
				return none, "recommended no host: " + cmp.Or(fault.LocalizedMessage, fmt.Sprintf("%T", fault.Fault)), nil
			}
		}
	}
	return none, "recommended no host", nil
}

// placeByHosts chooses among the cluster's hosts: connected, powered on,
// in neither maintenance nor standby mode, mounting store (when set); the
// fewest VMs, then the first by name.
func (p *Provider) placeByHosts(ctx context.Context, cluster mo.ClusterComputeResource, store *types.ManagedObjectReference) (types.ManagedObjectReference, error) {
	if len(cluster.Host) == 0 {
		return types.ManagedObjectReference{}, fmt.Errorf("it has no host")
	}
	var hosts []mo.HostSystem
	if err := property.DefaultCollector(p.client).Retrieve(ctx, cluster.Host, []string{"name", "vm", "datastore",
		"runtime.connectionState", "runtime.powerState", "runtime.inMaintenanceMode", "runtime.standbyMode"}, &hosts); err != nil {
		return types.ManagedObjectReference{}, fmt.Errorf("reading its hosts failed: %w", err)
	}
	var up []mo.HostSystem
	var down []string
	for _, h := range hosts {
		rt := h.Runtime
		switch {
		case rt.ConnectionState != types.HostSystemConnectionStateConnected:
			down = append(down, fmt.Sprintf("%s (%s)", h.Name, rt.ConnectionState))
		case rt.PowerState != "" && rt.PowerState != types.HostSystemPowerStatePoweredOn:
			down = append(down, fmt.Sprintf("%s (%s)", h.Name, rt.PowerState))
		case rt.InMaintenanceMode:
			down = append(down, h.Name+" (in maintenance mode)")
		case rt.StandbyMode != "" && rt.StandbyMode != string(types.HostStandbyModeNone):
			down = append(down, fmt.Sprintf("%s (standby mode %s)", h.Name, rt.StandbyMode))
		case store != nil && !slices.Contains(h.Datastore, *store):
			down = append(down, fmt.Sprintf("%s (does not mount datastore %s)", h.Name, store.Value))
		default:
			up = append(up, h)
		}
	}
	if len(up) == 0 {
		slices.Sort(down)
		return types.ManagedObjectReference{}, fmt.Errorf("none of its hosts can take the clone: %s", strings.Join(down, ", "))
	}
	best := slices.MinFunc(up, func(a, b mo.HostSystem) int {
		return cmp.Or(cmp.Compare(len(a.Vm), len(b.Vm)), cmp.Compare(a.Name, b.Name))
	})
	return best.Self, nil
}
