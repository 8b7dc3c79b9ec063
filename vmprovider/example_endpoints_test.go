package vmprovider_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vmprovidertest"
)

// Spread four VMs over two vCenters (here two in-memory Fakes; in
// production a vsphere.Provider per vCenter, each with its own
// credentials), one zone on each. When vcenter-b stops answering, its VMs
// are unknown, not gone: the pass leaves them alone and makes one VM (the
// default MaxSurge) in vcenter-a to stand in for them.
func ExampleEndpoints() {
	ctx := context.Background()
	down := false
	b := &vmprovidertest.Fake{Fail: func(op, _ string) error {
		if down {
			return errors.New("dial tcp: i/o timeout")
		}
		return nil
	}}
	set := &vmprovider.Set{
		Provider: &vmprovider.Endpoints{Providers: map[string]vmprovider.Provider{
			"vcenter-a": &vmprovidertest.Fake{},
			"vcenter-b": b,
		}},
		Template: vmprovider.Spec{Owner: vmprovider.Owner{UID: "uid-1", Name: "default/web"}, PowerOn: true},
		Policy:   deletionpolicy.Oldest{},
		Spec:     replicaset.Spec{Zones: []string{"zone-a", "zone-b"}},
		Zones: map[string]vmprovider.Placement{
			"zone-a": {Endpoint: "vcenter-a"},
			"zone-b": {Endpoint: "vcenter-b"},
		},
		Names: naming.Random{Base: "web", Source: rand.NewPCG(1, 2)},
	}
	for range 3 { // slow start: a few passes
		if _, _, err := set.Scale(ctx, 4, now); err != nil {
			fmt.Println(err)
		}
	}
	status, _ := set.ZoneStatus(ctx, now)
	fmt.Println(replicaset.Spread(status))

	down = true
	plan, _, err := set.Scale(ctx, 4, now)
	fmt.Println(errors.Is(err, vmprovider.ErrUnreachable))
	fmt.Println(plan.CreateZones, len(plan.Unknown))
	// Output:
	// zone-a=2 zone-b=2
	// true
	// [zone-a] 2
}

// A partition, or a person, left a VM called web-3 on both vCenters. A
// delete by name alone could destroy the copy the caller did not mean, so
// Endpoints refuses it; through On, Delete destroys the copy on the vCenter
// named, and MarkRevision records a revision on one copy, as a Set does for
// the VM it planned with.
func ExampleEndpoints_On() {
	ctx := context.Background()
	a, b := &vmprovidertest.Fake{}, &vmprovidertest.Fake{}
	e := &vmprovider.Endpoints{Providers: map[string]vmprovider.Provider{"vcenter-a": a, "vcenter-b": b}}
	owner := vmprovider.Owner{UID: "uid-1"}
	for _, at := range []string{"vcenter-a", "vcenter-b"} {
		if _, err := e.Create(ctx, vmprovider.Spec{Name: "web-3", Owner: owner, Placement: vmprovider.Placement{Endpoint: at}}); err != nil {
			fmt.Println(err)
		}
	}
	err := e.Delete(ctx, "web-3", owner.UID)
	fmt.Println(errors.Is(err, vmprovider.ErrDuplicateName))

	if err := e.On("vcenter-a").(vmprovider.RevisionMarker).MarkRevision(ctx, "web-3", owner.UID, "rev-2"); err != nil {
		fmt.Println(err)
	}
	if err := e.On("vcenter-b").Delete(ctx, "web-3", owner.UID); err != nil {
		fmt.Println(err)
	}
	vms, _ := e.List(ctx, owner.UID)
	for _, vm := range vms {
		fmt.Printf("%s on %s: revision %q\n", vm.Name, vm.Endpoint, vm.Revision)
	}
	// Output:
	// true
	// web-3 on vcenter-a: revision "rev-2"
}

// vcenter-b makes web-1 but its answer is lost, and it stops answering.
// The Set cannot tell whether web-1 exists, so it counts it as unknown and
// keeps its name: the VM that stands in on vcenter-a is web-2. When
// vcenter-b answers again, web-1 is there, and the stand-in is the excess.
func ExampleSet_lostAnswer() {
	ctx := context.Background()
	down := false
	b := &vmprovidertest.Fake{
		Fail: func(op, _ string) error {
			if down {
				return errors.New("dial tcp: i/o timeout")
			}
			return nil
		},
		Lose: func(op, name string) error {
			if op == "create" && name == "web-1" {
				down = true // the clone is made; the answer never arrives
				return errors.New("read tcp: i/o timeout")
			}
			return nil
		},
	}
	set := &vmprovider.Set{
		Provider: &vmprovider.Endpoints{Providers: map[string]vmprovider.Provider{
			"vcenter-a": &vmprovidertest.Fake{},
			"vcenter-b": b,
		}},
		Template: vmprovider.Spec{Owner: vmprovider.Owner{UID: "uid-1", Name: "default/web"}, PowerOn: true},
		Policy:   deletionpolicy.HighestOrdinal{},
		Spec:     replicaset.Spec{Zones: []string{"zone-a", "zone-b"}},
		Zones: map[string]vmprovider.Placement{
			"zone-a": {Endpoint: "vcenter-a"},
			"zone-b": {Endpoint: "vcenter-b"},
		},
		Names: naming.Indexed{Base: "web"},
	}
	for range 3 {
		plan, _, _ := set.Scale(ctx, 2, now)
		fmt.Println(plan)
	}
	down = false
	plan, _, err := set.Scale(ctx, 2, now)
	fmt.Println(plan, err)
	// Output:
	// create=2 delete=[] deleting=[] deferred=0 zones=[zone-a zone-b]
	// create=1 delete=[] deleting=[] deferred=0 zones=[zone-a] unknown=[web-1]
	// create=0 delete=[] deleting=[] deferred=0 unknown=[web-1]
	// create=0 delete=[web-2] deleting=[] deferred=0 <nil>
}
