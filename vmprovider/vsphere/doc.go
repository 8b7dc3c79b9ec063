// Package vsphere implements vmprovider.Provider on VMware vCenter with
// govmomi.
//
// [New] logs in with the credentials in a [Config] (which never prints
// them), verifies vCenter's certificate unless told otherwise (a CA bundle or
// a thumbprint can be given), keeps the session alive and logs in again when
// it has expired. It resolves the placement once (datacenter, VM folder,
// resource pool or cluster, datastore, template) and fails with an error
// naming any path that is missing or ambiguous.
//
// A clone's network adapters are moved to the Spec's networks (standard or
// distributed port groups; adapters beyond the template's are added as
// VMXNET3), its guest is customized with cloud-init's user data and
// metadata (a CustomizationCloudinitPrep, applied as it first boots), and a
// Spec's Placement overrides the resource pool, datastore and folder (one
// below the provider's folder). Paths that do not resolve are invalid specs
// found before anything is cloned. VMs report the guest's addresses,
// hostname, tools and heartbeat as vCenter reads them from VMware Tools.
//
// Every VM it clones carries an ownership mark in its ExtraConfig
// ([KeyOwnerUID], [KeyOwnerName]), beside the zone, revision and base
// revision it was made for ([KeyZone], [KeyRevision], [KeyBaseRevision]);
// VMs without the caller's mark are never powered, modified or destroyed.
// A clone has CPU and memory hot-add turned on when its Spec asks
// (CpuHotAddEnabled, MemoryHotAddEnabled), and VMs report their CPUs,
// memory and hot-plug settings (config.hardware.numCPU and memoryMB,
// config.cpuHotAddEnabled, cpuHotRemoveEnabled and memoryHotAddEnabled).
// Create is idempotent by name: a VM found before cloning, or reported by
// vCenter as a duplicate name, is returned if it is ours. List reads every
// VM of the folder and the folders below it in one property retrieval over
// a container view. Tasks in flight are bounded (Config.MaxTasks).
//
// Delete shuts a VM down through its guest before it destroys it, as an
// administrator would: when the VM is powered on and its VMware Tools are
// running, it asks the guest to shut down (ShutdownGuest), which lets the
// guest's services stop and its file systems flush, and waits until
// vCenter reports the VM powered off, watching the power state with a
// property collector, for at most Config.ShutdownGrace
// ([DefaultShutdownGrace], 90 seconds, unless set). Only when the grace
// passes, vCenter refuses the request (no tools after all, or the VM
// changed state) or the tools are not running does it power the VM off
// (PowerOffVM_Task); nor does it ask a guest whose heartbeat is red (a
// hung guest, which would only wait out the grace before its
// replacement); a negative grace always powers off at once. So a
// Delete may take up to the grace; the wait holds no task slot and ends
// with the caller's context, leaving the VM for a retry.
//
// Resize (vmprovider.Resizer) changes a VM's CPUs and memory where it runs
// with one ReconfigVM_Task that records the new revisions in the same
// change. A change vCenter cannot make while the VM runs (memory lowered,
// or raised without hot-add) is refused unless the caller allows a power
// cycle; then the VM is stopped as Delete stops it (its guest shut down
// first), reconfigured and powered on again, and powered on again
// unchanged if the reconfigure fails.
//
// [Watch] keeps an in-memory copy of those VMs with one property collector
// waiting for updates (WaitForUpdatesEx) on a list view that holds a
// container view of the folder, never changed while it runs, built
// again after a lost session, and reports each change; [Cached] answers Get
// and List from it and changes vCenter through the Provider, so a settled
// operator costs vCenter no call beyond the watch's long poll. While the
// watch cannot reach vCenter (Watch.Health: a wait failed, or none was
// answered for 20 seconds), Cached's reads fail with
// vmprovider.ErrUnreachable: its copy is unknown, not current. A watch
// keeps every field of a VM unless told to leave some out
// ([Watch.SetFields]): each watched property costs vCenter work on every
// change it reports, and the simulator work on every change anywhere. Over
// several vCenters, give each its Provider, Watch and Cached, and join
// them with vmprovider.Endpoints.
//
// The package's tests and examples run against vcsim, govmomi's in-process
// vCenter simulator.
package vsphere
