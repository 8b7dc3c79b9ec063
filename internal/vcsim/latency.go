package vcsim

import (
	"bytes"
	"strings"
	"time"

	"github.com/vmware/govmomi/simulator"
)

// Latency is a model of the time a real vCenter takes: a round trip for
// every call, and for the methods that start work, how long that work
// runs. A serialized simulator with a Latency (Latency.Serialized, or
// Faults.Latency) plays it at its gate:
//
//   - every call waits Call before it is served, without holding the gate,
//     so that calls in flight overlap as on a vCenter, which serves many at
//     once;
//   - a *_Task method with a time in Tasks (LinkedClone for a linked
//     clone) is answered at once with a task that runs for that time and
//     then ends with the method's own result or fault: the call is served
//     when the time is up, one at a time as every call, and its effect
//     (the new VM, the power state) shows only then, as a vCenter shows it
//     when its task ends. The gate is free meanwhile, so that other calls
//     and tasks go on;
//   - ShutdownGuest, with a time in Tasks, is answered at once, as vCenter
//     answers it, and the guest shuts down (the VM powers off) that time
//     later.
//
// Every time is multiplied by Scale, so that a run takes seconds where a
// vCenter takes minutes while the times keep their proportions.
//
// The simulator's own delays do neither: its Model.DelayConfig delays a
// call before serving it, so a task's method returns only once its time
// is up (the task invisible until then, govmomi issue 3323), and serialized
// it would hold the gate; its TaskDelay, keyed by the simulator's name for
// the task ("CloneVm", not "CloneVM_Task"), is a package-level variable
// shared by every simulator in the process, holds the task's object locked
// for the delay unless its LockHandoff entry is 0 (then the task runs
// outside the gate, racing other calls), and cannot tell a linked clone
// from a full one.
type Latency struct {
	// Call is every call's round trip: the network and vCenter's own
	// handling, before the call is served.
	Call time.Duration
	// Tasks is how long the task of each *_Task method runs, by SOAP
	// method ("CloneVM_Task"), and for "ShutdownGuest" how long the guest
	// takes to shut down. A method not named runs at once, as the
	// simulator runs it.
	Tasks map[string]time.Duration
	// LinkedClone is how long a CloneVM_Task runs whose spec asks for a
	// linked clone (diskMoveType createNewChildDiskBacking); zero takes
	// Tasks["CloneVM_Task"].
	LinkedClone time.Duration
	// Scale multiplies every time; zero means 1.
	Scale float64
}

// The figures of RealWorld, unscaled, each with where it comes from.
const (
	// realFullClone: a full clone copies the template's disks. "A full
	// clone will take 90-180 seconds" (puppetlabs/vmpooler#333, a pool of
	// test VMs on vSphere); 88 s for a Windows 2016 full clone "on fast
	// hardware" (chef/kitchen-vcenter#41); "around 2 mins" with thin
	// disks, an hour thick (hashicorp/terraform#3952). Two minutes, the
	// middle of vmpooler's range.
	realFullClone = 120 * time.Second
	// realLinkedClone: a linked clone adds delta disks over a snapshot.
	// "A linked clone may take 5-10 seconds to clone" (puppetlabs/
	// vmpooler#333); chef/kitchen-vcenter#41's 52 s is for a Windows
	// instance ready to use, boot included. 8 s.
	realLinkedClone = 8 * time.Second
	// realReconfigure: a CPU or memory change of a VM (ReconfigVM_Task)
	// edits its configuration file on the host, no data copied. No
	// measured figure was found; 2 s is an estimate, set between a plain
	// call (tens of ms) and the clones. Disk changes take far longer (a
	// thick disk added: minutes, vmware/terraform-provider-vsphere#641),
	// which this model leaves out.
	realReconfigure = 2 * time.Second
	// realPowerOn: PowerOnVM_Task ends once the VM's process has started
	// on its host, not when its guest has booted: the host's log in
	// vmware/vic#6825 shows the VM "powering on" and its vmx starting
	// within 6 ms of the task's creation. No measured end was found; 3 s
	// is an estimate covering vCenter's placement (DRS) and the start.
	realPowerOn = 3 * time.Second
	// realPowerOff: a hard power-off (PowerOffVM_Task) stops the VM's
	// process, with no guest involved. No measured figure was found; 2 s
	// is an estimate.
	realPowerOff = 2 * time.Second
	// realShutdown: ShutdownGuest is answered at once and the guest then
	// shuts down. "The VM ended up powering off in 24s" after a guest
	// stop through vCenter (vmware/vic#7446), part of it the host
	// reporting the power state to vCenter, which it does every 20 s at
	// worst (vmware/vic#2568). 20 s.
	realShutdown = 20 * time.Second
	// realDestroy: Destroy_Task unregisters the VM and deletes its files.
	// No measured figure was found; 3 s is an estimate, more than a
	// power-off for the file deletion.
	realDestroy = 3 * time.Second
	// realCall: one call's round trip, a property read say. vpxd's log in
	// vmware/vic#6701 shows its own operations taking 5 ms (a ticket) to
	// 57 ms (a host's configuration) from BEGIN to FINISH; with the
	// network and the SOAP handling around them, 30 ms.
	realCall = 30 * time.Millisecond
)

