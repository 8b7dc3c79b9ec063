package vsphere_test

import (
	"context"
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// TestCopy_SameNameElsewhere: a copy of a replica filed, under the
// replica's own name, in a folder beside the replica's (names are unique
// per folder only) is never taken for the replica: Get, and a Delete by
// the owner, find the replica whichever the inventory lists first, and the
// copy is left alone. The clone asks vCenter to record the provider's
// managed-by mark, which the vSphere Client shows (read from the request:
// the simulator's clone keeps only the ExtraConfig, InstanceUuid, CPUs and
// memory of the spec's config).
func TestCopy_SameNameElsewhere(t *testing.T) {
	faults, sim, p := startCounted(t)
	ctx := context.Background()
	c, err := simulatorClient(ctx, sim)
	if err != nil {
		t.Fatal(err)
	}
	vmFolder := object.NewFolder(c, mustFolder(t, sim.Model, "vm"))
	copies, err := vmFolder.CreateFolder(ctx, "a-copies") // listed before b-replicas
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vmFolder.CreateFolder(ctx, "b-replicas"); err != nil {
		t.Fatal(err)
	}
	spec := vmprovider.Spec{Name: "web-0", Owner: ownerA, Placement: vmprovider.Placement{
		ResourcePool: "/DC0/host/DC0_C0", Folder: "/DC0/vm/b-replicas", Datastore: "LocalDS_0",
	}}
	clones := faults.Record("CloneVM_Task")
	made, err := p.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	clones.Stop()
	reqs, err := clones.Requests()
	if err != nil || len(reqs) != 1 {
		t.Fatalf("recorded clones %v, %v; want one", reqs, err)
	}
	if mb := reqs[0].(*types.CloneVM_Task).Spec.Config.ManagedBy; mb == nil || mb.ExtensionKey != vsphere.ManagedByExtension || mb.Type != vsphere.ManagedByType {
		t.Errorf("the clone's config.managedBy = %+v, want %s / %s", mb, vsphere.ManagedByExtension, vsphere.ManagedByType)
	}
	replica := object.NewVirtualMachine(c, mustRef(t, sim, "web-0"))
	var m mo.VirtualMachine
	if err := replica.Properties(ctx, replica.Reference(), []string{"config.extraConfig"}, &m); err != nil {
		t.Fatal(err)
	}
	// vCenter copies the ExtraConfig into a clone; the simulator keeps
	// only the spec's, so the spec carries it here.
	run(t, "copy web-0", func(ctx context.Context) (*object.Task, error) {
		return replica.Clone(ctx, copies, "web-0", types.VirtualMachineCloneSpec{Config: &types.VirtualMachineConfigSpec{ExtraConfig: m.Config.ExtraConfig}})
	})
	if n := count(t, sim, "web-0"); n != 2 {
		t.Fatalf("%d VMs called web-0, want the replica and its copy", n)
	}

	if got, err := p.Get(ctx, "web-0"); err != nil || got.InstanceUUID != made.InstanceUUID || got.Owner != ownerA.UID {
		t.Errorf("Get(web-0) = %+v, %v; want the replica (%s)", got, err, made.InstanceUUID)
	}
	if err := p.Delete(ctx, "web-0", ownerA.UID); err != nil {
		t.Fatalf("Delete(web-0): %v", err)
	}
	var left []string
	for _, o := range sim.Model.Map().All("VirtualMachine") {
		if vm := o.(*simulator.VirtualMachine); vm.Name == "web-0" {
			left = append(left, sim.Model.Map().Get(*vm.Parent).(*simulator.Folder).Name)
		}
	}
	if len(left) != 1 || left[0] != "a-copies" {
		t.Errorf("after Delete, VMs called web-0 are in folders %v; want only the copy's, a-copies", left)
	}
}
