package vcsim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// WriteEnvFile writes govc's environment for the simulator to path (mode
// 0600) and its certificate to path+".ca.pem", so that `. path; govc ls`
// inspects it from another process. Readers never see half a file.
func (s *Sim) WriteEnvFile(path string) error {
	ca, err := filepath.Abs(path + ".ca.pem")
	if err != nil {
		return err
	}
	if err := os.WriteFile(ca, s.CA, 0o600); err != nil {
		return err
	}
	c := s.Config()
	env := fmt.Sprintf("GOVC_URL=%s\nGOVC_USERNAME=%s\nGOVC_PASSWORD=%s\nGOVC_TLS_CA_CERTS=%s\nGOVC_DATACENTER=%s\n",
		c.URL, c.Username, c.Password, ca, c.Datacenter)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(env), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadEnvFile reads a file written by WriteEnvFile back into a provider
// configuration (URL, credentials, CA file and datacenter).
func ReadEnvFile(path string) (vsphere.Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return vsphere.Config{}, err
	}
	var c vsphere.Config
	for line := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
		switch k {
		case "GOVC_URL":
			c.URL = v
		case "GOVC_USERNAME":
			c.Username = v
		case "GOVC_PASSWORD":
			c.Password = v
		case "GOVC_TLS_CA_CERTS":
			c.CAFile = v
		case "GOVC_DATACENTER":
			c.Datacenter = v
		}
	}
	if c.URL == "" || c.Username == "" {
		return c, fmt.Errorf("vcsim: %s holds no GOVC_URL or GOVC_USERNAME", path)
	}
	return c, nil
}

// VMNames logs in to the vCenter that cfg reaches (the simulator or any
// other, through vsphere.Connect) and returns the sorted names of the VMs in
// the VM folder of cfg's datacenter (the only one when empty), to check what
// an operator did through the real protocol. It
// reads through the property collector, which vcsim serves under its object
// locks (its container views walk the inventory unlocked and race with
// concurrent destroys).
func VMNames(ctx context.Context, cfg vsphere.Config) ([]string, error) {
	vc, logout, err := vsphere.Connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logout(context.WithoutCancel(ctx)) }()
	vms, err := FolderVMs(ctx, vc, cfg, "name")
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(vms))
	for _, vm := range vms {
		names = append(names, vm.Name)
	}
	slices.Sort(names)
	return names, nil
}

// VMClusters is VMNames with where each VM runs: the name of the cluster
// (or standalone host) owning its resource pool, by VM name.
func VMClusters(ctx context.Context, cfg vsphere.Config) (map[string]string, error) {
	vc, logout, err := vsphere.Connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logout(context.WithoutCancel(ctx)) }()
	vms, err := FolderVMs(ctx, vc, cfg, "name", "resourcePool")
	if err != nil {
		return nil, err
	}
	pc := property.DefaultCollector(vc)
	owners := map[types.ManagedObjectReference]string{} // pool -> its owner's name
	out := make(map[string]string, len(vms))
	for _, vm := range vms {
		p := vm.ResourcePool
		if p == nil {
			out[vm.Name] = ""
			continue
		}
		if _, ok := owners[*p]; !ok {
			var pool mo.ResourcePool
			if err := pc.RetrieveOne(ctx, *p, []string{"owner"}, &pool); err != nil {
				return nil, err
			}
			var cr mo.ManagedEntity
			if err := pc.RetrieveOne(ctx, pool.Owner, []string{"name"}, &cr); err != nil {
				return nil, err
			}
			owners[*p] = cr.Name
		}
		out[vm.Name] = owners[*p]
	}
	return out, nil
}

// FolderVMs reads props of the VMs in the VM folder of cfg's datacenter
// (the only one when cfg names none) through vc.
func FolderVMs(ctx context.Context, vc *vim25.Client, cfg vsphere.Config, props ...string) ([]mo.VirtualMachine, error) {
	folder, err := VMFolder(ctx, vc, cfg)
	if err != nil {
		return nil, err
	}
	return ChildVMs(ctx, vc, folder, props...)
}

// VMFolder finds the VM folder of cfg's datacenter (the only one when cfg
// names none).
func VMFolder(ctx context.Context, vc *vim25.Client, cfg vsphere.Config) (types.ManagedObjectReference, error) {
	dc, err := find.NewFinder(vc, false).DatacenterOrDefault(ctx, cfg.Datacenter)
	if err != nil {
		return types.ManagedObjectReference{}, err
	}
	folders, err := dc.Folders(ctx)
	if err != nil {
		return types.ManagedObjectReference{}, err
	}
	return folders.VmFolder.Reference(), nil
}

// ChildVMs reads props of the VMs in folder through the property
// collector, which the simulator serves under its object locks (its
// container views race with concurrent destroys). A VM destroyed between
// the two reads fails the second with ManagedObjectNotFound: ChildVMs
// then reads both again, a few times, so that a caller taking a snapshot
// while VMs are deleted gets one instead of an error.
func ChildVMs(ctx context.Context, vc *vim25.Client, folder types.ManagedObjectReference, props ...string) ([]mo.VirtualMachine, error) {
	pc := property.DefaultCollector(vc)
	for attempt := 1; ; attempt++ {
		var f mo.Folder
		if err := pc.RetrieveOne(ctx, folder, []string{"childEntity"}, &f); err != nil {
			return nil, err
		}
		refs := slices.DeleteFunc(f.ChildEntity, func(r types.ManagedObjectReference) bool { return r.Type != "VirtualMachine" })
		var vms []mo.VirtualMachine
		if len(refs) == 0 {
			return nil, nil
		}
		switch err := pc.Retrieve(ctx, refs, props, &vms); {
		case err == nil:
			return vms, nil
		case attempt == 5 || !fault.Is(err, &types.ManagedObjectNotFound{}):
			return nil, err
		}
	}
}

// WriteVCenterDir writes the simulator's settings into dir, one file per
// setting, as vmset-manager's -vcenter reads a vCenter from a mounted
// Secret: url, username, password, ca.crt, datacenter, folder,
// resourcePool, datastore and template.
func (s *Sim) WriteVCenterDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	c := s.Config()
	for name, v := range map[string]string{
		"url": c.URL, "username": c.Username, "password": c.Password, "ca.crt": string(s.CA),
		"datacenter": c.Datacenter, "folder": c.Folder, "resourcePool": c.ResourcePool,
		"datastore": c.Datastore, "template": c.Template,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o600); err != nil {
			return err
		}
	}
	return nil
}
