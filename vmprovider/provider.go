package vmprovider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// PowerState is a VM's power state, named as vSphere names it.
type PowerState string

// The power states a VM can be in.
const (
	PoweredOn  PowerState = "PoweredOn"
	PoweredOff PowerState = "PoweredOff"
	Suspended  PowerState = "Suspended"
)

// Owner identifies who a VM belongs to. A provider writes it on every VM it
// creates (the ownership mark) and never modifies or destroys a VM that does
// not carry the caller's mark.
type Owner struct {
	// UID is the owner's stable, unique identity, such as a Kubernetes UID.
	// It is required.
	UID string
	// Name is a human-readable name for the owner ("namespace/name"); it is
	// recorded beside the UID for people and never used to decide ownership.
	Name string
}

// Spec describes a VM to create.
type Spec struct {
	// Name is the VM's name, unique in the provider's folder. Required.
	Name string
	// Owner is written on the VM as its ownership mark. Owner.UID is
	// required.
	Owner Owner
	// Template is the image to clone; empty means the provider's default.
	Template string
	// CPUs is the number of virtual CPUs; zero keeps the template's.
	CPUs int32
	// MemoryMiB is the memory size in MiB; zero keeps the template's.
	MemoryMiB int64
	// CPUHotAdd turns CPU hot-add on in the VM, so that its CPUs can be
	// raised while it runs (InPlaceFor, Resizer); false keeps the
	// template's setting. vSphere changes it only while the VM is off.
	CPUHotAdd bool
	// MemoryHotAdd turns memory hot-add on in the VM, so that its memory
	// can be raised while it runs; false keeps the template's setting.
	// No platform lowers memory while a VM runs.
	MemoryHotAdd bool
	// PowerOn asks for the VM to be powered on once created.
	PowerOn bool
	// Networks names the networks (port groups, standard or distributed)
	// the VM's network adapters connect to, in order: the template's first
	// adapter is moved to Networks[0], its second to Networks[1], and an
	// adapter is added for each name beyond the template's. Empty keeps the
	// template's networks. A name that does not resolve is an invalid spec.
	Networks []string
	// CloudInit, when set, customizes the guest through cloud-init when it
	// first boots: its hostname, addresses and user data.
	CloudInit *CloudInit
	// Placement overrides the provider's default placement for this VM;
	// its empty fields keep the defaults.
	Placement Placement
	// Zone, when set, names the failure domain the VM is placed in
	// (replicaset.Spec.Zones). It is recorded beside the ownership mark
	// and reported back as VM.Zone; Placement says where the zone is.
	Zone string
	// Revision, when set, names the template the VM is made from
	// (TemplateRevision, replicaset.Spec.Revision). It is recorded beside
	// the ownership mark and reported back as VM.Revision, so that a Set
	// rolling a changed Template tells old VMs from new ones.
	Revision string
	// LinkedClone asks for a linked clone: the VM's disks are made as
	// children of a snapshot of the template instead of copies of its
	// disks, so the VM is made in seconds whatever the size of the
	// template's disks and takes only the space it writes, but depends on
	// that snapshot, and the datastore holding it, for as long as it
	// exists. The vsphere provider's package documentation ("Linked
	// clones") says what it needs and does; a provider that cannot make
	// linked clones ignores it. The default, false, is a full clone,
	// independent of the template once made, as a user of a template
	// expects unless told otherwise. It is chosen per Set (its Template's
	// LinkedClone) and is not part of TemplateRevision: it changes how a
	// VM's disks are stored, not what the VM is, so turning it on or off
	// replaces none of a Set's VMs (unless LinkedCloneSnapshot names a
	// snapshot, which is); the VMs made after it changed are made the new
	// way.
	LinkedClone bool
	// LinkedCloneSnapshot names the template's snapshot a linked clone
	// links to; empty means the provider's own (the vsphere provider's
	// LinkedCloneSnapshot). A provider takes it, once, when the template
	// has no snapshot of that name, and never links to another, such as
	// whichever is current: a backup product's temporary snapshot, say.
	// It is part of TemplateRevision when LinkedClone is set and it is not
	// empty: another snapshot is other disks.
	LinkedCloneSnapshot string
	// BaseRevision, when set, is the revision of everything in the
	// template but the VM's size (BaseRevision): recorded beside Revision
	// and reported back as VM.BaseRevision, it says whether a VM on
	// another revision can reach this one in place (InPlaceFor).
	BaseRevision string
}

