package vmprovider_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vmprovidertest"
)

// Keep three VMs of one owner in any provider (here the in-memory Fake;
// vsphere.Provider in production), with no Kubernetes object.
func ExampleSet() {
	p := &vmprovidertest.Fake{}
	set := &vmprovider.Set{
		Provider: p,
		Template: vmprovider.Spec{Owner: vmprovider.Owner{UID: "uid-web"}, CPUs: 2, MemoryMiB: 2048, PowerOn: true},
		Policy:   deletionpolicy.Random{Seed: 1},
		Names:    naming.Random{Base: "web", Source: rand.NewPCG(1, 2)},
	}
	plan, res, err := set.Scale(context.Background(), 3, time.Now())
	if err != nil {
		fmt.Println(err)
		return
	}
	vms, _ := p.List(context.Background(), "uid-web")
	fmt.Println(plan.Create, len(res.Created), len(vms), vms[0].Power)
	// Output:
	// 3 3 3 PoweredOn
}

// A VM without the caller's mark is never touched, and the error says why.
func ExampleNotOwnedError() {
	p := &vmprovidertest.Fake{}
	p.Add(vmprovider.VM{Name: "db-0", Power: vmprovider.PoweredOn}) // made by someone else
	err := p.Delete(context.Background(), "db-0", "uid-web")
	fmt.Println(err)
	// Output:
	// VM "db-0" exists without an ownership mark, so it was left untouched (owner "uid-web" wanted it)
}

// What cloud-init will configure in a guest, read from its metadata, as
// the guest will report it.
func ExampleCloudInit_Guest() {
	ci := vmprovider.CloudInit{MetaData: `local-hostname: web-0
network:
  version: 2
  ethernets:
    eth0:
      addresses: [10.20.0.5/24]
`}
	host, addrs, err := ci.Guest()
	fmt.Println(host, addrs, err)
	// Output:
	// web-0 [10.20.0.5] <nil>
}

// Give each replica made from one template its own identity: the name
// becomes instance-id and local-hostname, ahead of the template's metadata.
// Set does this for every VM it creates.
func ExampleCloudInit_Personalized() {
	tmpl := vmprovider.CloudInit{MetaData: "network:\n  version: 2\n  ethernets:\n    eth0:\n      dhcp4: true\n"}
	ci, err := tmpl.Personalized("web-zmdmm", "web-zmdmm")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(ci.MetaData)
	// Output:
	// instance-id: "web-zmdmm"
	// local-hostname: "web-zmdmm"
	// network:
	//   version: 2
	//   ethernets:
	//     eth0:
	//       dhcp4: true
}

// A Set's status under its readiness choice: here the VMs count as ready
// once their guests report an address, which cloud-init's metadata gives
// them as they boot.
func ExampleSet_Status() {
	p := &vmprovidertest.Fake{}
	set := &vmprovider.Set{
		Provider: p,
		Template: vmprovider.Spec{Owner: vmprovider.Owner{UID: "uid-web"}, PowerOn: true,
			CloudInit: &vmprovider.CloudInit{MetaData: "network: {version: 2, ethernets: {eth0: {addresses: [10.0.0.5/24]}}}"}},
		Readiness: vmprovider.ReadyWhenIPAddress,
		Policy:    deletionpolicy.Random{Seed: 1},
		Names:     naming.Random{Base: "web", Source: rand.NewPCG(1, 2)},
	}
	now := time.Now()
	if _, _, err := set.Scale(context.Background(), 2, now); err != nil {
		fmt.Println(err)
		return
	}
	st, err := set.Status(context.Background(), now)
	fmt.Println(st.Replicas, st.Ready, err)
	// Output:
	// 2 2 <nil>
}

// Spread a set over three zones, each a placement (a vSphere cluster, say),
// then scale it down: the VMs leave the fullest zones first.
func ExampleSet_zones() {
	ctx := context.Background()
	p := &vmprovidertest.Fake{}
	set := &vmprovider.Set{
		Provider: p,
		Template: vmprovider.Spec{Owner: vmprovider.Owner{UID: "uid-web"}, PowerOn: true},
		Policy:   deletionpolicy.Oldest{},
		Spec:     replicaset.Spec{Zones: []string{"a", "b", "c"}},
		Zones: map[string]vmprovider.Placement{
			"a": {ResourcePool: "/DC0/host/cluster-a"},
			"b": {ResourcePool: "/DC0/host/cluster-b"},
			"c": {ResourcePool: "/DC0/host/cluster-c"},
		},
		Names: naming.Random{Base: "web", Source: rand.NewPCG(1, 2)},
	}
	perZone := func() map[string]int {
		vms, _ := p.List(ctx, "uid-web")
		n := map[string]int{}
		for _, vm := range vms {
			n[vm.Zone]++
		}
		return n
	}
	for _, desired := range []int{6, 4} {
		for range 3 { // slow start takes a few passes
			if _, _, err := set.Scale(ctx, desired, time.Now()); err != nil {
				fmt.Println(err)
				return
			}
		}
		fmt.Println(desired, perZone())
	}
	zones, _ := set.ZoneStatus(ctx, time.Now())
	for _, z := range zones {
		fmt.Printf("zone %s: replicas=%d ready=%d\n", z.Zone, z.Replicas, z.Ready)
	}
	// Output:
	// 6 map[a:2 b:2 c:2]
	// 4 map[a:2 b:1 c:1]
	// zone a: replicas=2 ready=2
	// zone b: replicas=1 ready=1
	// zone c: replicas=1 ready=1
}

