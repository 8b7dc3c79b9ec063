package vmprovider_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/replicakit/replicakit/deletionpolicy"
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
