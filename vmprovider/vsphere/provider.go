package vsphere

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/vmprovider"
)

// The ExtraConfig keys of the ownership mark written on every VM.
const (
	KeyOwnerUID  = "replicakit.owner.uid"
	KeyOwnerName = "replicakit.owner.name"
	// KeyZone records the zone a VM was created for (vmprovider.Spec.Zone).
	KeyZone = "replicakit.zone"
	// KeyRevision records the revision of the template a VM was made
	// from (vmprovider.Spec.Revision, vmprovider.RevisionMarker).
	KeyRevision = "replicakit.revision"
	// KeyBaseRevision records the base revision of the template a VM
	// was made from (vmprovider.Spec.BaseRevision), changed with its size
	// (vmprovider.Resizer).
	KeyBaseRevision = "replicakit.base-revision"
)

// vmProps are the properties read for every VM, in one call: all of a
// VM (AllFields).
var vmProps = AllFields.props()

// Provider implements vmprovider.Provider on vCenter with govmomi. It is
// safe for concurrent use.
type Provider struct {
	client    *vim25.Client
	sessions  *session.Manager // nil when the caller brought the client
	dc        *object.Datacenter
	folder    *object.Folder
	pool      *object.ResourcePool
	store     *object.Datastore
	finder    *find.Finder
	template  string
	tasks     chan struct{}      // slots of the short tasks: power, reset, reconfigure, destroy, snapshot
	clones    chan struct{}      // slots of the clones
	grace     time.Duration      // Delete's wait for a guest shutdown; negative: none
	cloudInit CloudInitTransport // how a Spec's CloudInit reaches the guest

	// life ends with Close, and with it the creates and deletes still in
	// flight (ops).
	life    context.Context
	endLife context.CancelFunc
	ops     sync.WaitGroup

	// known holds, by reference, each VM of the folder as last read while
	// vCenter could read it (read), for when it cannot.
	known sync.Map

	mu        sync.Mutex
	templates map[string]*object.VirtualMachine
	names     map[string]*nameLock
	// asked holds when each VM's guest was asked to shut down, by a
	// Delete that has not finished, so that a retry does not ask again
	// and give it a new grace.
	asked map[types.ManagedObjectReference]time.Time
	// snapshotting holds a lock per template, taken to take its snapshot
	// for linked clones (linkSnapshot); made on first use.
	snapshotting map[types.ManagedObjectReference]chan struct{}
	// creates holds the creates in flight by VM name (creating.go).
	creates map[string]*createOp
	// deletes holds, by VM name, the deletes the provider finishes on its
	// own while a guest shuts down (shutdown.go).
	deletes map[string]*deleteOp
}

// nameLock serializes operations on one VM name, so that concurrent creates
// of a name wait for the first instead of seeing its clone half made.
type nameLock struct {
	sync.Mutex
	refs int
}

// lockName locks name and returns the unlock function.
func (p *Provider) lockName(name string) func() {
	p.mu.Lock()
	l, ok := p.names[name]
	if !ok {
		l = &nameLock{}
		p.names[name] = l
	}
	l.refs++
	p.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		p.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(p.names, name)
		}
		p.mu.Unlock()
	}
}

var (
	_ vmprovider.Provider       = (*Provider)(nil)
	_ vmprovider.RevisionMarker = (*Provider)(nil)
	_ vmprovider.Resetter       = (*Provider)(nil)
)

// New logs in to vCenter as cfg says, resolves the placement once and
// checks that the account holds the privileges the provider needs on it
// (docs/vcenter.md lists them). Its errors say why it failed: an
// ambiguous or missing inventory path is named; privileges the account
// lacks are named, with their objects, wrapping ErrPrivileges;
// credentials vCenter refuses wrap ErrLogin; a vCenter that does
// not answer at all (a connection refused or closed, or no answer before
// ctx's deadline) wraps vmprovider.ErrUnreachable; a certificate that
// fails verification wraps neither. Call Close when done.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	c, sm, err := connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	p, err := NewWithClient(ctx, c, cfg)
	if err != nil {
		_ = sm.Logout(ctx)
		return nil, err
	}
	p.sessions = sm
	return p, nil
}