// Each readiness choice asks more of a VM's guest before the VM counts as
// ready; a choice read from user input is validated first.
func ExampleReadiness() {
	vm := vmprovider.VM{Name: "web-0", Power: vmprovider.PoweredOn, Heartbeat: vmprovider.HeartbeatGreen}
	for _, r := range []vmprovider.Readiness{vmprovider.ReadyWhenPoweredOn, vmprovider.ReadyWhenGuestHeartbeat, vmprovider.ReadyWhenIPAddress} {
		fmt.Println(r, r.Ready(vm))
	}
	fmt.Println(vmprovider.Readiness("Pingable").Validate())
	// Output:
	// PoweredOn true
	// GuestHeartbeat true
	// IPAddress false
	// readiness "Pingable": want PoweredOn, GuestHeartbeat or IPAddress: vmprovider: invalid spec
}

// Roll a Set's VMs onto a changed Template, one surge VM at a time: every
// pass keeps 3 VMs available, and the old VMs go as the new ones come up.
func ExampleSet_rollout() {
	ctx := context.Background()
	p := &vmprovidertest.Fake{}
	set := &vmprovider.Set{
		Provider: p,
		Template: vmprovider.Spec{Owner: vmprovider.Owner{UID: "uid-web"}, Template: "ubuntu-24.04", PowerOn: true},
		Policy:   deletionpolicy.Oldest{},
		Names:    naming.Random{Base: "web", Source: rand.NewPCG(1, 2)},
		Rollout:  &replicaset.Strategy{MaxSurge: replicaset.Count(1), MaxUnavailable: replicaset.Count(0)},
	}
	for range 3 {
		_, _, _ = set.Scale(ctx, 3, time.Now())
	}
	next := set.Template
	next.Template = "ubuntu-26.04"
	set.SetTemplate(next)
	for pass := 1; ; pass++ {
		plan, _, err := set.Scale(ctx, 3, time.Now())
		if err != nil {
			fmt.Println(err)
			return
		}
		st, _ := set.RolloutStatus(ctx, 3, time.Now())
		fmt.Printf("pass %d: create %d, delete %d; updated %d, old %d\n", pass, plan.Create, len(plan.Delete), st.Updated, st.Old)
		if st.Complete {
			break
		}
	}
	// Output:
	// pass 1: create 1, delete 0; updated 1, old 3
	// pass 2: create 0, delete 1; updated 1, old 2
	// pass 3: create 1, delete 0; updated 2, old 2
	// pass 4: create 0, delete 1; updated 2, old 1
	// pass 5: create 1, delete 0; updated 3, old 1
	// pass 6: create 0, delete 1; updated 3, old 0
}

// A VM whose guest hung shows a red heartbeat: it fails the health check
// whatever the readiness, and self-healing takes the reason for status.
func ExampleReadiness_CheckHealth() {
	hung := vmprovider.VM{Name: "web-1", Power: vmprovider.PoweredOn, Heartbeat: vmprovider.HeartbeatRed}
	fmt.Println(vmprovider.ReadyWhenPoweredOn.CheckHealth(hung, true))
	noTools := vmprovider.VM{Name: "web-2", Power: vmprovider.PoweredOn, Heartbeat: vmprovider.HeartbeatGray}
	ok, _ := vmprovider.ReadyWhenPoweredOn.CheckHealth(noTools, true)
	fmt.Println(ok)
	fmt.Println(vmprovider.ReadyWhenGuestHeartbeat.CheckHealth(noTools, true))
	// Output:
	// false HeartbeatRed
	// true
	// false HeartbeatGray
}

// A Set heals its VMs (Spec.Remediation): a VM whose guest hangs is reset
// once it has been unhealthy for the unhealthy window, and replaced if it
// is still not healthy when the start-up window the reset gave it ends.
// Each pass takes the time; Plan.Health.NextCheck says when to pass again.
func ExampleSet_remediation() {
	ctx := context.Background()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := start
	p := &vmprovidertest.Fake{Now: func() time.Time { return at }}
	set := &vmprovider.Set{
		Provider: p,
		Template: vmprovider.Spec{Owner: vmprovider.Owner{UID: "uid-web"}, PowerOn: true},
		Policy:   deletionpolicy.Oldest{},
		Names:    naming.Indexed{Base: "web"},
		Spec:     replicaset.Spec{Remediation: &replicaset.Remediation{Restart: true}},
	}
	pass := func() replicaset.Plan {
		plan, _, err := set.Scale(ctx, 3, at)
		if err != nil {
			fmt.Println(err)
		}
		fmt.Printf("+%v: unhealthy %d, restart %d, replace %d, create %d\n",
			at.Sub(start), plan.Health.Unhealthy, len(plan.Restart), len(plan.Replace), plan.Create)
		return plan
	}
	pass()
	at = at.Add(time.Minute)
	pass()
	_ = p.SetHeartbeat("web-1", vmprovider.HeartbeatRed) // its guest hangs
	plan := pass()
	at = plan.Health.NextCheck // the unhealthy window ends: a reset
	pass()
	at = at.Add(replicaset.DefaultStartupWindow) // still hung: a replacement
	pass()
	fmt.Println("resets:", p.Resets())
	vms, _ := p.List(ctx, "uid-web")
	for _, vm := range vms {
		fmt.Println(vm.Name)
	}
	// Output:
	// +0s: unhealthy 0, restart 0, replace 0, create 3
	// +1m0s: unhealthy 0, restart 0, replace 0, create 0
	// +1m0s: unhealthy 1, restart 0, replace 0, create 0
	// +6m0s: unhealthy 1, restart 1, replace 0, create 0
	// +16m0s: unhealthy 1, restart 0, replace 1, create 1
	// resets: [web-1]
	// web-0
	// web-2
	// web-3
}