// CloudInit is the data cloud-init reads in the guest.
type CloudInit struct {
	// UserData is the user data, such as a #cloud-config document or a
	// script.
	UserData string
	// MetaData is the instance metadata, a YAML mapping; cloud-init reads
	// local-hostname (or hostname) and a network-config version 2 under
	// network (ethernets.<name>.addresses, say, as "10.0.0.5/24"). It must
	// parse as a YAML mapping.
	MetaData string
}

// Placement says where in the platform's inventory a VM goes; every field
// is an inventory path or name, and empty means the provider's default.
type Placement struct {
	// ResourcePool is a resource pool, or a cluster meaning its root pool.
	ResourcePool string
	// Folder is the folder the VM is filed in; it must be the provider's
	// folder or one below it, where the provider looks for its VMs.
	Folder string
	// Datastore holds the VM's files.
	Datastore string
	// Endpoint names the platform endpoint (a vCenter) that holds the VM,
	// for a Provider over several (Endpoints); empty means its default. A
	// Provider of one endpoint ignores it.
	Endpoint string
}

// Validate reports what makes s unusable; the error wraps ErrInvalidSpec.
func (s Spec) Validate() error {
	var errs []error
	if s.Name == "" {
		errs = append(errs, fmt.Errorf("VM name is empty: %w", ErrInvalidSpec))
	}
	if s.Owner.UID == "" {
		errs = append(errs, fmt.Errorf("VM %q has no owner UID: %w", s.Name, ErrInvalidSpec))
	}
	if s.CPUs < 0 {
		errs = append(errs, fmt.Errorf("VM %q: CPUs %d is negative: %w", s.Name, s.CPUs, ErrInvalidSpec))
	}
	if s.MemoryMiB < 0 {
		errs = append(errs, fmt.Errorf("VM %q: memory %d MiB is negative: %w", s.Name, s.MemoryMiB, ErrInvalidSpec))
	}
	for i, n := range s.Networks {
		if strings.TrimSpace(n) == "" {
			errs = append(errs, fmt.Errorf("VM %q: networks[%d] is empty: %w", s.Name, i, ErrInvalidSpec))
		}
	}
	if s.CloudInit != nil {
		if err := s.CloudInit.validate(); err != nil {
			errs = append(errs, fmt.Errorf("VM %q: %w: %w", s.Name, err, ErrInvalidSpec))
		}
	}
	return errors.Join(errs...)
}

