package vsphere_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	simgate "github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// TestWatch_SetFields: a watch that keeps only addresses and heartbeat
// reports them as vCenter does, and leaves the other fields, which vCenter
// has (the provider's live read shows them), at their zero values, in
// what Cached pins after a create as in what the watch reports.
func TestWatch_SetFields(t *testing.T) {
	sim, _, p, w, events := watchingFields(t, vsphere.FieldIPAddresses|vsphere.FieldHeartbeat)
	ctx := context.Background()
	cached := vsphere.Cached{Provider: p, Watch: w}
	made, err := cached.Create(ctx, vmprovider.Spec{Name: "f-0", Owner: ownerA, PowerOn: true,
		CloudInit: &vmprovider.CloudInit{MetaData: "local-hostname: f-0\n"}})
	if err != nil {
		t.Fatal(err)
	}
	if made.CreatedAt.IsZero() {
		t.Fatalf("Create returned %+v; want its creation time", made)
	}
	pinned, err := cached.Get(ctx, "f-0")
	if err != nil {
		t.Fatal(err)
	}
	if !pinned.CreatedAt.IsZero() || !pinned.BootedAt.IsZero() || pinned.Power != vmprovider.PoweredOn || pinned.Owner != ownerA.UID {
		t.Errorf("Cached.Get right after Create = %+v; want it on and owned, without the fields left out", pinned)
	}

	if err := simgate.ReportGuest(ctx, sim.Config(), "f-0", "10.3.0.9"); err != nil {
		t.Fatal(err)
	}
	await(t, events, "f-0's address", func(e event) bool {
		return e.vm.Name == "f-0" && slices.Equal(e.vm.IPAddresses, []string{"10.3.0.9"}) && e.vm.Heartbeat == vmprovider.HeartbeatGreen
	})
	live, err := p.Get(ctx, "f-0")
	if err != nil {
		t.Fatal(err)
	}
	// (The simulator reports no boot time: BootedAt is zero in both.)
	if !live.ToolsRunning || live.CreatedAt.IsZero() || live.Hostname != "f-0" {
		t.Fatalf("the live read %+v lacks what the watch is to leave out", live)
	}
	got, err := cached.Get(ctx, "f-0")
	if err != nil {
		t.Fatal(err)
	}
	want := live
	want.CreatedAt, want.BootedAt, want.ToolsRunning, want.Hostname = time.Time{}, time.Time{}, false, ""
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Cached.Get: the live read without CreatedAt, BootedAt, ToolsRunning and Hostname (-want +got):\n%s", diff)
	}
}
