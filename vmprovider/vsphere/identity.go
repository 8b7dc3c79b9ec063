package vsphere

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/vmprovider"
)

// KeyIdentity records, in the ExtraConfig of every VM the provider clones,
// the instance UUID it gave the VM. vCenter gives a VM copied from it (a
// clone, a template, a backup restored as a new VM) an instance UUID of
// its own while the copy keeps the ExtraConfig: a VM whose instance UUID
// differs from its KeyIdentity is a copy, and carries no owner's mark
// whatever its other keys say. VMs made before the key existed carry
// none and are judged by their mark alone.
const KeyIdentity = "replicakit.identity"

// The managed-by mark of every VM the provider clones (its
// config.managedBy): vCenter records that the VM is managed by the
// extension ManagedByExtension, as a VM of type ManagedByType. The vSphere
// Client shows it on the VM's summary and warns whoever edits or deletes
// the VM by hand; it names the extension by its description once the
// extension is registered (ExtensionManager.RegisterExtension, as
// docs/vcenter.md shows), and by its key until then. The provider writes it
// and never reads it: ownership is the KeyOwnerUID mark.
const (
	ManagedByExtension = "io.replicakit"
	ManagedByType      = "replica"
)

// newInstanceUUID returns an instance UUID for a VM of owner: its first 60
// bits name the owner (a hash of its UID), so that the provider knows the
// VM as the owner's even when vCenter cannot read its ExtraConfig (ownsUUID);
// the rest are random, so that a VM made again under the same name is a
// new replica. It is an RFC 9562 version 8 (custom) UUID.
func newInstanceUUID(owner string) string {
	var u [16]byte
	h := sha256.Sum256([]byte("replicakit owner\x00" + owner))
	copy(u[:8], h[:8])
	_, _ = rand.Read(u[8:])
	u[6] = u[6]&0x0f | 0x80 // version 8
	u[8] = u[8]&0x3f | 0x80 // variant 10
	return formatUUID(u)
}

// ownsUUID reports whether uuid is one newInstanceUUID made for owner.
func ownsUUID(uuid, owner string) bool {
	b, err := hex.DecodeString(strings.ReplaceAll(uuid, "-", ""))
	if err != nil || len(b) != 16 || owner == "" || b[6]>>4 != 8 {
		return false
	}
	h := sha256.Sum256([]byte("replicakit owner\x00" + owner))
	return string(b[:6]) == string(h[:6]) && b[6]&0x0f == h[6]&0x0f && b[7] == h[7]
}

func formatUUID(u [16]byte) string {
	s := hex.EncodeToString(u[:])
	return s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:]
}

// unreadable returns why vCenter cannot read a VM now, or "" when it can:
// its connection state when that is not connected (vSphere API reference,
// enum VirtualMachineConnectionState: disconnected with its host,
// orphaned, inaccessible when its configuration files are, invalid), or
// "no configuration" when vCenter returns none (VirtualMachine.config,
// "not guaranteed to be available"), or one without the instance UUID
// every configuration has (a watch whose update brought the connection
// state back before the configuration).
func unreadable(m *mo.VirtualMachine) string {
	if s := m.Runtime.ConnectionState; s != "" && s != types.VirtualMachineConnectionStateConnected {
		return string(s)
	}
	if m.Config == nil || m.Config.InstanceUuid == "" {
		return "no configuration"
	}
	return ""
}

// read converts properties read from vCenter into a VM, as toVM does, and
// remembers it by reference while vCenter can read it. A VM it cannot read
// (unreadable) is reported as last read, with VM.Unreachable saying why,
// its power state as vCenter shows it and its guest unknown: its marks
// are in the configuration vCenter no longer returns. A VM never read
// since the provider started is reported by name and instance UUID
// (summary.config.instanceUuid), with no mark; List and the watch take it
// as the owner's when its instance UUID says so (ownsUUID). A nil p
// remembers nothing.
func (p *Provider) read(m *mo.VirtualMachine) vmprovider.VM {
	why := unreadable(m)
	if why == "" {
		vm := toVM(*m)
		if p != nil {
			p.known.Store(m.Self, vm)
		}
		return vm
	}
	var vm vmprovider.VM
	ok := false
	if p != nil {
		var last any
		last, ok = p.known.Load(m.Self)
		vm, _ = last.(vmprovider.VM)
	}
	if !ok {
		vm = vmprovider.VM{Name: m.Name}
		if c := m.Summary.Config; c.InstanceUuid != "" {
			vm.InstanceUUID = c.InstanceUuid
		}
	}
	if m.Name != "" {
		vm.Name = m.Name
	}
	vm.Unreachable = why
	vm.Power = toVM(*m).Power
	vm.BootedAt, vm.IPAddresses, vm.Hostname, vm.ToolsRunning = time.Time{}, nil, "", false
	vm.Heartbeat = vmprovider.HeartbeatGray
	return vm
}

// forget drops what read remembers of the VM ref, gone from the folder.
// A nil p remembers nothing.
func (p *Provider) forget(ref types.ManagedObjectReference) {
	if p != nil {
		p.known.Delete(ref)
	}
}

// keepOnly forgets what read remembers of every VM but refs, the VMs
// now in the folder. A nil p remembers nothing.
func (p *Provider) keepOnly(refs map[types.ManagedObjectReference]bool) {
	if p == nil {
		return
	}
	p.known.Range(func(k, _ any) bool {
		if !refs[k.(types.ManagedObjectReference)] {
			p.known.Delete(k)
		}
		return true
	})
}

// claims returns vm as owner's, and whether it is: it carries owner's
// mark, or vCenter cannot read its marks and its instance UUID names
// owner (then its Owner is set to owner, as List promises).
func claims(vm vmprovider.VM, owner string) (vmprovider.VM, bool) {
	switch {
	case owner == "":
		return vm, false
	case vm.Owner == owner:
		return vm, true
	case vm.Owner == "" && vm.Unreachable != "" && ownsUUID(vm.InstanceUUID, owner):
		vm.Owner = owner
		return vm, true
	}
	return vm, false
}