// VM is what a provider reports about one VM.
type VM struct {
	// Name is the VM's name.
	Name string
	// InstanceUUID is the platform's unique identifier for the VM.
	InstanceUUID string
	// Power is the current power state.
	Power PowerState
	// Owner is the owner UID of the VM's ownership mark; empty when the VM
	// carries no mark (it is not ours to touch).
	Owner string
	// OwnerName is the human-readable owner name recorded beside the
	// mark's UID (Owner.Name at creation); never used to decide ownership.
	OwnerName string
	// CreatedAt is when the VM was created; zero when unknown.
	CreatedAt time.Time
	// BootedAt is when the VM last powered on; zero when it is off or
	// unknown.
	BootedAt time.Time
	// IPAddresses are the addresses the guest reports on its network
	// adapters, in adapter order, the primary one first, without
	// link-local and loopback addresses, nor those of adapters that are no
	// device of the VM (a container host's bridges); empty until the
	// guest (through VMware Tools or customization) reports any.
	IPAddresses []string
	// Hostname is the guest's host name as it reports it; empty when
	// unknown.
	Hostname string
	// ToolsRunning says whether the guest's tools (VMware Tools,
	// open-vm-tools) are running.
	ToolsRunning bool
	// Heartbeat is the guest's heartbeat health; HeartbeatGreen means
	// the guest is up and answering.
	Heartbeat Heartbeat
	// Zone is the failure domain recorded when the VM was created
	// (Spec.Zone); empty when none was.
	Zone string
	// Revision is the template revision recorded when the VM was created
	// (Spec.Revision) or marked since (RevisionMarker); empty when none
	// was.
	Revision string
	// BaseRevision is the base revision recorded when the VM was created
	// (Spec.BaseRevision) or resized since (Resizer); empty when none was,
	// as on a VM made before in-place updates.
	BaseRevision string
	// CPUs is the VM's number of virtual CPUs; zero when the provider
	// does not report it.
	CPUs int32
	// MemoryMiB is the VM's memory size in MiB; zero when the provider
	// does not report it.
	MemoryMiB int64
	// CPUHotAdd, CPUHotRemove and MemoryHotAdd say whether the VM can
	// have its CPUs raised, its CPUs lowered and its memory raised while
	// it runs.
	CPUHotAdd, CPUHotRemove, MemoryHotAdd bool
	// CoresPerSocket is how many cores each of the VM's virtual sockets
	// has; its CPUs are always a whole number of sockets. Zero when the
	// provider does not report it.
	CoresPerSocket int32
	// MemoryHotAddLimitMiB and MemoryHotAddIncrementMiB bound memory
	// hot-add while the VM runs: its memory can be raised up to the limit,
	// to a multiple of the increment (for vSphere, config.hotPlugMemoryLimit
	// and hotPlugMemoryIncrementSize, which the host sets when it powers a
	// VM with memory hot-add on). Zero when there is no such bound or the
	// provider does not report it.
	MemoryHotAddLimitMiB, MemoryHotAddIncrementMiB int64
	// Endpoint is the endpoint that holds the VM, as Endpoints reports
	// it; empty from a Provider of one endpoint.
	Endpoint string
	// Unreachable, when not empty, says why the platform cannot read the
	// VM now, though it answers: for vSphere, the VM's connection state
	// (inaccessible when its datastore went away, disconnected with its
	// host, orphaned, invalid). Its other fields are as the provider last
	// read them, its power state as the platform shows it, and its guest
	// unknown. A Set counts it as unknown (replicaset.Replica.Unreachable):
	// never replaced by name, never deleted, never changed, and a
	// provider refuses to act on it (ErrUnreadable).
	Unreachable string
	// Creating reports that the platform is still making the VM: a create
	// whose call ended (its context done) while the platform goes on with
	// the work, such as a vCenter clone of minutes. Only its name, mark,
	// zone, revisions, size, instance UUID and CreatedAt (when the create
	// began) are known; it has no power state yet. A Set counts it as a
	// replica being provisioned (replicaset.PhasePending), so that it makes
	// no second VM in its stead; a Delete of it cancels the work, and a
	// Create of its name by its owner waits for it. Other methods find no
	// VM of its name until the work is done; a VM the platform shows
	// before then (made, not yet powered on) is reported Creating too.
	Creating bool
	// Deleting reports that a Delete of the VM is under way and the
	// platform (or the provider) finishes it on its own: for vSphere, a
	// guest asked to shut down, powered off when its grace has passed,
	// then destroyed. A Set plans it as a replica being deleted
	// (replicaset.Replica.Deleting): never deleted again, no longer
	// counted toward the desired count. Other methods refuse it with
	// ErrDeleting.
	Deleting bool
	// Failed, when not empty, says why the platform reports that the VM
	// failed and will not run as asked without help: for vSphere, its
	// guest customization failed (guest.customizationInfo, with vCenter's
	// error message), so its cloud-init or identity was not applied. A Set
	// plans it as failed (replicaset.PhaseFailed): replaced at once under
	// Remediation, and deleted first on a scale-down.
	Failed string
}

// Heartbeat is the health of a guest's heartbeat, named as vSphere names it.
type Heartbeat string

// The heartbeat healths a guest can show: gray is unknown (no tools, or the
// VM is off).
const (
	HeartbeatGray   Heartbeat = "gray"
	HeartbeatGreen  Heartbeat = "green"
	HeartbeatYellow Heartbeat = "yellow"
	HeartbeatRed    Heartbeat = "red"
)

// Provider is what a replica set needs from a VM platform. Every method is
// safe for concurrent use, and Create and Delete are idempotent.
//
// Methods that act on a VM take the caller's owner UID and refuse, with an
// error wrapping ErrNotOwned, to act on a VM without that mark.
type Provider interface {
	// Create creates the VM spec describes and returns it. If a VM of that
	// name already exists with spec.Owner's mark, Create returns it instead
	// (a retried create after a lost response); if it exists without that
	// mark, Create returns a *NotOwnedError. An invalid spec gives an error
	// wrapping ErrInvalidSpec. A failed create leaves no VM behind. The VM
	// keeps spec.Zone and spec.Revision, and Get and List report them as
	// VM.Zone and VM.Revision (a Set spreading over zones, or rolling a
	// new Template, reads them from List). A provider that records
	// spec.BaseRevision reports it as VM.BaseRevision; one that does not
	// leaves it empty, and its VMs are replaced rather than changed in
	// place (InPlaceFor).
	Create(ctx context.Context, spec Spec) (VM, error)
	// Get returns the VM called name, whoever owns it, or an error
	// wrapping ErrNotFound.
	Get(ctx context.Context, name string) (VM, error)
	// List returns every VM carrying owner's mark, in one round trip.
	List(ctx context.Context, owner string) ([]VM, error)
	// SetPower powers the VM called name on or off (PoweredOn or
	// PoweredOff); a VM already in that state is left alone.
	SetPower(ctx context.Context, name, owner string, state PowerState) error
	// Delete stops and destroys the VM called name. A provider may shut
	// the guest down gracefully first and power the VM off only if the
	// guest has not stopped within a grace period of its own (the vsphere
	// provider's Config.ShutdownGrace), so Delete may take up to that
	// period; bound it with ctx, and retry a Delete that ctx ended. A VM
	// that is already gone is success.
	Delete(ctx context.Context, name, owner string) error
}

