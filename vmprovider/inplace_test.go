package vmprovider_test

import (
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
)

// goldenSpec shapes every field TemplateRevision hashes.
var goldenSpec = vmprovider.Spec{Name: "web-0", Owner: vmprovider.Owner{UID: "u"}, Template: "ubuntu-24.04", CPUs: 2, MemoryMiB: 2048,
	PowerOn: true, Networks: []string{"VM Network", "dvs-backend"},
	CloudInit: &vmprovider.CloudInit{UserData: "#cloud-config\npackages: [nginx]\n", MetaData: "local-hostname: web\n"},
	Placement: vmprovider.Placement{ResourcePool: "/DC0/host/DC0_C1", Folder: "/DC0/vm/web", Datastore: "LocalDS_0", Endpoint: "vc-1"},
	Zone:      "z1", Revision: "r"}

// TestTemplateRevision_Golden pins the revisions of specs that leave the
// hot-add settings false to what they were before those settings existed
// (computed at dc70e84): a set whose VMs record them must not roll out
// when replicakit is upgraded. Hot-add on changes the revision.
func TestTemplateRevision_Golden(t *testing.T) {
	for _, tt := range []struct {
		name string
		spec vmprovider.Spec
		want string
	}{
		{"every field", goldenSpec, "k7h9gnxm9w"},
		{"the zero spec", vmprovider.Spec{}, "5hf7dfcwmp"},
		{"every field, no name or owner", vmprovider.Spec{Template: "ubuntu-24.04", CPUs: 2, MemoryMiB: 2048, PowerOn: true,
			Networks:  []string{"VM Network"},
			CloudInit: &vmprovider.CloudInit{UserData: "#cloud-config\n", MetaData: "local-hostname: web\n"},
			Placement: vmprovider.Placement{ResourcePool: "/DC0/host/DC0_C1", Datastore: "LocalDS_0"}}, "sxntwcf4qq"},
	} {
		if got := vmprovider.TemplateRevision(tt.spec); got != tt.want {
			t.Errorf("TemplateRevision(%s) = %s, want %s, as before hot-add settings existed", tt.name, got, tt.want)
		}
	}
	for what, change := range map[string]func(*vmprovider.Spec){
		"CPU hot-add":    func(s *vmprovider.Spec) { s.CPUHotAdd = true },
		"memory hot-add": func(s *vmprovider.Spec) { s.MemoryHotAdd = true },
	} {
		s := goldenSpec
		change(&s)
		if vmprovider.TemplateRevision(s) == "k7h9gnxm9w" {
			t.Errorf("turning %s on left the revision as it was", what)
		}
	}
}

// TestBaseRevision: the size, and what differs between a set's VMs,
// leave the base revision alone; everything else TemplateRevision hashes
// changes it, hot-add settings included; and it is never a template
// revision.
func TestBaseRevision(t *testing.T) {
	base := vmprovider.BaseRevision(goldenSpec)
	same := goldenSpec
	same.CPUs, same.MemoryMiB, same.Name, same.Owner, same.Zone, same.Revision, same.BaseRevision = 8, 16384, "web-9", vmprovider.Owner{UID: "v"}, "z2", "x", "y"
	if got := vmprovider.BaseRevision(same); got != base {
		t.Errorf("size, name, owner, zone and revisions changed the base revision: %s, want %s", got, base)
	}
	if vmprovider.BaseRevision(vmprovider.Spec{}) == vmprovider.TemplateRevision(vmprovider.Spec{}) {
		t.Errorf("the zero spec's base revision is its template revision")
	}
	for what, change := range map[string]func(*vmprovider.Spec){
		"template":       func(s *vmprovider.Spec) { s.Template = "ubuntu-2" },
		"power":          func(s *vmprovider.Spec) { s.PowerOn = false },
		"networks":       func(s *vmprovider.Spec) { s.Networks = []string{"VM Network"} },
		"user data":      func(s *vmprovider.Spec) { s.CloudInit = &vmprovider.CloudInit{UserData: "#!/bin/sh\n"} },
		"placement":      func(s *vmprovider.Spec) { s.Placement.Datastore = "ds2" },
		"CPU hot-add":    func(s *vmprovider.Spec) { s.CPUHotAdd = true },
		"memory hot-add": func(s *vmprovider.Spec) { s.MemoryHotAdd = true },
	} {
		s := goldenSpec
		s.Networks = slices.Clone(goldenSpec.Networks)
		change(&s)
		if vmprovider.BaseRevision(s) == base {
			t.Errorf("a change of %s left the base revision %s", what, base)
		}
	}
}