// RealWorld returns the latency of a real vCenter as documented (each
// figure's source is in this file beside it), unscaled: a full clone
// 120 s, a linked clone 8 s, a CPU or memory reconfigure 2 s, a power-on
// 3 s, a power-off 2 s, a guest's shutdown 20 s, a destroy 3 s, and 30 ms
// for every call. Set Scale on the result to make a run take seconds.
func RealWorld() Latency {
	return Latency{
		Call: realCall,
		Tasks: map[string]time.Duration{
			"CloneVM_Task":    realFullClone,
			"ReconfigVM_Task": realReconfigure,
			"PowerOnVM_Task":  realPowerOn,
			"PowerOffVM_Task": realPowerOff,
			"ResetVM_Task":    realPowerOff + realPowerOn,
			"Destroy_Task":    realDestroy,
			"ShutdownGuest":   realShutdown,
		},
		LinkedClone: realLinkedClone,
		Scale:       1,
	}
}

// Serialized is a setup function for New that serializes the simulator as
// the package's Serialized does and plays l at its gate.
func (l Latency) Serialized(m *simulator.Model) {
	serialize(m, nil, &l)
}

// CallTime returns the round trip every call waits, scaled.
func (l Latency) CallTime() time.Duration {
	return l.scale(l.Call)
}

// TaskTime returns how long the work a call of method with the request
// body starts runs, scaled: the method's figure in Tasks, or LinkedClone
// for a CloneVM_Task whose spec asks for a linked clone; zero for a method
// with no figure.
func (l Latency) TaskTime(method string, body []byte) time.Duration {
	d := l.Tasks[method]
	if method == "CloneVM_Task" && l.LinkedClone > 0 && linkedClone(body) {
		d = l.LinkedClone
	}
	return l.scale(d)
}

func (l Latency) scale(d time.Duration) time.Duration {
	if l.Scale == 0 {
		return d
	}
	return time.Duration(float64(d) * l.Scale)
}

// linkedClone reports whether a CloneVM_Task request asks for a linked
// clone: a relocate spec that backs the new disks with child disks of the
// source's (diskMoveType createNewChildDiskBacking, on a snapshot).
func linkedClone(body []byte) bool {
	return bytes.Contains(body, []byte(">createNewChildDiskBacking<"))
}

// defers reports whether the gate plays a call of method as work that
// outlasts it: a *_Task method or ShutdownGuest.
func defers(method string) bool {
	return strings.HasSuffix(method, "_Task") || method == "ShutdownGuest"
}