// NewWithClient uses an authenticated client the caller manages (for example
// the one govmomi's simulator hands to its callbacks), resolves cfg's
// placement and checks the account's privileges, as New does; cfg's URL
// and credentials are ignored.
func NewWithClient(ctx context.Context, c *vim25.Client, cfg Config) (*Provider, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	c = cfg.limited(c)
	p := &Provider{client: c, finder: find.NewFinder(c), template: cfg.Template, grace: cfg.shutdownGrace(), cloudInit: cfg.CloudInitTransport,
		templates: map[string]*object.VirtualMachine{}, names: map[string]*nameLock{}}
	p.tasks = make(chan struct{}, cmp.Or(max(cfg.MaxTasks, 0), DefaultMaxTasks))
	p.clones = make(chan struct{}, cmp.Or(max(cfg.MaxClones, 0), DefaultMaxClones))
	p.life, p.endLife = context.WithCancel(context.Background())

	var err error
	if p.dc, err = p.finder.DatacenterOrDefault(ctx, cfg.Datacenter); err != nil {
		return nil, placementError(ctx, "datacenter", cfg.Datacenter, err)
	}
	p.finder.SetDatacenter(p.dc)
	if cfg.Folder == "" {
		folders, ferr := p.dc.Folders(ctx)
		if ferr != nil {
			return nil, placementError(ctx, "folder", cfg.Folder, ferr)
		}
		p.folder = folders.VmFolder
	} else if p.folder, err = p.finder.Folder(ctx, cfg.Folder); err != nil {
		return nil, placementError(ctx, "folder", cfg.Folder, err)
	}
	if p.pool, err = p.resourcePool(ctx, cfg.ResourcePool); err != nil {
		return nil, placementError(ctx, "resource pool", cfg.ResourcePool, err)
	}
	if p.store, err = p.finder.DatastoreOrDefault(ctx, cfg.Datastore); err != nil {
		return nil, placementError(ctx, "datastore", cfg.Datastore, err)
	}
	var tmpl *object.VirtualMachine
	if cfg.Template != "" {
		if tmpl, err = p.templateVM(ctx, cfg.Template); err != nil {
			return nil, unanswered(ctx, err)
		}
	}
	if err := p.checkPrivileges(ctx, tmpl); err != nil {
		return nil, unanswered(ctx, err)
	}
	return p, nil
}

// resourcePool resolves a pool path, a cluster path (its root pool), or the
// default pool.
func (p *Provider) resourcePool(ctx context.Context, path string) (*object.ResourcePool, error) {
	if path == "" {
		return p.finder.DefaultResourcePool(ctx)
	}
	pool, err := p.finder.ResourcePool(ctx, path)
	var nf *find.NotFoundError
	if errors.As(err, &nf) {
		if cluster, cerr := p.finder.ClusterComputeResource(ctx, path); cerr == nil {
			return cluster.ResourcePool(ctx)
		}
	}
	return pool, err
}

func placementError(ctx context.Context, what, path string, err error) error {
	if path == "" {
		path = "(default)"
	}
	if silent(ctx, err) {
		// Not the placement's fault: vCenter did not answer.
		return fmt.Errorf("%s %s: %w: %w", what, path, vmprovider.ErrUnreachable, err)
	}
	return fmt.Errorf("%s %s: %w: %w", what, path, err, ErrConfig)
}

// ErrTemplateNotFound means no VM or template is at the template path a
// create names (Spec.Template, else Config.Template); errors wrapping it
// also wrap vmprovider.ErrInvalidSpec. It may be for a while only: an
// image pipeline rebuilding a template under its name (Packer's -force)
// destroys the old one before the new one is there. A caller that retries
// such a create, with a backoff, picks the new template up.
var ErrTemplateNotFound = errors.New("vsphere: no template at the path")

