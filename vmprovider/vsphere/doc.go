// Package vsphere implements vmprovider.Provider on VMware vCenter with
// govmomi.
//
// [New] logs in with the credentials in a [Config] (which never prints
// them): a user name and password, or, for a site that gives its
// automation no password, a client certificate registered for a vCenter
// extension (Config.ExtensionKey, Config.ClientCertificate, through
// vCenter's SDK tunnel). It verifies vCenter's certificate unless told
// otherwise (a CA bundle or a thumbprint can be given), keeps the session
// alive and logs in again, asking for the credentials or the certificate
// anew, when it has expired. It resolves the placement once (datacenter, VM folder,
// resource pool or cluster, datastore, template) and fails with an error
// naming any path that is missing or ambiguous. A template is looked up
// again when vCenter says the VM it named is gone: one destroyed and
// rebuilt under the same path (Packer's -force, an image pipeline) is
// picked up by the next create, with no restart; with none at the path,
// creates fail as invalid specs until one is there. When vCenter refuses
// a call for want of a privilege (NoPermission, whose message names
// none), the error of the provider's method begins with the privileges
// the fault lists and the objects they are missing on ("the account lacks
// VirtualMachine.Provisioning.Clone on VirtualMachine vm-42: …"), and
// still carries the fault.
//
// A clone's network adapters are moved to the Spec's networks (standard or
// distributed port groups; adapters beyond the template's are added as
// VMXNET3), its guest is given cloud-init's user data and metadata (a
// CustomizationCloudinitPrep, applied as it first boots; or, with
// Config.CloudInitTransport CloudInitGuestInfo, as vm-operator does, the
// guestinfo keys cloud-init's VMware datasource reads, the template's vApp
// configuration removed from the clone), and a
// Spec's Placement overrides the resource pool, datastore and folder (one
// below the provider's folder). Paths that do not resolve are invalid specs
// found before anything is cloned. VMs report the guest's addresses,
// hostname, tools and heartbeat as vCenter reads them from VMware Tools.
//
// A clone into a cluster names its host, as vCenter requires where DRS is
// off (a Standard licence, or DRS turned off: vCenter refuses a clone
// into such a cluster's pool that names no host, with InvalidArgument for
// spec.pool). Where DRS is on, the host is DRS's recommendation
// (ClusterComputeResource.PlaceVm, for the clone and its datastore);
// where it is off, the connected host out of maintenance mode with the
// fewest VMs, the first by name on a tie. When DRS answers with a fault or
// recommends no host, the clone names none and vCenter places it itself
// (its error, if it fails, says so). A cluster without DRS and with no
// such host fails the create with an error naming the cluster and each
// host's state. A pool of a standalone host needs no host named.
//
// Every VM it clones carries an ownership mark in its ExtraConfig
// ([KeyOwnerUID], [KeyOwnerName]), beside the zone, revision and base
// revision it was made for ([KeyZone], [KeyRevision], [KeyBaseRevision]);
// VMs without the caller's mark are never powered, modified or destroyed.
// Every mark is written, an empty one too, so that none a template made
// from a replica carries survives into a clone.
// A clone has CPU and memory hot-add turned on when its Spec asks
// (CpuHotAddEnabled, MemoryHotAddEnabled), and VMs report their CPUs,
// memory and hot-plug settings (config.hardware.numCPU and memoryMB,
// config.cpuHotAddEnabled, cpuHotRemoveEnabled and memoryHotAddEnabled).
// Create is idempotent by name: a VM found before cloning, or reported by
// vCenter as a duplicate name, is returned if it is ours. List reads every
// VM of the folder and the folders below it in one property retrieval over
// a container view. Clones in flight are bounded (Config.MaxClones), and
// the short tasks (power, reset, reconfigure, destroy) apart
// (Config.MaxTasks); every call keeps to a rate (Config.RequestsPerSecond).
//
// A create outlives its call: when the caller's context ends during a
// clone, which on vCenter may run for minutes, the provider waits for the
// clone on its own, and List and Get report the VM with
// vmprovider.VM.Creating set until vCenter shows it. A Create of the name
// joins it rather than clone again, and a Delete cancels it (CancelTask),
// so a Set neither makes a second VM in its stead nor ends with one too
// many.
//
// Delete shuts a VM down through its guest before it destroys it, as an
// administrator would: when the VM is powered on and its VMware Tools are
// running, it asks the guest to shut down (ShutdownGuest), which lets the
// guest's services stop and its file systems flush, and the provider
// waits until vCenter reports the VM powered off, watching the power state
// with a property collector, for at most Config.ShutdownGrace
// ([DefaultShutdownGrace], 90 seconds, unless set). Only when the grace
// passes, vCenter refuses the request (no tools after all, or the VM
// changed state) or the tools are not running does it power the VM off
// (PowerOffVM_Task); nor does it ask a guest whose heartbeat is red (a
// hung guest, which would only wait out the grace before its
// replacement), nor one whose tools say it supports no state change
// (guest.guestStateChangeSupported false); a negative grace always powers
// off at once. The caller is not held for the grace: once the guest took
// the request, unless it is off already, Delete returns an error wrapping vmprovider.ErrDeleting
// and the provider finishes the deletion on its own, the VM listed with
// vmprovider.VM.Deleting until it is gone; a vmprovider.Set plans it as
// being deleted, and a caller that needs it gone (a finalizer) calls
// Delete again later, which answers nil once it is. The guest is asked
// once per provider.
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
// vCenter simulator, behind a wrapper that refuses what vCenter refuses and
// the simulator serves (a clone into a cluster without DRS that names no
// host). Elsewhere the simulator (v0.56.0) differs from vCenter: it drops
// cpuHotAddEnabled, memoryHotAddEnabled and managedBy from a clone's spec (its clones
// report hot-add off, so an in-place raise needs a power cycle), ignores the
// disk move type (a linked clone is a full copy), applies any resize to a
// running VM, and derives a VM's instance UUID from its path (a VM made anew
// under the same name keeps it: compare creation times). To try the provider
// on the plain simulator, run simulator.VPX() and give New its URL with
// Config{Datacenter: "DC0", ResourcePool: "/DC0/host/DC0_C0", Datastore:
// "LocalDS_0", Template: "DC0_H0_VM0"}, and expect those differences.
//
// # Identity
//
// A clone is given an instance UUID the provider chose: its first 60 bits
// name the owner (a hash of its UID), the rest are random, so a VM made
// again under a name is a new replica (Replica.UID differs). The UUID is
// also written under [KeyIdentity]. vCenter gives any copy of the VM (a
// clone, a template, a backup restored as a new VM) a UUID of its own
// while the copy keeps the ExtraConfig: a VM whose instance UUID is not
// its KeyIdentity is a copy, carries no one's mark, and is never adopted,
// listed, powered, modified or destroyed as a replica. VMs made before
// KeyIdentity existed carry none and are judged by their mark alone.
// Names are unique per folder only: of several VMs of a name in the
// folders below the provider's (a copy filed beside the replica under its
// name), the methods that act on a VM take the one carrying the caller's
// mark, and Get a replica before a copy. The provider's API stays keyed by
// name; the instance UUID decides which VM of the name is the replica.
// Each clone also asks vCenter to record it as managed by the provider
// (config.managedBy: [ManagedByExtension], [ManagedByType]), which the
// vSphere Client shows on the VM, warning whoever edits or deletes it by
// hand.
//
// # Failed customizations
//
// A VM whose guest customization failed (vCenter 7.0 U2 and later report
// it in guest.customizationInfo: TOOLSDEPLOYPKG_FAILED, with an error
// message) did not apply its cloud-init or identity, so it will not serve
// as asked: Get, List and the Watch report it with vmprovider.VM.Failed
// set to vCenter's reason, and a vmprovider.Set plans it as failed
// (replaced at once under Remediation). The property is read with the
// others, so the provider needs vCenter 7.0 U2 or later, which has it.
//
// # VMs vCenter cannot read
//
// When a datastore goes away, vCenter keeps its VMs in the inventory but
// returns no configuration for them (VirtualMachine.config is unset), so
// their marks are unread, and shows why in runtime.connectionState:
// inaccessible, or disconnected with their host, orphaned, invalid (vSphere
// API reference, VirtualMachineConnectionState). Such a VM is not
// dropped: Get, List and the Watch report it with VM.Unreachable set to
// that state, its marks and size as the provider last read them, its
// power state as vCenter shows it and its guest unknown, and a
// vmprovider.Set counts it as unknown (replicaset.Replica.Unreachable):
// never replaced by name nor deleted. A provider started while the VM was
// unreadable has not read its marks; it knows the VM as its owner's by its
// instance UUID (summary.config.instanceUuid, Identity above), and reports
// it without zone or revision. Every method that acts on a VM refuses one
// vCenter cannot read, with an error wrapping vmprovider.ErrUnreadable.
//
// # Linked clones
//
// A Spec with LinkedClone set is made as Cluster API's vSphere provider
// (CAPV) makes a VM with cloneMode linkedClone: its disks are new child
// disks (DiskMoveType createNewChildDiskBacking) of a snapshot of the
// template (CloneSpec.Snapshot), which is read-only, so nothing is
// copied, and the VM takes only the space it writes. The snapshot is the
// one the Spec names (LinkedCloneSnapshot), or [LinkedCloneSnapshot]
// when it names none, wherever it is in the template's snapshot tree, and
// never whichever is current: backup products take temporary snapshots
// of templates too, and a VM linked to one of those would depend on a
// snapshot the backup then deletes. Of several snapshots of the name, the
// earliest is used. A template without the snapshot is given it, of its disks
// only (no memory, no quiescing: a template that is running gives a
// crash-consistent one), once: the concurrent creates of a Provider wait
// for the first to take it, and a snapshot another process took meanwhile
// is used instead (two processes that find none at the same moment may
// take one each; every create then links to the earlier, and the other
// holds only the VMs its process made before it saw the first). That
// snapshot is the only change
// the Provider makes to a VM without its mark. vCenter takes no snapshot
// of a VM marked as a template (CAPV's guide has it marked as a VM,
// snapshotted and marked again), so such a template without the snapshot
// named is an invalid spec, whose error lists the snapshots it has.
//
// A linked clone reads the template's disks, as they were at the
// snapshot, for as long as it exists: do not delete the snapshot (vCenter
// would merge what the template wrote since into the disks the clones
// read), nor the template, nor move its disks, while linked clones of it
// exist. What changes on the template's disks after the snapshot does not
// reach them. Taking a later snapshot, or reverting the template to
// another one, changes nothing for linked clones: they link to the
// snapshot named. Naming another snapshot (LinkedCloneSnapshot) is part
// of the template's revision, so a Set with a Rollout replaces its VMs.
// The VM's files and its child disks go on the datastore of its placement
// (Placement.Datastore, else Config.Datastore), as a full clone's do, and the template's disks stay
// where they are: when that datastore is not the template's, the VM is
// still linked, its child disks there and their parents on the template's
// datastore, as CAPV makes it (its destination datastore with
// createNewChildDiskBacking for each disk). So the hosts of the VM's
// resource pool must reach the template's datastore as well; vCenter
// refuses a clone whose parent disks they cannot reach, and Create
// returns its fault.
//
// Full clones stay the default: a full clone is independent of the
// template once made, whatever later happens to the template, its
// snapshots or its datastore, which is what a user of a template expects
// unless told otherwise, while a linked clone ties every VM to the
// template's snapshot and datastore for its life, and making the first
// one may change the template. CAPV defaults to linkedClone (its
// cloneMode "defaults to linkedClone, but fails gracefully to fullClone
// if the source of the clone operation has no snapshots") but never takes
// a snapshot itself, so it links only where someone chose to snapshot the
// template; here, where LinkedClone takes the snapshot, the choice is the
// user's to make.
package vsphere
