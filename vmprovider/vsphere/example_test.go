package vsphere_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/replicakit/replicakit/deletionpolicy"
	simgate "github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// vcsim starts govmomi's in-process vCenter simulator with TLS and the given
// credentials, and returns a Config for it that verifies its certificate
// and places VMs in cluster DC0_C1 on LocalDS_0, cloned from DC0_H0_VM0.
//
// The simulator serves one call at a time (internal/vcsim's Serialized),
// as it does for the tests: govmomi v0.56.0's simulator races with itself
// (a destroy deletes the VM's files in a task that runs on into the next
// call, and reads the datastore there while the next destroy or clone
// writes it under another lock), and examples run under the race detector
// too, where no test is charged with a race: "go test -race" would fail
// now and then with "race detected outside of test execution". Against a
// real vCenter nothing of this applies.
func vcsim(user, password string) (vsphere.Config, func()) {
	sim, err := simgate.New(simgate.Serialized, simgate.Credentials(user, password))
	if err != nil {
		panic(err)
	}
	return sim.Config(), sim.Close
}

// Connect to vCenter, create a VM carrying its owner's mark, and destroy it.
func ExampleNew() {
	cfg, stop := vcsim("administrator@vsphere.local", "example-pw")
	defer stop()
	ctx := context.Background()

	p, err := vsphere.New(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = p.Close(ctx) }() // a failed logout leaves a session that times out

	owner := vmprovider.Owner{UID: "6f1c1f4e-7d1a-4c36-9a0e-2f5d0b6f8a11", Name: "default/web"}
	vm, err := p.Create(ctx, vmprovider.Spec{Name: "web-0", Owner: owner, CPUs: 2, MemoryMiB: 2048, PowerOn: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(vm.Name, vm.Power, vm.Owner == owner.UID)

	// Another owner cannot touch it.
	err = p.Delete(ctx, "web-0", "someone-else")
	fmt.Println(err)

	fmt.Println(p.Delete(ctx, "web-0", owner.UID))
	// Output:
	// web-0 PoweredOn true
	// VM "web-0" belongs to owner "6f1c1f4e-7d1a-4c36-9a0e-2f5d0b6f8a11", not "someone-else", so it was left untouched
	// <nil>
}

// Delete running VMs: one whose VMware Tools run is asked to shut its
// guest down and given up to ShutdownGrace to do so; one without running
// tools is powered off at once. vCenter's events tell which was which.
func ExampleProvider_Delete() {
	cfg, stop := vcsim("administrator@vsphere.local", "example-pw")
	defer stop()
	ctx := context.Background()
	cfg.ShutdownGrace = 2 * time.Minute // zero: DefaultShutdownGrace; negative: never ask the guest

	p, err := vsphere.New(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = p.Close(ctx) }()

	owner := vmprovider.Owner{UID: "uid-web", Name: "default/web"}
	for _, name := range []string{"web-0", "web-1"} {
		if _, err := p.Create(ctx, vmprovider.Spec{Name: name, Owner: owner, PowerOn: true}); err != nil {
			fmt.Println(err)
			return
		}
	}
	// The simulator has no guests: it reports web-0's tools running, as
	// VMware Tools would once the guest is up.
	if err := simgate.ReportGuest(ctx, cfg, "web-0", "10.20.0.5"); err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range []string{"web-0", "web-1"} {
		err := p.Delete(ctx, name, owner.UID)
		guest, hard, qerr := simgate.PowerOffs(ctx, cfg, name)
		fmt.Printf("%s: %v; guest shutdowns %d, power-offs %d %v\n", name, err, guest, hard, qerr)
	}
	// Output:
	// web-0: <nil>; guest shutdowns 1, power-offs 0 <nil>
	// web-1: <nil>; guest shutdowns 0, power-offs 1 <nil>
}

// Keep N VMs of one owner in vCenter without any Kubernetes object: each
// Scale is one pass of list, plan and act.
func ExampleProvider_set() {
	cfg, stop := vcsim("administrator@vsphere.local", "example-pw")
	defer stop()
	ctx := context.Background()
	p, err := vsphere.New(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = p.Close(ctx) }() // a failed logout leaves a session that times out

	set := &vmprovider.Set{
		Provider: p,
		Template: vmprovider.Spec{Owner: vmprovider.Owner{UID: "uid-web"}, PowerOn: true},
		Policy:   deletionpolicy.Random{Seed: 1},
		Names:    naming.Random{Base: "web", Source: rand.NewPCG(1, 2)},
	}
	for _, n := range []int{3, 1, 2, 0} {
		if _, _, err := set.Scale(ctx, n, time.Now()); err != nil {
			fmt.Println(err)
			return
		}
		vms, _ := p.List(ctx, "uid-web")
		fmt.Printf("scaled to %d: %d VMs\n", n, len(vms))
	}
	// Output:
	// scaled to 3: 3 VMs
	// scaled to 1: 1 VMs
	// scaled to 2: 2 VMs
	// scaled to 0: 0 VMs
}

// Log in with the same trust and login rules as New, to do what the
// Provider does not: here, ask vCenter what it is.
func ExampleConnect() {
	cfg, stop := vcsim("administrator@vsphere.local", "example-pw")
	defer stop()
	ctx := context.Background()

	c, logout, err := vsphere.Connect(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = logout(ctx) }() // a failed logout leaves a session that times out
	fmt.Println(c.ServiceContent.About.ApiType)

	cfg.Password = "wrong"
	_, _, err = vsphere.Connect(ctx, cfg)
	fmt.Println(err != nil)
	// Output:
	// VirtualCenter
	// true
}

// Read VMs from memory: a Watch keeps a copy of the provider's VMs current
// with one property collector, and Cached answers Get and List from it
// while it creates, powers and destroys through the provider.
func ExampleCached() {
	cfg, stop := vcsim("administrator@vsphere.local", "example-pw")
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := vsphere.New(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	owner := vmprovider.Owner{UID: "uid-web", Name: "default/web"}
	if _, err := p.Create(ctx, vmprovider.Spec{Name: "web-0", Owner: owner, PowerOn: true}); err != nil {
		fmt.Println(err)
		return
	}

	w := vsphere.NewWatch(p)
	w.OnChange(func(vm vmprovider.VM, gone bool) {}) // say, enqueue vm.OwnerName
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	cached := vsphere.Cached{Provider: p, Watch: w}

	vms, err := cached.List(ctx, owner.UID) // waits for the first full copy
	fmt.Println(len(vms), vms[0].Name, vms[0].Power, vms[0].OwnerName, err)
	cancel()
	fmt.Println(<-done)
	_ = p.Close(context.Background())
	// Output:
	// 1 web-0 PoweredOn default/web <nil>
	// <nil>
}

// A Config prints without its password, with %v and %#v alike, so that it
// can be logged.
func ExampleConfig_String() {
	cfg := vsphere.Config{
		URL:        "https://vcenter.example.com/sdk",
		Username:   "operator@vsphere.local",
		Password:   "s3cret",
		Datacenter: "DC0",
		Folder:     "/DC0/vm/replicakit",
	}
	fmt.Println(cfg)
	fmt.Println(strings.Contains(fmt.Sprintf("%#v", cfg), cfg.Password))
	// Output:
	// vsphere.Config{URL: "https://vcenter.example.com/sdk", Username: "operator@vsphere.local", Password: <redacted>, Insecure: false, Datacenter: "DC0", Folder: "/DC0/vm/replicakit", ResourcePool: "", Datastore: "", Template: "", MaxTasks: 0, MaxClones: 0, RequestsPerSecond: 0, RequestBurst: 0}
	// false
}

// Follow vCenter's VMs as they change: a Watch keeps a copy of every VM
// below the provider's folder with one property collector, answers Get and
// List from it, and calls each OnChange function with every change, here
// a VM powered on and then destroyed.
func ExampleWatch() {
	cfg, stop := vcsim("administrator@vsphere.local", "example-pw")
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := vsphere.New(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	owner := vmprovider.Owner{UID: "uid-web", Name: "default/web"}

	w := vsphere.NewWatch(p)
	on, gone := make(chan vmprovider.VM, 1), make(chan vmprovider.VM, 1)
	w.OnChange(func(vm vmprovider.VM, isGone bool) {
		if vm.Owner != owner.UID {
			return
		}
		ch := on
		if isGone {
			ch = gone
		} else if vm.Power != vmprovider.PoweredOn {
			return
		}
		select {
		case ch <- vm:
		default: // already told
		}
	})
	done := make(chan error, 1) // buffered: Run's goroutine never blocks on it
	go func() { done <- w.Run(ctx) }()
	<-w.Synced()

	if _, err := p.Create(ctx, vmprovider.Spec{Name: "web-0", Owner: owner, PowerOn: true}); err != nil {
		fmt.Println(err)
		return
	}
	var vm vmprovider.VM
	select {
	case vm = <-on:
	case <-time.After(time.Minute):
		fmt.Println("the watch never reported web-0 on")
		return
	}
	fmt.Println("on:", vm.Name, vm.OwnerName, len(w.List(owner.UID)))

	if err := p.Delete(ctx, "web-0", owner.UID); err != nil {
		fmt.Println(err)
		return
	}
	select {
	case vm = <-gone:
	case <-time.After(time.Minute):
		fmt.Println("the watch never reported web-0 gone")
		return
	}
	_, ok := w.Get("web-0")
	fmt.Println("gone:", vm.Name, ok, len(w.List(owner.UID)))

	cancel()
	fmt.Println(<-done, w.Restarts())
	_ = p.Close(context.Background())
	// Output:
	// on: web-0 default/web 1
	// gone: web-0 false 0
	// <nil> 0
}

// Watch less: an operator that reports only a VM's addresses and
// heartbeat beside its power keeps only those (and what every watch
// keeps: name, instance UUID, power and the marks). Its property collector
// then watches 7 properties of each VM instead of 11; the fields left out,
// such as the hostname the guest reports, read as zero.
func ExampleWatch_SetFields() {
	cfg, stop := vcsim("administrator@vsphere.local", "example-pw")
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := vsphere.New(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	owner := vmprovider.Owner{UID: "uid-web", Name: "default/web"}
	spec := vmprovider.Spec{Name: "web-0", Owner: owner, PowerOn: true, CloudInit: &vmprovider.CloudInit{
		MetaData: "local-hostname: web-0\nnetwork:\n  version: 2\n  ethernets:\n    eth0:\n      addresses: [10.20.0.5/24]\n"}}
	if _, err := p.Create(ctx, spec); err != nil {
		fmt.Println(err)
		return
	}

	w := vsphere.NewWatch(p)
	w.SetFields(vsphere.FieldIPAddresses | vsphere.FieldHeartbeat)
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	cached := vsphere.Cached{Provider: p, Watch: w}

	live, err := p.Get(ctx, "web-0")
	if err != nil {
		fmt.Println(err)
		return
	}
	vm, err := cached.Get(ctx, "web-0")
	fmt.Printf("live:   %s %v %q\n", live.Power, live.IPAddresses, live.Hostname)
	fmt.Printf("cached: %s %v %q %v\n", vm.Power, vm.IPAddresses, vm.Hostname, err)
	cancel()
	fmt.Println(<-done)
	_ = p.Close(context.Background())
	// Output:
	// live:   PoweredOn [10.20.0.5] "web-0"
	// cached: PoweredOn [10.20.0.5] "" <nil>
	// <nil>
}

// Log in with no password, as a vCenter extension by client certificate:
// the extension (here io.example.vmset) is registered with vCenter and the
// certificate set for it beforehand, as `govc extension.register` and
// `govc extension.setcert` do. The pair is read again at every login, so
// that a Secret renewed in place (cert-manager's, say) is taken with no
// restart. Port 80 of vCenter's host (its SDK tunnel) must be reachable.
func ExampleCertificateFiles() {
	cfg := vsphere.Config{
		URL:               "https://vcenter.example.com/sdk",
		CAFile:            "/etc/vsphere/ca.crt",
		ExtensionKey:      "io.example.vmset",
		ClientCertificate: vsphere.CertificateFiles("/etc/vsphere-client/tls.crt", "/etc/vsphere-client/tls.key"),
		Folder:            "/dc1/vm/vmset",
	}
	fmt.Println(cfg)
	// Output:
	// vsphere.Config{URL: "https://vcenter.example.com/sdk", Username: "", Password: <redacted>, ExtensionKey: "io.example.vmset", Insecure: false, Datacenter: "", Folder: "/dc1/vm/vmset", ResourcePool: "", Datastore: "", Template: "", MaxTasks: 0, MaxClones: 0, RequestsPerSecond: 0, RequestBurst: 0}
}
