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
// Every VM it clones carries an ownership mark in its ExtraConfig
// ([KeyOwnerUID], [KeyOwnerName]); VMs without the caller's mark are never
// powered, modified or destroyed. Create is idempotent by name: a VM found
// before cloning, or reported by vCenter as a duplicate name, is returned
// if it is ours. List reads every VM of the folder in one property
// retrieval over a container view. Tasks in flight are bounded
// (Config.MaxTasks).
//
// The package's tests and examples run against vcsim, govmomi's in-process
// vCenter simulator.
package vsphere
