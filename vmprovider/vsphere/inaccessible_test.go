package vsphere_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// unreadable returns, by name, why each VM of vms is unreadable ("" when
// it is not).
func unreadable(vms []vmprovider.VM) map[string]string {
	out := map[string]string{}
	for _, vm := range vms {
		out[vm.Name] = vm.Unreachable
	}
	return out
}

// TestList_InaccessibleVM: a VM whose datastore went away (vCenter no
// longer returns its configuration, so its ownership mark is unread) is
// still listed as its owner's, marked unreachable, with its zone and
// revision as last read, by the provider that read it before and by a new
// one that never did (its instance UUID names the owner); nothing acts on
// it; once accessible again, it is listed as before.
func TestList_InaccessibleVM(t *testing.T) {
	sim, p := start(t)
	ctx := context.Background()
	for _, name := range []string{"web-0", "web-1"} {
		if _, err := p.Create(ctx, vmprovider.Spec{Name: name, Owner: ownerA, Zone: "zone-a", Revision: "r1"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.List(ctx, ownerA.UID); err != nil { // read while readable
		t.Fatal(err)
	}
	restore, err := sim.Inaccessible(ctx, "web-1")
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := vsphere.New(ctx, sim.Config()) // restarted during the outage
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fresh.Close(context.Background()) })
	for _, tc := range []struct {
		name string
		p    *vsphere.Provider
	}{{"provider that read it", p}, {"provider that never did", fresh}} {
		vms, err := tc.p.List(ctx, ownerA.UID)
		if err != nil {
			t.Fatalf("%s: List: %v", tc.name, err)
		}
		if diff := cmp.Diff(map[string]string{"web-0": "", "web-1": "inaccessible"}, unreadable(vms)); diff != "" {
			t.Errorf("%s: List (-want +got):\n%s", tc.name, diff)
		}
		if others, err := tc.p.List(ctx, "uid-b"); err != nil || len(others) != 0 {
			t.Errorf("%s: another owner lists %v, %v; want none", tc.name, others, err)
		}
		if tc.p == p {
			i := slices.IndexFunc(vms, func(vm vmprovider.VM) bool { return vm.Name == "web-1" })
			if i < 0 || vms[i].Zone != "zone-a" || vms[i].Revision != "r1" || vms[i].Owner != ownerA.UID {
				t.Errorf("%s: web-1 is %+v, want its marks as last read", tc.name, vms)
			}
		}
		err = tc.p.Delete(ctx, "web-1", ownerA.UID)
		if !errors.Is(err, vmprovider.ErrUnreadable) {
			t.Errorf("%s: Delete(web-1) = %v, want ErrUnreadable", tc.name, err)
		}
		if err := tc.p.SetPower(ctx, "web-1", ownerA.UID, vmprovider.PoweredOn); !errors.Is(err, vmprovider.ErrUnreadable) {
			t.Errorf("%s: SetPower(web-1) = %v, want ErrUnreadable", tc.name, err)
		}
	}
	if n := count(t, sim, "web-1"); n != 1 {
		t.Fatalf("%d VMs called web-1 in vCenter, want it kept", n)
	}
	restore()
	vms, err := fresh.List(ctx, ownerA.UID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"web-0": "", "web-1": ""}, unreadable(vms)); diff != "" {
		t.Errorf("accessible again: List (-want +got):\n%s", diff)
	}
}