// templateVM resolves and caches the VM or template to clone. The cache
// holds a path's reference until vCenter says the object is gone
// (forgetTemplate).
func (p *Provider) templateVM(ctx context.Context, path string) (*object.VirtualMachine, error) {
	p.mu.Lock()
	vm, ok := p.templates[path]
	p.mu.Unlock()
	if ok {
		return vm, nil
	}
	vm, err := p.finder.VirtualMachine(ctx, path)
	if err != nil {
		var nf *find.NotFoundError
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("template %s: %w: %w: %w", path, err, ErrTemplateNotFound, vmprovider.ErrInvalidSpec)
		}
		if missing(err) { // several at the path
			return nil, fmt.Errorf("template %s: %w: %w", path, err, vmprovider.ErrInvalidSpec)
		}
		return nil, fmt.Errorf("template %s: %w", path, err)
	}
	p.mu.Lock()
	p.templates[path] = vm
	p.mu.Unlock()
	return vm, nil
}

// privilegeError is an error of vCenter's NoPermission with the
// privileges it says the account lacks, and on what.
type privilegeError struct {
	err     error
	missing []string
}

// Error says what is missing first: the error it wraps may be several
// lines (a create's cause joined with the removal of its half-made VM).
func (e *privilegeError) Error() string {
	return fmt.Sprintf("the account lacks %s: %v", strings.Join(e.missing, "; "), e.err)
}

func (e *privilegeError) Unwrap() error { return e.err }

// Is makes the error match ErrPrivileges.
func (e *privilegeError) Is(target error) bool { return target == ErrPrivileges }

// withPrivileges adds to err, when it carries vCenter's NoPermission, the
// privileges the fault says are missing and on which objects: vCenter's
// own message ("Permission to perform this operation was denied.") names
// neither. vSphere 8 lists them in missingPrivileges; older vCenters name
// one, in privilegeId and object.
func withPrivileges(err error) error {
	var done *privilegeError
	if err == nil || errors.As(err, &done) {
		return err
	}
	np := noPermission(err)
	if np == nil {
		return err
	}
	var missing []string
	for _, e := range np.MissingPrivileges {
		if len(e.PrivilegeIds) > 0 {
			missing = append(missing, fmt.Sprintf("%s on %s %s", strings.Join(e.PrivilegeIds, ", "), e.Entity.Type, e.Entity.Value))
		}
	}
	if len(missing) == 0 && np.PrivilegeId != "" {
		m := np.PrivilegeId
		if np.Object != nil {
			m += " on " + np.Object.Type + " " + np.Object.Value
		}
		missing = append(missing, m)
	}
	if len(missing) == 0 {
		return err
	}
	return &privilegeError{err: err, missing: missing}
}

// noPermission returns the first NoPermission fault err carries, in any
// branch of a joined error (govmomi's fault.As reads only the first), or
// nil. A NotAuthenticated, which embeds NoPermission, is not one.
func noPermission(err error) *types.NoPermission {
	var np *types.NoPermission
	if _, ok := fault.As(err, &np); ok {
		return np
	}
	for err != nil {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				if np := noPermission(e); np != nil {
					return np
				}
			}
			return nil
		}
		err = errors.Unwrap(err)
	}
	return nil
}

// forgetTemplate drops path's cached reference if it is still stale, the
// template vCenter no longer knows: the next templateVM looks path up
// again. A reference another create has looked up since stays.
func (p *Provider) forgetTemplate(path string, stale *object.VirtualMachine) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if vm, ok := p.templates[path]; ok && vm.Reference() == stale.Reference() {
		delete(p.templates, path)
	}
}

// Close ends the waits for the creates and deletes still in flight
// (vCenter goes on with their tasks: a clone's VM shows in a List once
// made, a VM whose guest was shutting down stays until deleted again),
// waits for them to stop, and logs out, if New logged in.
func (p *Provider) Close(ctx context.Context) error {
	if p.endLife != nil {
		p.endLife()
	}
	p.ops.Wait()
	if p.sessions == nil {
		return nil
	}
	return p.sessions.Logout(ctx)
}

