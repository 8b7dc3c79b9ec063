package vcsim_test

import (
	"context"
	"slices"
	"testing"

	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// TestReportGuest: through the API, the simulator reports the address,
// tools and heartbeat a guest would, and the provider reads them.
func TestReportGuest(t *testing.T) {
	s, p := startGuests(t)
	ctx := context.Background()
	owner := vmprovider.Owner{UID: "uid-g"}
	if _, err := p.Create(ctx, vmprovider.Spec{Name: "guest-0", Owner: owner, PowerOn: true}); err != nil {
		t.Fatal(err)
	}
	if err := vcsim.ReportGuest(ctx, s.Config(), "guest-0", "10.9.8.7"); err != nil {
		t.Fatal(err)
	}
	vm, err := p.Get(ctx, "guest-0")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(vm.IPAddresses, []string{"10.9.8.7"}) || !vm.ToolsRunning || vm.Heartbeat != vmprovider.HeartbeatGreen || vm.Owner != owner.UID {
		t.Errorf("after ReportGuest: %+v; want address 10.9.8.7, tools running, heartbeat green, the mark kept", vm)
	}
	if err := vcsim.SetHeartbeat(ctx, s.Config(), "guest-0", vmprovider.HeartbeatRed); err != nil {
		t.Fatal(err)
	}
	if vm, err := p.Get(ctx, "guest-0"); err != nil || vm.Heartbeat != vmprovider.HeartbeatRed || !slices.Equal(vm.IPAddresses, []string{"10.9.8.7"}) {
		t.Errorf("after SetHeartbeat red: %+v, %v; want heartbeat red, the address kept", vm, err)
	}
	before, err := vcsim.PowerOns(ctx, s.Config(), "guest-0")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Reset(ctx, "guest-0", owner.UID); err != nil {
		t.Fatal(err)
	}
	if after, err := vcsim.PowerOns(ctx, s.Config(), "guest-0"); err != nil || before != 1 || after != 2 {
		t.Errorf("vCenter's power-on events: %d made, %d after a reset (%v); want 1, 2", before, after, err)
	}
	if vm, err := p.Get(ctx, "guest-0"); err != nil || vm.Heartbeat != vmprovider.HeartbeatRed {
		t.Errorf("after a reset: %+v, %v; want the heartbeat left as the test set it", vm, err)
	}
}

// TestSetHeartbeats: the heartbeats of several VMs change together, and
// the provider reads each.
func TestSetHeartbeats(t *testing.T) {
	s, p := startGuests(t)
	ctx := context.Background()
	names := []string{"blip-0", "blip-1", "blip-2"}
	for _, name := range names {
		if _, err := p.Create(ctx, vmprovider.Spec{Name: name, Owner: vmprovider.Owner{UID: "uid-b"}, PowerOn: true}); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range []vmprovider.Heartbeat{vmprovider.HeartbeatRed, vmprovider.HeartbeatGreen} {
		if _, err := vcsim.SetHeartbeats(ctx, s.Config(), names[:2], h); err != nil {
			t.Fatal(err)
		}
		for i, name := range names {
			vm, err := p.Get(ctx, name)
			if want := h; err != nil || i < 2 && vm.Heartbeat != want || i == 2 && vm.Heartbeat == vmprovider.HeartbeatRed {
				t.Errorf("after SetHeartbeats %s of %v: %s %+v, %v", h, names[:2], name, vm, err)
			}
		}
	}
	if _, err := vcsim.SetHeartbeats(ctx, s.Config(), []string{"blip-0", "no-such-vm"}, vmprovider.HeartbeatRed); err == nil {
		t.Error("SetHeartbeats of a VM that does not exist: no error")
	}
}

// startGuests starts a serialized simulator and a provider on it, both
// closed when the test ends.
func startGuests(t *testing.T) (*vcsim.Sim, *vsphere.Provider) {
	t.Helper()
	s, err := vcsim.New(vcsim.Serialized)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	p, err := vsphere.New(context.Background(), s.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return s, p
}