// naiveInPlaceFor is InPlaceFor's rule written out plainly, for
// TestInPlaceFor_Naive: the sizes each VM ends at, whether its CPUs stay
// whole sockets, then whether each size moves in a direction, and within
// the bounds, the VM allows while it runs.
func naiveInPlaceFor(vm vmprovider.VM, want vmprovider.Spec) replicaset.InPlace {
	if vm.BaseRevision == "" || vm.BaseRevision != vmprovider.BaseRevision(want) {
		return replicaset.InPlaceNone
	}
	cpuTo, memTo := want.CPUs, want.MemoryMiB
	if cpuTo == 0 {
		cpuTo = vm.CPUs
	}
	if memTo == 0 {
		memTo = vm.MemoryMiB
	}
	if vm.CoresPerSocket > 1 && cpuTo != vm.CPUs && cpuTo%vm.CoresPerSocket != 0 {
		return replicaset.InPlaceNone
	}
	resized := cpuTo != vm.CPUs || memTo != vm.MemoryMiB
	switch {
	case !resized, vm.Power == vmprovider.PoweredOff:
		return replicaset.InPlaceLive
	case vm.Power == vmprovider.Suspended:
		return replicaset.InPlacePowerCycle
	}
	cpuLive := cpuTo == vm.CPUs || (cpuTo > vm.CPUs && vm.CPUHotAdd) || (cpuTo < vm.CPUs && vm.CPUHotRemove)
	memLive := memTo == vm.MemoryMiB || (memTo > vm.MemoryMiB && vm.MemoryHotAdd &&
		(vm.MemoryHotAddLimitMiB == 0 || memTo <= vm.MemoryHotAddLimitMiB) &&
		(vm.MemoryHotAddIncrementMiB == 0 || memTo%vm.MemoryHotAddIncrementMiB == 0))
	if cpuLive && memLive {
		return replicaset.InPlaceLive
	}
	return replicaset.InPlacePowerCycle
}

// drawSpec draws a template from a small space, so that VMs often share
// its base revision.
func drawSpec(t *rapid.T, label string) vmprovider.Spec {
	return vmprovider.Spec{
		Template:     rapid.SampledFrom([]string{"", "ubuntu"}).Draw(t, label+" template"),
		CPUs:         rapid.Int32Range(0, 4).Draw(t, label+" CPUs"),
		MemoryMiB:    rapid.SampledFrom([]int64{0, 1024, 2048, 4096}).Draw(t, label+" memory"),
		PowerOn:      rapid.Bool().Draw(t, label+" power on"),
		CPUHotAdd:    rapid.Bool().Draw(t, label+" CPU hot-add"),
		MemoryHotAdd: rapid.Bool().Draw(t, label+" memory hot-add"),
	}
}

// drawVM draws a VM made from want, from another spec, or before base
// revisions were recorded.
func drawVM(t *rapid.T, want vmprovider.Spec) vmprovider.VM {
	return vmprovider.VM{
		BaseRevision: rapid.SampledFrom([]string{"", vmprovider.BaseRevision(want), vmprovider.BaseRevision(drawSpec(t, "other"))}).Draw(t, "base revision"),
		Power:        rapid.SampledFrom([]vmprovider.PowerState{vmprovider.PoweredOn, vmprovider.PoweredOff, vmprovider.Suspended}).Draw(t, "power"),
		CPUs:         rapid.Int32Range(1, 4).Draw(t, "VM CPUs"),
		MemoryMiB:    rapid.SampledFrom([]int64{1024, 2048, 4096}).Draw(t, "VM memory"),
		CPUHotAdd:    rapid.Bool().Draw(t, "VM CPU hot-add"),
		CPUHotRemove: rapid.Bool().Draw(t, "VM CPU hot-remove"),
		MemoryHotAdd: rapid.Bool().Draw(t, "VM memory hot-add"),
		// Bounds a host sets (or none), which the drawn sizes meet or not.
		CoresPerSocket:           rapid.SampledFrom([]int32{0, 1, 2}).Draw(t, "VM cores per socket"),
		MemoryHotAddLimitMiB:     rapid.SampledFrom([]int64{0, 2048, 16384}).Draw(t, "VM hot-add limit"),
		MemoryHotAddIncrementMiB: rapid.SampledFrom([]int64{0, 128, 3072}).Draw(t, "VM hot-add increment"),
	}
}