// task runs one short vCenter task to completion, holding one of the
// provider's task slots (Config.MaxTasks) while it runs.
func (p *Provider) task(ctx context.Context, start func(context.Context) (*object.Task, error)) (types.AnyType, error) {
	return p.runTask(ctx, p.tasks, nil, start)
}

// runTask runs one vCenter task to completion, holding one of slots while
// it runs. For op's clone it records the task, so that a Delete can
// cancel it, and starts none once op is cancelled.
func (p *Provider) runTask(ctx context.Context, slots chan struct{}, op *createOp, start func(context.Context) (*object.Task, error)) (types.AnyType, error) {
	var cancelled <-chan struct{}
	if op != nil {
		cancelled = op.cancelled
	}
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-cancelled:
		return nil, errCancelled
	}
	defer func() { <-slots }()
	if op != nil && op.isCancelled() {
		return nil, errCancelled
	}
	t, err := start(ctx)
	if err != nil {
		return nil, err
	}
	if op != nil && op.began(t) {
		_ = t.Cancel(ctx) // cancelled as it started; its end says how it went
	}
	info, err := t.WaitForResult(ctx)
	if err != nil {
		return nil, err
	}
	if info == nil {
		// govmomi reports no error and no info when the wait for the task
		// ends without an update (a connection cut mid-answer, say).
		return nil, fmt.Errorf("vCenter task %s ended without a result", t.Reference().Value)
	}
	return info.Result, nil
}

// toVM converts properties read from vCenter.
func toVM(m mo.VirtualMachine) vmprovider.VM {
	vm := vmprovider.VM{Name: m.Name, Owner: mark(m), OwnerName: extraConfig(m, KeyOwnerName), Zone: extraConfig(m, KeyZone),
		Revision: extraConfig(m, KeyRevision), BaseRevision: extraConfig(m, KeyBaseRevision),
		Power: vmprovider.PowerState(m.Runtime.PowerState)}
	switch m.Runtime.PowerState {
	case types.VirtualMachinePowerStatePoweredOn:
		vm.Power = vmprovider.PoweredOn
	case types.VirtualMachinePowerStatePoweredOff:
		vm.Power = vmprovider.PoweredOff
	case types.VirtualMachinePowerStateSuspended:
		vm.Power = vmprovider.Suspended
	}
	if m.Config != nil {
		vm.InstanceUUID = m.Config.InstanceUuid
		if m.Config.CreateDate != nil {
			vm.CreatedAt = *m.Config.CreateDate
		}
		vm.CPUs, vm.MemoryMiB = m.Config.Hardware.NumCPU, int64(m.Config.Hardware.MemoryMB)
		if c := m.Config.Hardware.NumCoresPerSocket; c != nil {
			vm.CoresPerSocket = *c
		}
		vm.MemoryHotAddLimitMiB, vm.MemoryHotAddIncrementMiB = m.Config.HotPlugMemoryLimit, m.Config.HotPlugMemoryIncrementSize
		vm.CPUHotAdd, vm.CPUHotRemove = isTrue(m.Config.CpuHotAddEnabled), isTrue(m.Config.CpuHotRemoveEnabled)
		vm.MemoryHotAdd = isTrue(m.Config.MemoryHotAddEnabled)
	}
	if m.Runtime.BootTime != nil {
		vm.BootedAt = *m.Runtime.BootTime
	}
	if g := m.Guest; g != nil && g.CustomizationInfo != nil &&
		g.CustomizationInfo.CustomizationStatus == string(types.GuestInfoCustomizationStatusTOOLSDEPLOYPKG_FAILED) {
		// vSphere API reference, GuestInfoCustomizationInfo (vSphere 7.0
		// U2 and later, which the provider needs for it).
		vm.Failed = "the guest customization failed"
		if msg := g.CustomizationInfo.ErrorMsg; msg != "" {
			vm.Failed += ": " + msg
		}
	}
	if g := m.Guest; g != nil {
		vm.Hostname = g.HostName
		vm.ToolsRunning = g.ToolsRunningStatus == string(types.VirtualMachineToolsRunningStatusGuestToolsRunning)
		vm.IPAddresses = guestAddresses(g)
	}
	vm.Heartbeat = vmprovider.HeartbeatGray
	if h := m.GuestHeartbeatStatus; h != "" {
		vm.Heartbeat = vmprovider.Heartbeat(h)
	}
	return vm
}

