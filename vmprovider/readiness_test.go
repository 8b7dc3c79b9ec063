package vmprovider_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vmprovidertest"
)

func TestReadiness_Ready(t *testing.T) {
	on := vmprovider.VM{Power: vmprovider.PoweredOn}
	green := vmprovider.VM{Power: vmprovider.PoweredOn, Heartbeat: vmprovider.HeartbeatGreen}
	addressed := vmprovider.VM{Power: vmprovider.PoweredOn, IPAddresses: []string{"10.0.0.1"}}
	offButAddressed := vmprovider.VM{Power: vmprovider.PoweredOff, IPAddresses: []string{"10.0.0.1"}, Heartbeat: vmprovider.HeartbeatGreen}
	for _, tc := range []struct {
		r                                         vmprovider.Readiness
		on, green, addressed, offButAddressedWant bool
	}{
		{r: "", on: true, green: true, addressed: true},
		{r: vmprovider.ReadyWhenPoweredOn, on: true, green: true, addressed: true},
		{r: vmprovider.ReadyWhenGuestHeartbeat, green: true},
		{r: vmprovider.ReadyWhenIPAddress, addressed: true},
	} {
		got := [4]bool{tc.r.Ready(on), tc.r.Ready(green), tc.r.Ready(addressed), tc.r.Ready(offButAddressed)}
		want := [4]bool{tc.on, tc.green, tc.addressed, tc.offButAddressedWant}
		if got != want {
			t.Errorf("%q.Ready(on, green, addressed, off) = %v, want %v", tc.r, got, want)
		}
		if err := tc.r.Validate(); err != nil {
			t.Errorf("%q.Validate() = %v", tc.r, err)
		}
	}
	if err := vmprovider.Readiness("Booted").Validate(); !errors.Is(err, vmprovider.ErrInvalidSpec) {
		t.Errorf("Validate(Booted) = %v, want ErrInvalidSpec", err)
	}
}

// TestTracker_AgainstModel checks Tracker against a naive model over random
// passes: Ready is the readiness choice's verdict; ReadySince is the boot
// time under ReadyWhenPoweredOn, else the boot time for a VM ready at the
// first pass, else the time of the pass that first saw it ready since it
// was last unready or unlisted (also under ReadyWhenPoweredOn when the boot
// time is unknown); never later than the pass.
func TestTracker_AgainstModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		choice := rapid.SampledFrom([]vmprovider.Readiness{"", vmprovider.ReadyWhenPoweredOn, vmprovider.ReadyWhenGuestHeartbeat, vmprovider.ReadyWhenIPAddress}).Draw(t, "readiness")
		tr := vmprovider.Tracker{Readiness: choice}
		wantOn := rapid.Bool().Draw(t, "wantOn")
		since := map[string]time.Time{} // the model
		at := now
		for pass := range rapid.IntRange(1, 6).Draw(t, "passes") {
			at = at.Add(time.Duration(rapid.IntRange(1, 60).Draw(t, "step")) * time.Second)
			var vms []vmprovider.VM
			for i := range 4 {
				if !rapid.Bool().Draw(t, fmt.Sprintf("listed%d", i)) {
					continue
				}
				vm := vmprovider.VM{Name: fmt.Sprintf("vm-%d", i), InstanceUUID: fmt.Sprintf("uuid-%d", i)}
				if rapid.Bool().Draw(t, "bootTimeKnown") {
					vm.BootedAt = now.Add(-time.Hour)
				}
				vm.Power = rapid.SampledFrom([]vmprovider.PowerState{vmprovider.PoweredOn, vmprovider.PoweredOff, vmprovider.Suspended}).Draw(t, "power")
				if rapid.Bool().Draw(t, "green") {
					vm.Heartbeat = vmprovider.HeartbeatGreen
				}
				if rapid.Bool().Draw(t, "addressed") {
					vm.IPAddresses = []string{"10.0.0.1"}
				}
				vms = append(vms, vm)
			}
			got := tr.Replicas(vms, wantOn, at)
			next := map[string]time.Time{}
			for i, vm := range vms {
				r := got[i]
				ready := choice.Ready(vm)
				if r.Name != vm.Name || r.Ready != ready {
					t.Fatalf("pass %d: replica %+v for %+v, want ready %v", pass, r, vm, ready)
				}
				wantPhase := replicaset.PhaseRunning
				if !ready && vm.Power != vmprovider.PoweredOn && wantOn {
					wantPhase = replicaset.PhasePending
				}
				if r.Phase != wantPhase {
					t.Fatalf("pass %d: %s phase %q, want %q", pass, vm.Name, r.Phase, wantPhase)
				}
				if !ready {
					continue
				}
				want := vm.BootedAt
				if choice == vmprovider.ReadyWhenGuestHeartbeat || choice == vmprovider.ReadyWhenIPAddress || vm.BootedAt.IsZero() {
					s, ok := since[vm.InstanceUUID]
					switch {
					case ok:
						want = s
					case pass > 0 || vm.BootedAt.IsZero():
						want = at
					}
					next[vm.InstanceUUID] = want
				}
				if !r.ReadySince.Equal(want) || r.ReadySince.After(at) {
					t.Fatalf("pass %d: %s ready since %v, want %v", pass, vm.Name, r.ReadySince, want)
				}
			}
			since = next
		}
	})
}