// TestInPlaceFor_Naive: InPlaceFor agrees with naiveInPlaceFor; it gives a
// blocker exactly when the update cannot be live, naming each field that
// blocks it; a VM that is off is never power-cycled; and turning a VM's
// hot-plug settings on never makes a live update need a power cycle.
func TestInPlaceFor_Naive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		want := drawSpec(t, "want")
		vm := drawVM(t, want)
		kind, blocker := vmprovider.InPlaceFor(vm, want)
		if naive := naiveInPlaceFor(vm, want); kind != naive {
			t.Fatalf("InPlaceFor(%+v, %+v) = %v (%q), want %v", vm, want, kind, blocker, naive)
		}
		if (blocker == "") != (kind == replicaset.InPlaceLive) {
			t.Fatalf("InPlaceFor(%+v, %+v) = %v with blocker %q: want a blocker exactly when not Live", vm, want, kind, blocker)
		}
		if vm.Power == vmprovider.PoweredOff && kind == replicaset.InPlacePowerCycle {
			t.Fatalf("InPlaceFor(%+v, %+v) power-cycles a VM that is off", vm, want)
		}
		if kind == replicaset.InPlacePowerCycle && vm.Power == vmprovider.PoweredOn {
			cpuBlocked := want.CPUs != 0 && ((want.CPUs > vm.CPUs && !vm.CPUHotAdd) || (want.CPUs < vm.CPUs && !vm.CPUHotRemove))
			raised := want.MemoryMiB > vm.MemoryMiB
			memBlocked := want.MemoryMiB != 0 && (raised && (!vm.MemoryHotAdd ||
				vm.MemoryHotAddLimitMiB > 0 && want.MemoryMiB > vm.MemoryHotAddLimitMiB ||
				vm.MemoryHotAddIncrementMiB > 0 && want.MemoryMiB%vm.MemoryHotAddIncrementMiB != 0) || want.MemoryMiB < vm.MemoryMiB)
			if strings.Contains(blocker, "CPUs") != cpuBlocked || strings.Contains(blocker, "memory") != memBlocked {
				t.Fatalf("InPlaceFor(%+v, %+v) blocker %q: want CPUs named %t, memory named %t", vm, want, blocker, cpuBlocked, memBlocked)
			}
		}
		more := vm
		more.CPUHotAdd, more.CPUHotRemove, more.MemoryHotAdd = true, true, true
		if got, _ := vmprovider.InPlaceFor(more, want); kind == replicaset.InPlaceLive && got != replicaset.InPlaceLive {
			t.Fatalf("InPlaceFor(%+v, %+v) = %v, though with fewer hot-plug settings it is Live", more, want, got)
		}
	})
}

