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
	fmt.Println(status)

	down = true
	plan, _, err := set.Scale(ctx, 4, now)
	fmt.Println(errors.Is(err, vmprovider.ErrUnreachable))
	fmt.Println(plan.CreateZones, len(plan.Unknown))
	// Output:
	// [{zone-a true 2 2 2} {zone-b true 2 2 2}]
	// true
	// [zone-a] 2
}