// TestSet_InaccessibleVMsKept: a Set whose VMs' datastore goes away, and
// comes back, neither replaces them by name nor deletes any, on the way
// out or back: they are unknown, and at most a surge's worth of VMs stands
// in for them meanwhile.
func TestSet_InaccessibleVMsKept(t *testing.T) {
	sim, p := start(t)
	ctx := context.Background()
	s := &vmprovider.Set{
		Provider: p,
		Template: vmprovider.Spec{Owner: ownerA, PowerOn: true},
		Policy:   deletionpolicy.Oldest{},
		Names:    naming.Random{Base: "web", Source: rand.NewPCG(5, 6)},
	}
	now := time.Now()
	scale := func(desired int) {
		t.Helper()
		for range 3 {
			if _, _, err := s.Scale(ctx, desired, now); err != nil {
				t.Fatalf("Scale(%d): %v", desired, err)
			}
			now = now.Add(time.Second)
		}
	}
	scale(3)
	vms, err := p.List(ctx, ownerA.UID)
	if err != nil || len(vms) != 3 {
		t.Fatalf("List: %v, %v; want 3 VMs", vms, err)
	}
	lost := []string{vms[0].Name, vms[1].Name}
	restore, err := sim.Inaccessible(ctx, lost...)
	if err != nil {
		t.Fatal(err)
	}
	scale(3)
	// K = max(0, 3−2) + min(2, surge 1, 3) = 2 known: one VM stands in.
	if vms, err := p.List(ctx, ownerA.UID); err != nil || len(vms) != 4 {
		t.Errorf("with 2 of 3 unreadable: List = %v, %v; want 4 VMs, the 3 and one standing in", vms, err)
	}
	scale(1) // K = max(0, 1−2) + min(2, 1, 1) = 1: a scale-down takes known VMs only
	st, err := s.Status(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if want := (replicaset.Status{Replicas: 3, Ready: 1, Available: 1, Unknown: 2}); st != want {
		t.Errorf("status %+v, want %+v: the 2 unreadable VMs unknown, one known", st, want)
	}
	for _, name := range lost {
		if n := count(t, sim, name); n != 1 {
			t.Errorf("%d VMs called %s, want the unreadable one kept and none made under its name", n, name)
		}
	}
	restore()
	scale(3)
	for _, name := range lost {
		if n := count(t, sim, name); n != 1 {
			t.Errorf("back: %d VMs called %s, want the VM kept", n, name)
		}
	}
	vms, err = p.List(ctx, ownerA.UID)
	if err != nil || len(vms) != 3 {
		t.Fatalf("back: List: %v, %v; want 3 VMs", vms, err)
	}
}

// TestWatch_InaccessibleVM: the watch reports a VM that becomes
// inaccessible as unreachable, keeps it in its owner's list with its marks
// as last read, and reports it readable again when it comes back.
func TestWatch_InaccessibleVM(t *testing.T) {
	sim, _, p, w, events := watching(t)
	ctx := context.Background()
	cached := vsphere.Cached{Provider: p, Watch: w}
	if _, err := p.Create(ctx, vmprovider.Spec{Name: "w-0", Owner: ownerA, Zone: "zone-a"}); err != nil {
		t.Fatal(err)
	}
	await(t, events, "w-0", func(e event) bool { return e.vm.Name == "w-0" && e.vm.Owner == ownerA.UID })
	restore, err := sim.Inaccessible(ctx, "w-0")
	if err != nil {
		t.Fatal(err)
	}
	await(t, events, "w-0 inaccessible", func(e event) bool { return e.vm.Name == "w-0" && e.vm.Unreachable == "inaccessible" })
	l, err := cached.List(ctx, ownerA.UID)
	if err != nil || len(l) != 1 || l[0].Unreachable != "inaccessible" || l[0].Owner != ownerA.UID || l[0].Zone != "zone-a" {
		t.Errorf("Cached.List = %+v, %v; want w-0, unreachable, with its marks", l, err)
	}
	restore()
	await(t, events, "w-0 back", func(e event) bool { return e.vm.Name == "w-0" && e.vm.Unreachable == "" && e.vm.Owner == ownerA.UID })
}

// TestCopy_NeverAdopted: a copy of a replica made outside the set (a
// clone in the vSphere Client, which keeps the replica's ExtraConfig,
// marks included, and gets an instance UUID of its own) is not the
// owner's: List leaves it out and Delete refuses it, while the replica
// itself is still listed. The clone for a replica writes every mark, empty
// ones too, and its identity.
func TestCopy_NeverAdopted(t *testing.T) {
	faults, sim, p := startCounted(t)
	ctx := context.Background()
	clones := faults.Record("CloneVM_Task")
	if _, err := p.Create(ctx, vmprovider.Spec{Name: "web-0", Owner: ownerA}); err != nil {
		t.Fatal(err)
	}
	clones.Stop()
	reqs, err := clones.Requests()
	if err != nil || len(reqs) != 1 {
		t.Fatalf("recorded clones %v, %v; want one", reqs, err)
	}
	keys := map[string]string{}
	spec := reqs[0].(*types.CloneVM_Task).Spec
	for _, o := range spec.Config.ExtraConfig {
		kv := o.GetOptionValue()
		keys[kv.Key], _ = kv.Value.(string)
	}
	want := map[string]string{vsphere.KeyOwnerUID: ownerA.UID, vsphere.KeyOwnerName: ownerA.Name, vsphere.KeyZone: "",
		vsphere.KeyRevision: "", vsphere.KeyBaseRevision: "", vsphere.KeyIdentity: spec.Config.InstanceUuid}
	if diff := cmp.Diff(want, keys); diff != "" || spec.Config.InstanceUuid == "" {
		t.Errorf("the clone's marks (-want +got):\n%s\ninstance UUID %q", diff, spec.Config.InstanceUuid)
	}

	// The copy: vCenter copies the VM's ExtraConfig into a clone; the
	// simulator keeps only the spec's, so the spec carries it here.
	c, err := simulatorClient(ctx, sim)
	if err != nil {
		t.Fatal(err)
	}
	replica := object.NewVirtualMachine(c, mustRef(t, sim, "web-0"))
	var m mo.VirtualMachine
	if err := replica.Properties(ctx, replica.Reference(), []string{"config.extraConfig", "parent"}, &m); err != nil {
		t.Fatal(err)
	}
	run(t, "copy web-0", func(ctx context.Context) (*object.Task, error) {
		return replica.Clone(ctx, object.NewFolder(replica.Client(), *m.Parent), "web-0-copy",
			types.VirtualMachineCloneSpec{Config: &types.VirtualMachineConfigSpec{ExtraConfig: m.Config.ExtraConfig}})
	})
	vms, err := p.List(ctx, ownerA.UID)
	if err != nil {
		t.Fatal(err)
	}
	if len(vms) != 1 || vms[0].Name != "web-0" {
		t.Errorf("List = %v, want web-0 alone", vms)
	}
	if err := p.Delete(ctx, "web-0-copy", ownerA.UID); !errors.Is(err, vmprovider.ErrNotOwned) {
		t.Errorf("Delete(web-0-copy) = %v, want ErrNotOwned", err)
	}
	if got, err := p.Get(ctx, "web-0-copy"); err != nil || got.Owner != "" {
		t.Errorf("Get(web-0-copy) = %+v, %v; want it with no owner", got, err)
	}
}
