package vmprovider

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/replicaset"
)

// TestReadyTracker_IPAddress: with ReadyWhenIPAddress, a VM that comes up
// between two passes is ready since the pass that first saw it so (the
// platform does not say when the guest came up), so MinReady counts from
// there.
func TestReadyTracker_IPAddress(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tr := readyTracker{readiness: ReadyWhenIPAddress}
	web := VM{Name: "web-zmdmm", InstanceUUID: "4201", Power: PoweredOn, BootedAt: t0}
	if r := tr.replicas([]VM{web}, true, t0.Add(10*time.Second))[0]; r.Ready {
		t.Errorf("replicas(no address) = %+v, want not ready", r)
	}
	web.IPAddresses = []string{"10.20.0.5"}
	r := tr.replicas([]VM{web}, true, t0.Add(40*time.Second))[0]
	if !r.Ready || r.ReadySince.Sub(t0) != 40*time.Second {
		t.Errorf("replicas(address at 40s) = ready %v since %v, want ready since 40s", r.Ready, r.ReadySince.Sub(t0))
	}
}

// TestReadyTracker_PoweredOn: with the zero readyTracker, a VM that is
// powered on is running and ready since it booted; one that is off while
// the set wants it on is pending.
func TestReadyTracker_PoweredOn(t *testing.T) {
	booted := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var tr readyTracker
	got := tr.replicas([]VM{
		{Name: "web-zmdmm", Power: PoweredOn, BootedAt: booted},
		{Name: "web-r9slq", Power: PoweredOff},
	}, true, time.Time{})
	if got[0].Phase != replicaset.PhaseRunning || !got[0].Ready || !got[0].ReadySince.Equal(booted) {
		t.Errorf("replicas(on)[0] = %+v, want running, ready since %v", got[0], booted)
	}
	if got[1].Phase != replicaset.PhasePending || got[1].Ready {
		t.Errorf("replicas(off)[1] = %+v, want pending, not ready", got[1])
	}
}

// TestReadyTracker_AgainstModel checks readyTracker against a naive model over random
// passes: Ready is the readiness choice's verdict; ReadySince is the boot
// time under ReadyWhenPoweredOn, else the boot time for a VM ready at the
// first pass, else the time of the pass that first saw it ready since it
// was last unready or unlisted (also under ReadyWhenPoweredOn when the boot
// time is unknown); never later than the pass.
func TestReadyTracker_AgainstModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		choice := rapid.SampledFrom([]Readiness{"", ReadyWhenPoweredOn, ReadyWhenGuestHeartbeat, ReadyWhenIPAddress}).Draw(t, "readiness")
		tr := readyTracker{readiness: choice}
		wantOn := rapid.Bool().Draw(t, "wantOn")
		since := map[string]time.Time{} // the model
		now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		at := now
		for pass := range rapid.IntRange(1, 6).Draw(t, "passes") {
			at = at.Add(time.Duration(rapid.IntRange(1, 60).Draw(t, "step")) * time.Second)
			var vms []VM
			for i := range 4 {
				if !rapid.Bool().Draw(t, fmt.Sprintf("listed%d", i)) {
					continue
				}
				vm := VM{Name: fmt.Sprintf("vm-%d", i), InstanceUUID: fmt.Sprintf("uuid-%d", i)}
				if rapid.Bool().Draw(t, "bootTimeKnown") {
					vm.BootedAt = now.Add(-time.Hour)
				}
				vm.Power = rapid.SampledFrom([]PowerState{PoweredOn, PoweredOff, Suspended}).Draw(t, "power")
				if rapid.Bool().Draw(t, "green") {
					vm.Heartbeat = HeartbeatGreen
				}
				if rapid.Bool().Draw(t, "addressed") {
					vm.IPAddresses = []string{"10.0.0.1"}
				}
				vms = append(vms, vm)
			}
			got := tr.replicas(vms, wantOn, at)
			next := map[string]time.Time{}
			for i, vm := range vms {
				r := got[i]
				ready := choice.Ready(vm)
				if r.Name != vm.Name || r.Ready != ready {
					t.Fatalf("pass %d: replica %+v for %+v, want ready %v", pass, r, vm, ready)
				}
				wantPhase := replicaset.PhaseRunning
				if !ready && vm.Power != PoweredOn && wantOn {
					wantPhase = replicaset.PhasePending
				}
				if r.Phase != wantPhase {
					t.Fatalf("pass %d: %s phase %q, want %q", pass, vm.Name, r.Phase, wantPhase)
				}
				if !ready {
					continue
				}
				want := vm.BootedAt
				if choice == ReadyWhenGuestHeartbeat || choice == ReadyWhenIPAddress || vm.BootedAt.IsZero() {
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
