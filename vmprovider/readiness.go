package vmprovider

import (
	"fmt"
	"time"

	"github.com/replicakit/replicakit/replicaset"
)

// Readiness says when a powered-on VM counts as ready, and so when the
// planner's MinReady and a set's available count start counting it.
type Readiness string

// The readiness choices. A VM that is not powered on is never ready.
const (
	// ReadyWhenPoweredOn: ready once powered on (the zero value means
	// this too).
	ReadyWhenPoweredOn Readiness = "PoweredOn"
	// ReadyWhenGuestHeartbeat: ready once the guest's heartbeat is green,
	// that is its tools run and answer.
	ReadyWhenGuestHeartbeat Readiness = "GuestHeartbeat"
	// ReadyWhenIPAddress: ready once the guest reports an IP address.
	ReadyWhenIPAddress Readiness = "IPAddress"
)

// Validate reports an unknown readiness; the error wraps ErrInvalidSpec.
func (r Readiness) Validate() error {
	switch r {
	case "", ReadyWhenPoweredOn, ReadyWhenGuestHeartbeat, ReadyWhenIPAddress:
		return nil
	}
	return fmt.Errorf("readiness %q: want %s, %s or %s: %w", string(r), ReadyWhenPoweredOn, ReadyWhenGuestHeartbeat, ReadyWhenIPAddress, ErrInvalidSpec)
}

// Ready reports whether vm is ready by r. An unknown r is treated as
// ReadyWhenPoweredOn; validate it first.
func (r Readiness) Ready(vm VM) bool {
	if vm.Power != PoweredOn {
		return false
	}
	switch r {
	case ReadyWhenGuestHeartbeat:
		return vm.Heartbeat == HeartbeatGreen
	case ReadyWhenIPAddress:
		return len(vm.IPAddresses) > 0
	}
	return true
}

// readyTracker describes VMs as the planner sees them under a readiness
// choice, remembering when it first saw each VM ready: the platform
// reports when a VM booted but not when its guest came up, so a VM's
// ReadySince is its boot time with ReadyWhenPoweredOn, and otherwise the
// first call that saw it ready (a VM already ready at the first call
// counts from its boot, so a restarted program does not wait MinReady
// again). A VM whose platform reports no boot time counts from the first
// call that saw it ready. The zero readyTracker uses ReadyWhenPoweredOn. A
// readyTracker is not safe for concurrent use.
type readyTracker struct {
	// readiness is the choice applied.
	readiness Readiness

	seen  bool
	since map[string]time.Time // by instance UUID (else name): when first seen ready
}

// replicas describes vms at now: a VM the platform cannot read
// (VM.Unreachable) is unreachable, in no known phase; a VM that is ready
// by the tracker's choice is running and ready since ReadySince (see
// readyTracker); a VM still being made (VM.Creating) is pending; a VM
// the platform says failed (VM.Failed) is failed; a VM
// being deleted (VM.Deleting) is deleting, in the phase its state gives; a VM
// that is off or suspended while wantOn is pending; any other VM is
// running but not ready. It forgets VMs no longer listed. A replica's UID
// is its VM's instance UUID, prefixed with its endpoint and a slash when
// it has one (VM.Endpoint): UUIDs are unique within a vCenter, not across
// several.
func (t *readyTracker) replicas(vms []VM, wantOn bool, now time.Time) []replicaset.Replica {
	first := !t.seen
	t.seen = true
	next := make(map[string]time.Time, len(vms))
	out := make([]replicaset.Replica, len(vms))
	for i, vm := range vms {
		r := replicaset.Replica{Name: vm.Name, UID: vm.InstanceUUID, CreatedAt: vm.CreatedAt, Zone: vm.Zone, Revision: vm.Revision,
			Deleting: vm.Deleting}
		if vm.Endpoint != "" && vm.InstanceUUID != "" {
			r.UID = vm.Endpoint + "/" + vm.InstanceUUID
		}
		switch {
		case vm.Unreachable != "":
			r.Unreachable = true // unknown: neither running nor ready
		case vm.Creating:
			r.Phase = replicaset.PhasePending // being made: counted, not ready
		case vm.Failed != "":
			r.Phase = replicaset.PhaseFailed // will not run as asked without help
		case t.readiness.Ready(vm):
			r.Phase, r.Ready = replicaset.PhaseRunning, true
			r.ReadySince = vm.BootedAt
			if (t.readiness != "" && t.readiness != ReadyWhenPoweredOn) || (vm.BootedAt.IsZero() && !now.IsZero()) {
				key := r.UID
				if key == "" {
					key = vm.Name
				}
				since, ok := t.since[key]
				switch {
				case ok:
				case !first || vm.BootedAt.IsZero():
					since = now
				default:
					since = vm.BootedAt
				}
				next[key], r.ReadySince = since, since
			}
		case vm.Power != PoweredOn && wantOn:
			r.Phase = replicaset.PhasePending
		default:
			r.Phase = replicaset.PhaseRunning
		}
		out[i] = r
	}
	t.since = next
	return out
}
