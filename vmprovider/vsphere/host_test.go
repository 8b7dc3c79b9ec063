package vsphere_test

import (
	"context"
	"strings"
	"testing"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/vmprovider"
)

// TestCreate_ClusterWithoutDRS: a clone into a cluster whose DRS is off
// names a host, as vCenter requires (the simulator's gate answers a clone
// that names none with InvalidArgument for spec.pool, as vCenter does):
// a connected host out of maintenance mode with the fewest VMs. With every
// host in maintenance mode the create fails, saying DRS is off and why no
// host would do.
func TestCreate_ClusterWithoutDRS(t *testing.T) {
	sim, p := start(t)
	ctx := context.Background()
	cluster := findCluster(t, sim, "/DC0/host/DC0_C1") // the provider's pool
	setDRS(t, cluster, false)
	hosts := clusterHosts(t, sim, cluster)

	fewest := hosts[0]
	for _, h := range hosts[1:] {
		if len(h.Vm) < len(fewest.Vm) || len(h.Vm) == len(fewest.Vm) && h.Name < fewest.Name {
			fewest = h
		}
	}
	vm, err := p.Create(ctx, vmprovider.Spec{Name: "nodrs-0", Owner: ownerA})
	if err != nil {
		t.Fatalf("Create into a cluster without DRS: %v", err)
	}
	if got := hostOf(t, sim, vm.Name); got != fewest.Name {
		t.Errorf("VM %s on host %s, want %s, the cluster's host with the fewest VMs", vm.Name, got, fewest.Name)
	}

	// All but the last host in maintenance mode: the next VM goes there.
	for _, h := range hosts[:len(hosts)-1] {
		maintenance(t, sim, h.Self, true)
	}
	vm, err = p.Create(ctx, vmprovider.Spec{Name: "nodrs-1", Owner: ownerA})
	if err != nil {
		t.Fatalf("Create with one host out of maintenance mode: %v", err)
	}
	if got, want := hostOf(t, sim, vm.Name), hosts[len(hosts)-1].Name; got != want {
		t.Errorf("VM %s on host %s, want %s, the only host out of maintenance mode", vm.Name, got, want)
	}

	// The one host left does not mount the datastore the clone goes to.
	last := hosts[len(hosts)-1]
	mounted := last.Datastore
	setHostDatastores(sim, last, nil)
	_, err = p.Create(ctx, vmprovider.Spec{Name: "nodrs-2", Owner: ownerA})
	if err == nil || !strings.Contains(err.Error(), "does not mount datastore") {
		t.Fatalf("Create with the one host left not mounting the datastore: %v, want an error saying so", err)
	}
	setHostDatastores(sim, last, mounted)

	maintenance(t, sim, last.Self, true)
	_, err = p.Create(ctx, vmprovider.Spec{Name: "nodrs-2", Owner: ownerA})
	if err == nil || !strings.Contains(err.Error(), "DRS off") || !strings.Contains(err.Error(), "maintenance mode") {
		t.Fatalf("Create with every host in maintenance mode: %v, want an error saying DRS is off and the hosts are in maintenance mode", err)
	}
	if n := count(t, sim, "nodrs-2"); n != 0 {
		t.Errorf("%d VMs nodrs-2 after the failed create, want none", n)
	}
}

// TestCreate_ClusterWithDRS: with DRS on, a clone goes where DRS's
// placement (PlaceVm) recommends, asked once per create.
func TestCreate_ClusterWithDRS(t *testing.T) {
	faults, sim, p := startCounted(t)
	ctx := context.Background()
	before := faults.Calls()["PlaceVm"]
	vm, err := p.Create(ctx, vmprovider.Spec{Name: "drs-0", Owner: ownerA})
	if err != nil {
		t.Fatal(err)
	}
	if n := faults.Calls()["PlaceVm"] - before; n != 1 {
		t.Errorf("PlaceVm called %d times for one create, want 1", n)
	}
	cluster := findCluster(t, sim, "/DC0/host/DC0_C1")
	in := false
	for _, h := range clusterHosts(t, sim, cluster) {
		in = in || h.Name == hostOf(t, sim, vm.Name)
	}
	if !in {
		t.Errorf("VM %s on host %s, outside cluster DC0_C1", vm.Name, hostOf(t, sim, vm.Name))
	}
}

// findCluster finds the cluster at path, over the API.
func findCluster(t *testing.T, sim *vcsimtest.Sim, path string) *object.ClusterComputeResource {
	t.Helper()
	c, err := simulatorClient(context.Background(), sim)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := find.NewFinder(c).ClusterComputeResource(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// setDRS turns the cluster's DRS on or off, as an administrator would.
func setDRS(t *testing.T, cluster *object.ClusterComputeResource, on bool) {
	t.Helper()
	task, err := cluster.Reconfigure(context.Background(), &types.ClusterConfigSpecEx{
		DrsConfig: &types.ClusterDrsConfigInfo{Enabled: types.NewBool(on)}}, true)
	if err == nil {
		err = task.Wait(context.Background())
	}
	if err != nil {
		t.Fatalf("turn DRS %v: %v", on, err)
	}
}

// clusterHosts returns the cluster's hosts as the simulator holds them,
// sorted by name.
func clusterHosts(t *testing.T, sim *vcsimtest.Sim, cluster *object.ClusterComputeResource) []*simulator.HostSystem {
	t.Helper()
	cl := sim.Model.Map().Get(cluster.Reference()).(*simulator.ClusterComputeResource)
	var hosts []*simulator.HostSystem
	for _, ref := range cl.Host {
		hosts = append(hosts, sim.Model.Map().Get(ref).(*simulator.HostSystem))
	}
	if len(hosts) < 2 {
		t.Fatalf("cluster %s has %d hosts, want two or more", cl.Name, len(hosts))
	}
	return hosts
}

// hostOf names the host the VM called name runs on.
func hostOf(t *testing.T, sim *vcsimtest.Sim, name string) string {
	t.Helper()
	vm := sim.Model.Map().Get(mustRef(t, sim, name)).(*simulator.VirtualMachine)
	return sim.Model.Map().Get(*vm.Runtime.Host).(*simulator.HostSystem).Name
}

// maintenance puts the host into maintenance mode, or takes it out.
func maintenance(t *testing.T, sim *vcsimtest.Sim, ref types.ManagedObjectReference, on bool) {
	t.Helper()
	c, err := simulatorClient(context.Background(), sim)
	if err != nil {
		t.Fatal(err)
	}
	h := object.NewHostSystem(c, ref)
	var task *object.Task
	if on {
		task, err = h.EnterMaintenanceMode(context.Background(), 0, false, nil)
	} else {
		task, err = h.ExitMaintenanceMode(context.Background(), 0)
	}
	if err == nil {
		err = task.Wait(context.Background())
	}
	if err != nil {
		t.Fatalf("maintenance mode %v: %v", on, err)
	}
}

// setHostDatastores sets the datastores the host mounts, in the
// simulator's inventory.
func setHostDatastores(sim *vcsimtest.Sim, h *simulator.HostSystem, ds []types.ManagedObjectReference) {
	m := sim.Model.Map()
	m.WithLock(&simulator.Context{Context: context.Background(), Map: m}, h, func() { h.Datastore = ds })
}
