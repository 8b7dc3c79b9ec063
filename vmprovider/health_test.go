package vmprovider_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/vmprovider"
)

// TestCheckHealth_AgreesWithReadiness checks CheckHealth against Ready:
// a VM that should run and is ready by a readiness passes unless its
// heartbeat is red; one that is not ready never passes; a VM that should
// be off always passes; a failure always gives a reason, a pass none.
func TestCheckHealth_AgreesWithReadiness(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := rapid.SampledFrom([]vmprovider.Readiness{"", vmprovider.ReadyWhenPoweredOn, vmprovider.ReadyWhenGuestHeartbeat, vmprovider.ReadyWhenIPAddress}).Draw(t, "readiness")
		vm := vmprovider.VM{
			Name:      "v",
			Power:     rapid.SampledFrom([]vmprovider.PowerState{vmprovider.PoweredOn, vmprovider.PoweredOff, vmprovider.Suspended}).Draw(t, "power"),
			Heartbeat: rapid.SampledFrom([]vmprovider.Heartbeat{"", vmprovider.HeartbeatGray, vmprovider.HeartbeatGreen, vmprovider.HeartbeatYellow, vmprovider.HeartbeatRed}).Draw(t, "heartbeat"),
		}
		if rapid.Bool().Draw(t, "address") {
			vm.IPAddresses = []string{"10.0.0.1"}
		}
		wantOn := rapid.Bool().Draw(t, "wantOn")
		ok, reason := r.CheckHealth(vm, wantOn)
		if ok != (reason == "") {
			t.Fatalf("ok %v with reason %q", ok, reason)
		}
		switch {
		case !wantOn:
			if !ok {
				t.Fatalf("a VM that should be off failed: %s", reason)
			}
		case !r.Ready(vm):
			if ok {
				t.Fatalf("a VM that is not ready by %q passed", r)
			}
		case vm.Heartbeat == vmprovider.HeartbeatRed:
			if reason != vmprovider.ReasonHeartbeatRed {
				t.Fatalf("red heartbeat gave %q", reason)
			}
		case !ok:
			t.Fatalf("a ready VM failed: %s", reason)
		}
	})
}
