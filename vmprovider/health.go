package vmprovider

// The reasons CheckHealth gives, each one word for status and events.
const (
	// ReasonPoweredOff: the VM should run but is off or suspended (someone
	// powered it off, or it crashed to off).
	ReasonPoweredOff = "PoweredOff"
	// ReasonHeartbeatRed: the guest's tools stopped answering (a hung or
	// crashed guest).
	ReasonHeartbeatRed = "HeartbeatRed"
	// ReasonHeartbeatGray: the guest's tools do not run, where readiness
	// needs their heartbeat.
	ReasonHeartbeatGray = "HeartbeatGray"
	// ReasonHeartbeatYellow: the guest's heartbeat is intermittent, where
	// readiness needs it green.
	ReasonHeartbeatYellow = "HeartbeatYellow"
	// ReasonNoAddress: the guest reports no IP address, where readiness
	// needs one.
	ReasonNoAddress = "NoAddress"
)

// CheckHealth is the health check self-healing applies to a VM (a
// replicaset.Health's Observe takes its answer): ok reports that vm
// passes, reason (one of the Reason constants) says why not. A VM that
// should be off (wantOn false) passes. One that should run fails when it
// is not powered on, when its guest's heartbeat is red whatever the
// readiness (the guest stopped answering), and when it is not ready by r:
// a heartbeat that is not green with ReadyWhenGuestHeartbeat, no address
// with ReadyWhenIPAddress. A gray heartbeat (no tools) fails only
// ReadyWhenGuestHeartbeat: a VM without tools is healthy while it runs.
func (r Readiness) CheckHealth(vm VM, wantOn bool) (ok bool, reason string) {
	switch {
	case !wantOn:
		return true, ""
	case vm.Power != PoweredOn:
		return false, ReasonPoweredOff
	case vm.Heartbeat == HeartbeatRed:
		return false, ReasonHeartbeatRed
	case r == ReadyWhenGuestHeartbeat && vm.Heartbeat == HeartbeatYellow:
		return false, ReasonHeartbeatYellow
	case r == ReadyWhenGuestHeartbeat && vm.Heartbeat != HeartbeatGreen:
		return false, ReasonHeartbeatGray
	case r == ReadyWhenIPAddress && len(vm.IPAddresses) == 0:
		return false, ReasonNoAddress
	}
	return true, ""
}
