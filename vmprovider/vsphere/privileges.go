package vsphere

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/vim25/types"
)

// ErrPrivileges means the account the provider logged in as lacks
// privileges it needs on its folder, pool, datastore or template; New
// returns an error wrapping it that names each privilege and object. So
// does every method, and the Watch's Health, when vCenter answers a call
// with NoPermission, naming what the fault says is missing.
// docs/vcenter.md lists what the provider needs, and why.
var ErrPrivileges = errors.New("vsphere: the account lacks privileges the provider needs")

// need is privileges the provider needs on one object.
type need struct {
	what       string // the object, for people
	ref        types.ManagedObjectReference
	privileges []string
}

// needed are the privileges the provider needs on each object of its
// placement, as the vSphere API reference lists them for the calls it
// makes: on the folder those of the VMs below it (granted with
// propagation), on the pool and datastore those a clone needs of them,
// and on the template the clone's own.
func (p *Provider) needed(tmpl *object.VirtualMachine) []need {
	out := []need{
		{"folder " + p.folder.InventoryPath, p.folder.Reference(), []string{
			"VirtualMachine.Inventory.CreateFromExisting", "VirtualMachine.Inventory.Delete",
			"VirtualMachine.Interact.PowerOn", "VirtualMachine.Interact.PowerOff", "VirtualMachine.Interact.Reset",
			"VirtualMachine.Config.AdvancedConfig", "VirtualMachine.Config.CPUCount", "VirtualMachine.Config.Memory",
			"VirtualMachine.Config.ManagedBy"}},
		{"resource pool " + p.pool.InventoryPath, p.pool.Reference(), []string{"Resource.AssignVMToPool"}},
		{"datastore " + p.store.InventoryPath, p.store.Reference(), []string{"Datastore.AllocateSpace"}},
	}
	if tmpl != nil {
		out = append(out, need{"template " + p.template, tmpl.Reference(), []string{"VirtualMachine.Provisioning.Clone"}})
	}
	return out
}

// checkPrivileges asks vCenter (AuthorizationManager.HasPrivilegeOnEntity,
// for this session) whether the account holds what the provider needs,
// and returns an error wrapping ErrPrivileges naming what it lacks, where.
func (p *Provider) checkPrivileges(ctx context.Context, tmpl *object.VirtualMachine) error {
	us, err := session.NewManager(p.client).UserSession(ctx)
	if err != nil {
		return fmt.Errorf("read the session to check its privileges: %w", err)
	}
	if us == nil {
		return fmt.Errorf("check the account's privileges: the client has no session")
	}
	am := object.NewAuthorizationManager(p.client)
	var lacks []string
	for _, n := range p.needed(tmpl) {
		granted, err := am.HasPrivilegeOnEntity(ctx, n.ref, us.Key, n.privileges)
		if err != nil {
			return fmt.Errorf("check the account's privileges on %s: %w", n.what, err)
		}
		var missing []string
		for i, id := range n.privileges {
			if i >= len(granted) || !granted[i] {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			lacks = append(lacks, fmt.Sprintf("%s on %s (%s %s)", strings.Join(missing, ", "), n.what, n.ref.Type, n.ref.Value))
		}
	}
	if len(lacks) > 0 {
		return fmt.Errorf("the account %s lacks %s: %w", us.UserName, strings.Join(lacks, "; "), ErrPrivileges)
	}
	return nil
}