// TestSet_Readiness: a Set with an unknown readiness refuses to act; with
// ReadyWhenIPAddress its VMs customized with addresses come up ready, each
// with its own hostname.
func TestSet_Readiness(t *testing.T) {
	fake := &vmprovidertest.Fake{Now: func() time.Time { return now }}
	tmpl := vmprovider.Spec{Owner: vmprovider.Owner{UID: "uid-r"}, PowerOn: true,
		CloudInit: &vmprovider.CloudInit{MetaData: "network:\n  ethernets:\n    eth0:\n      addresses: [10.1.0.9/16]\n"}}
	bad := &vmprovider.Set{Provider: fake, Template: tmpl, Readiness: "Booted"}
	if _, _, err := bad.Scale(context.Background(), 2, now); !errors.Is(err, vmprovider.ErrInvalidSpec) {
		t.Fatalf("Scale with readiness Booted = %v, want ErrInvalidSpec", err)
	}
	if n := len(names(t, fake, "uid-r")); n != 0 {
		t.Fatalf("a refused Scale created %d VMs", n)
	}
	set := &vmprovider.Set{Provider: fake, Template: tmpl, Policy: deletionpolicy.Random{Seed: 1}, Readiness: vmprovider.ReadyWhenIPAddress}
	if _, _, err := set.Scale(context.Background(), 2, now); err != nil {
		t.Fatal(err)
	}
	vms, err := fake.List(context.Background(), "uid-r")
	if err != nil {
		t.Fatal(err)
	}
	s, err := set.Status(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	if len(vms) != 2 || s.Replicas != 2 || s.Ready != 2 {
		t.Errorf("VMs %+v: status %+v; want 2 of 2 ready by address", vms, s)
	}
	without := &vmprovider.Set{Provider: fake, Template: vmprovider.Spec{Owner: vmprovider.Owner{UID: "uid-r"}}, Readiness: vmprovider.ReadyWhenGuestHeartbeat}
	if s, err := without.Status(context.Background(), now); err != nil || s.Replicas != 2 || s.Ready != 0 {
		t.Errorf("by heartbeat (gray on the Fake): %+v, %v; want 2 replicas, 0 ready", s, err)
	}
	for _, vm := range vms {
		if vm.Hostname != vm.Name {
			t.Errorf("%s: hostname %q, want its own name (metadata personalized per VM)", vm.Name, vm.Hostname)
		}
	}
}
