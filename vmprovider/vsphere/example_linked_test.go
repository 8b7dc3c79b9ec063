package vsphere_test

import (
	"context"
	"fmt"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/vim25/mo"

	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// Make linked clones: the first takes a snapshot of the template, which
// had none, and every one is made from it. The template keeps that
// snapshot for as long as linked clones of it exist.
func ExampleProvider_Create_linkedClone() {
	cfg, stop := vcsim("administrator@vsphere.local", "example-pw")
	defer stop()
	ctx := context.Background()
	p, err := vsphere.New(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = p.Close(ctx) }()

	owner := vmprovider.Owner{UID: "uid-web", Name: "default/web"}
	for _, name := range []string{"web-0", "web-1"} {
		vm, err := p.Create(ctx, vmprovider.Spec{Name: name, Owner: owner, LinkedClone: true})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("created", vm.Name)
	}

	// The template's snapshots, as vCenter lists them.
	c, logout, err := vsphere.Connect(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = logout(ctx) }()
	tmpl, err := find.NewFinder(c).VirtualMachine(ctx, "/DC0/vm/"+cfg.Template)
	if err != nil {
		fmt.Println(err)
		return
	}
	var m mo.VirtualMachine
	if err := tmpl.Properties(ctx, tmpl.Reference(), []string{"snapshot"}, &m); err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range m.Snapshot.RootSnapshotList {
		fmt.Println("template snapshot:", s.Name, "current:", s.Snapshot == *m.Snapshot.CurrentSnapshot)
	}
	// Output:
	// created web-0
	// created web-1
	// template snapshot: replicakit-linked-clone current: true
}
