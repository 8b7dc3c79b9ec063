package vsphere

import (
	"time"

	"github.com/replicakit/replicakit/vmprovider"
)

// Fields names parts of a vmprovider.VM that a Watch can leave out. A
// watch always keeps a VM's Name, InstanceUUID, Power and Unreachable
// (runtime.connectionState, summary.config.instanceUuid), the marks in
// its ExtraConfig (Owner, OwnerName, Zone, Revision, BaseRevision), and
// its size and hot-plug settings and limits (CPUs, MemoryMiB, CPUHotAdd,
// CPUHotRemove, MemoryHotAdd, CoresPerSocket, MemoryHotAddLimitMiB,
// MemoryHotAddIncrementMiB), which say how it can be updated in place
// (vmprovider.InPlaceFor), and whether its guest customization failed
// (Failed: guest.customizationInfo); each field here
// adds vCenter properties to what its property collector watches. Fewer
// properties cost vCenter less work on every change it reports, and
// govmomi's simulator much less: it copies every watched property of
// every VM in the view whenever anything in its inventory changes.
type Fields uint

// The fields a Watch can leave out, each with the properties it adds.
const (
	// FieldCreatedAt is VM.CreatedAt: config.createDate.
	FieldCreatedAt Fields = 1 << iota
	// FieldBootedAt is VM.BootedAt: runtime.bootTime.
	FieldBootedAt
	// FieldIPAddresses is VM.IPAddresses: guest.ipAddress and guest.net.
	FieldIPAddresses
	// FieldHostname is VM.Hostname: guest.hostName.
	FieldHostname
	// FieldToolsRunning is VM.ToolsRunning: guest.toolsRunningStatus, and
	// guest.guestStateChangeSupported, which Delete reads.
	FieldToolsRunning
	// FieldHeartbeat is VM.Heartbeat: guestHeartbeatStatus.
	FieldHeartbeat

	// AllFields is every field: a VM as the Provider reads it. It is what
	// NewWatch keeps.
	AllFields = FieldCreatedAt | FieldBootedAt | FieldIPAddresses | FieldHostname | FieldToolsRunning | FieldHeartbeat
)

// keptProps are the properties every watch keeps.
var keptProps = []string{"name", "config.instanceUuid", "config.extraConfig", "runtime.powerState",
	"runtime.connectionState", "summary.config.instanceUuid",
	"config.hardware.numCPU", "config.hardware.memoryMB", "config.hardware.numCoresPerSocket",
	"config.hotPlugMemoryLimit", "config.hotPlugMemoryIncrementSize",
	"config.cpuHotAddEnabled", "config.cpuHotRemoveEnabled", "config.memoryHotAddEnabled",
	"guest.customizationInfo"}

// fieldProps are the properties each field adds.
var fieldProps = []struct {
	field Fields
	props []string
}{
	{FieldCreatedAt, []string{"config.createDate"}},
	{FieldBootedAt, []string{"runtime.bootTime"}},
	{FieldIPAddresses, []string{"guest.ipAddress", "guest.net"}},
	{FieldHostname, []string{"guest.hostName"}},
	{FieldToolsRunning, []string{"guest.toolsRunningStatus", "guest.guestStateChangeSupported"}},
	{FieldHeartbeat, []string{"guestHeartbeatStatus"}},
}

// props returns the properties a watch of f's fields collects.
func (f Fields) props() []string {
	out := append([]string(nil), keptProps...)
	for _, fp := range fieldProps {
		if f&fp.field != 0 {
			out = append(out, fp.props...)
		}
	}
	return out
}

// keep returns vm with the parts f leaves out at their zero values (the
// Heartbeat HeartbeatGray, as toVM reads a VM whose heartbeat it was not
// given), as a watch of f's fields reports it.
func (f Fields) keep(vm vmprovider.VM) vmprovider.VM {
	if f&FieldCreatedAt == 0 {
		vm.CreatedAt = time.Time{}
	}
	if f&FieldBootedAt == 0 {
		vm.BootedAt = time.Time{}
	}
	if f&FieldIPAddresses == 0 {
		vm.IPAddresses = nil
	}
	if f&FieldHostname == 0 {
		vm.Hostname = ""
	}
	if f&FieldToolsRunning == 0 {
		vm.ToolsRunning = false
	}
	if f&FieldHeartbeat == 0 {
		vm.Heartbeat = vmprovider.HeartbeatGray
	}
	return vm
}