// guestAddresses lists the guest's addresses: its primary one, then every
// other on its adapters in order, each once; link-local and loopback
// addresses (an IPv6 fe80:: before DHCP answers, say) are left out, so an
// address means one others can reach, and so are the adapters the guest
// reports that are no virtual device of the VM (a container host's
// docker0, a CNI bridge, a veth: deviceConfigId -1, the vSphere API
// reference's GuestNicInfo), whose addresses others cannot reach and which
// come and go with the containers.
func guestAddresses(g *types.GuestInfo) []string {
	var out []string
	add := func(a string) {
		ip := net.ParseIP(a)
		if a == "" || slices.Contains(out, a) || (ip != nil && (ip.IsLinkLocalUnicast() || ip.IsLoopback())) {
			return
		}
		out = append(out, a)
	}
	add(g.IpAddress)
	for _, nic := range g.Net {
		if nic.DeviceConfigId < 0 {
			continue // a pseudo-NIC
		}
		for _, a := range nic.IpAddress {
			add(a)
		}
	}
	return out
}

// Get implements vmprovider.Provider. A VM still being made (see Create)
// that vCenter does not show yet is reported with VM.Creating set, and
// one whose delete the provider is finishing (see Delete) with
// VM.Deleting.
func (p *Provider) Get(ctx context.Context, name string) (_ vmprovider.VM, err error) {
	defer func() { err = withPrivileges(err) }()
	op := p.creating(name) // before the read: see inFlight
	_, m, err := p.lookup(ctx, name)
	if op != nil && errors.Is(err, vmprovider.ErrNotFound) {
		return op.creatingVM(), nil // not shown by vCenter yet
	}
	if err != nil {
		return vmprovider.VM{}, err
	}
	var ops []*createOp
	if op != nil {
		ops = append(ops, op)
	}
	return p.overlay([]vmprovider.VM{p.read(&m)}, ops)[0], nil
}

// markDeleting sets VM.Deleting on those of vms whose delete the
// provider is finishing (Delete).
func (p *Provider) markDeleting(vms []vmprovider.VM) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range vms {
		if op, ok := p.deletes[vms[i].Name]; ok && op.owner == vms[i].Owner && !op.ended() {
			vms[i].Deleting = true
		}
	}
}

// List implements vmprovider.Provider with one container view over the
// provider's folder and one property retrieval, followed by the VMs of
// owner still being made (VM.Creating: see Create) that vCenter does not
// show yet; those whose delete the provider is finishing (see Delete)
// have VM.Deleting set.
func (p *Provider) List(ctx context.Context, owner string) (_ []vmprovider.VM, err error) {
	defer func() { err = withPrivileges(err) }()
	ops := p.inFlight(owner) // before the read: see inFlight
	v, err := view.NewManager(p.client).CreateContainerView(ctx, p.folder.Reference(), []string{"VirtualMachine"}, true)
	if err != nil {
		return nil, fmt.Errorf("list VMs: %w", err)
	}
	defer func() { _ = v.Destroy(context.WithoutCancel(ctx)) }()
	var all []mo.VirtualMachine
	if err := v.Retrieve(ctx, []string{"VirtualMachine"}, vmProps, &all); err != nil {
		return nil, fmt.Errorf("list VMs: %w", err)
	}
	var out []vmprovider.VM
	refs := make(map[types.ManagedObjectReference]bool, len(all))
	for i := range all {
		refs[all[i].Self] = true
		if vm, ok := claims(p.read(&all[i]), owner); ok {
			out = append(out, vm)
		}
	}
	p.keepOnly(refs)
	return p.overlay(out, ops), nil
}