// Errors providers return; match them with errors.Is.
var (
	// ErrNotFound means no VM has the given name.
	ErrNotFound = errors.New("vmprovider: VM not found")
	// ErrNotOwned means a VM exists but lacks the caller's ownership mark.
	// It is wrapped by *NotOwnedError.
	ErrNotOwned = errors.New("vmprovider: VM not owned by the caller")
	// ErrInvalidSpec means a Spec or a requested state cannot be used.
	ErrInvalidSpec = errors.New("vmprovider: invalid spec")
	// ErrPlacement means a Spec's placement (its resource pool, datastore
	// or folder) is not in the platform's inventory, as when a zone's
	// cluster was removed or renamed; errors wrapping it wrap
	// ErrInvalidSpec too. For a VM in a zone it says the zone cannot
	// take VMs, which the next VM may avoid.
	ErrPlacement = errors.New("vmprovider: placement not in the inventory")
	// ErrUnreadable means the platform cannot read the VM now
	// (VM.Unreachable says why), so the provider did nothing to it: its
	// state, and whose it is, are unknown until it can.
	ErrUnreadable = errors.New("vmprovider: the platform cannot read the VM now")
	// ErrDeleting reports that a Delete of the VM is under way and the
	// provider finishes it on its own (VM.Deleting): Delete answers it
	// when it started the deletion or it was already under way, and
	// other methods refuse such a VM with it. The VM is not gone yet; a
	// caller that needs it gone calls Delete again later, which answers
	// nil once it is.
	ErrDeleting = errors.New("vmprovider: the VM is being deleted")
)

// NotOwnedError says which VM was refused and whose mark it carries.
type NotOwnedError struct {
	// Name is the VM's name.
	Name string
	// Want is the caller's owner UID.
	Want string
	// Got is the owner UID on the VM's mark; empty when it has none.
	Got string
}

// Error explains why the VM was not touched.
func (e *NotOwnedError) Error() string {
	if e.Got == "" {
		return fmt.Sprintf("VM %q exists without an ownership mark, so it was left untouched (owner %q wanted it)", e.Name, e.Want)
	}
	return fmt.Sprintf("VM %q belongs to owner %q, not %q, so it was left untouched", e.Name, e.Got, e.Want)
}

// Unwrap returns ErrNotOwned.
func (e *NotOwnedError) Unwrap() error { return ErrNotOwned }

// validate checks that the metadata is a YAML mapping.
func (c *CloudInit) validate() error {
	_, _, err := c.Guest()
	return err
}

// Guest reads from MetaData what cloud-init will configure in the guest: its
// host name (local-hostname, else hostname) and the addresses of
// network.ethernets, adapters in name order, without prefix lengths, as a
// guest reports them. Empty metadata gives neither; metadata that is not a
// YAML mapping is an error.
func (c CloudInit) Guest() (hostname string, addresses []string, err error) {
	if strings.TrimSpace(c.MetaData) == "" {
		return "", nil, nil
	}
	var md struct {
		Hostname      string `json:"hostname"`
		LocalHostname string `json:"local-hostname"`
		Network       struct {
			Ethernets map[string]struct {
				Addresses []string `json:"addresses"`
			} `json:"ethernets"`
		} `json:"network"`
	}
	var mapping map[string]any
	if err := yaml.Unmarshal([]byte(c.MetaData), &mapping); err != nil {
		return "", nil, fmt.Errorf("cloudInit.metaData is not a YAML mapping: %w", err)
	}
	if err := yaml.Unmarshal([]byte(c.MetaData), &md); err != nil {
		return "", nil, fmt.Errorf("cloudInit.metaData: hostname, local-hostname or network.ethernets.<name>.addresses has the wrong shape (want strings, and a list of strings for addresses)")
	}
	hostname = md.LocalHostname
	if hostname == "" {
		hostname = md.Hostname
	}
	for _, name := range slices.Sorted(maps.Keys(md.Network.Ethernets)) {
		for _, a := range md.Network.Ethernets[name].Addresses {
			ip, _, _ := strings.Cut(a, "/")
			addresses = append(addresses, ip)
		}
	}
	return hostname, addresses, nil
}