// TestInPlaceFor_Cases names the common cases and the phrases they give.
func TestInPlaceFor_Cases(t *testing.T) {
	want := vmprovider.Spec{Template: "ubuntu", CPUs: 4, MemoryMiB: 4096, PowerOn: true}
	base := vmprovider.BaseRevision(want)
	on := vmprovider.VM{BaseRevision: base, Power: vmprovider.PoweredOn, CPUs: 2, MemoryMiB: 8192}
	tests := []struct {
		name        string
		vm          vmprovider.VM
		want        vmprovider.Spec
		wantKind    replicaset.InPlace
		wantBlocker string
	}{
		{"no base revision", vmprovider.VM{Power: vmprovider.PoweredOn, CPUs: 4, MemoryMiB: 4096}, want, replicaset.InPlaceNone,
			"the VM records no base revision: it was made before in-place updates"},
		{"another template", vmprovider.VM{BaseRevision: vmprovider.BaseRevision(vmprovider.Spec{Template: "rocky", PowerOn: true}),
			Power: vmprovider.PoweredOn, CPUs: 4, MemoryMiB: 4096}, want, replicaset.InPlaceNone,
			"the base revision differs: the template, networks, power, cloud-init, placement or hot-add settings changed"},
		{"the same size", vmprovider.VM{BaseRevision: base, Power: vmprovider.PoweredOn, CPUs: 4, MemoryMiB: 4096}, want, replicaset.InPlaceLive, ""},
		{"the template's size", on, vmprovider.Spec{Template: "ubuntu", PowerOn: true}, replicaset.InPlaceLive, ""},
		{"off", vmprovider.VM{BaseRevision: base, Power: vmprovider.PoweredOff, CPUs: 2, MemoryMiB: 8192}, want, replicaset.InPlaceLive, ""},
		{"on, without hot-plug", on, want, replicaset.InPlacePowerCycle,
			"CPUs raised from 2 to 4 needs the VM off (CPU hot-add is off); memory lowered from 8192 to 4096 MiB needs the VM off"},
		{"on, with hot-add", vmprovider.VM{BaseRevision: base, Power: vmprovider.PoweredOn, CPUs: 2, MemoryMiB: 2048, CPUHotAdd: true, MemoryHotAdd: true},
			want, replicaset.InPlaceLive, ""},
		{"on, CPUs lowered without hot-remove", vmprovider.VM{BaseRevision: base, Power: vmprovider.PoweredOn, CPUs: 8, MemoryMiB: 4096, CPUHotAdd: true},
			want, replicaset.InPlacePowerCycle, "CPUs lowered from 8 to 4 needs the VM off (CPU hot-remove is off)"},
		{"on, memory raised without hot-add", vmprovider.VM{BaseRevision: base, Power: vmprovider.PoweredOn, CPUs: 4, MemoryMiB: 2048, CPUHotAdd: true},
			want, replicaset.InPlacePowerCycle, "memory raised from 2048 to 4096 MiB needs the VM off (memory hot-add is off)"},
		{"suspended", vmprovider.VM{BaseRevision: base, Power: vmprovider.Suspended, CPUs: 2, MemoryMiB: 4096, CPUHotAdd: true}, want,
			replicaset.InPlacePowerCycle, "the VM is suspended: its size changes only while it is off"},
		{"on, memory past the hot-add limit", vmprovider.VM{BaseRevision: base, Power: vmprovider.PoweredOn, CPUs: 4, MemoryMiB: 2048,
			MemoryHotAdd: true, MemoryHotAddLimitMiB: 3072}, want, replicaset.InPlacePowerCycle,
			"memory raised from 2048 to 4096 MiB needs the VM off (it passes the hot-add limit of 3072 MiB)"},
		{"on, memory off the hot-add increment", vmprovider.VM{BaseRevision: base, Power: vmprovider.PoweredOn, CPUs: 4, MemoryMiB: 2048,
			MemoryHotAdd: true, MemoryHotAddIncrementMiB: 3072}, want, replicaset.InPlacePowerCycle,
			"memory raised from 2048 to 4096 MiB needs the VM off (a running VM's memory is a multiple of 3072 MiB)"},
		{"CPUs not whole sockets", vmprovider.VM{BaseRevision: base, Power: vmprovider.PoweredOff, CPUs: 3, MemoryMiB: 4096,
			CoresPerSocket: 3}, want, replicaset.InPlaceNone, "4 CPUs are not a whole number of the VM's sockets of 3 cores"},
		{"on, CPUs raised by a socket", vmprovider.VM{BaseRevision: base, Power: vmprovider.PoweredOn, CPUs: 2, MemoryMiB: 4096,
			CoresPerSocket: 2, CPUHotAdd: true}, want, replicaset.InPlaceLive, ""},
	}
	for _, tt := range tests {
		kind, blocker := vmprovider.InPlaceFor(tt.vm, tt.want)
		if kind != tt.wantKind || blocker != tt.wantBlocker {
			t.Errorf("%s: InPlaceFor = %v, %q; want %v, %q", tt.name, kind, blocker, tt.wantKind, tt.wantBlocker)
		}
	}
}
