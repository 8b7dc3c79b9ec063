package vsphere

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/vmprovider"
)

// Watch keeps an in-memory copy of the VMs in a Provider's folder and the
// folders below it, fed by one property collector waiting for updates
// (WaitForUpdatesEx) over a list view that holds a container view of them,
// rooted as vm-operator roots its watcher. After the first full copy a settled inventory
// costs no call beyond the collector's own long poll. When the wait fails
// (a lost session, vCenter restarting), Run builds the collector again and
// takes a fresh full copy, reporting every VM that changed or went away
// meanwhile.
//
// Use it through Cached, which answers Get and List from it.
type Watch struct {
	p      *Provider
	fields Fields

	mu       sync.RWMutex
	byRef    map[types.ManagedObjectReference]*mo.VirtualMachine
	byName   map[string]vmprovider.VM
	written  map[string]written // by name: what a write through Cached left
	synced   chan struct{}
	onChange []func(vm vmprovider.VM, gone bool)
	restarts int
	// rechecks are the reports pending, by name, for when a write's pin
	// ends (recheck).
	rechecks map[string]*time.Timer
	pin      time.Duration // how long a write's state overrides: pinFor
	// notifying makes the calls to onChange one at a time.
	notifying sync.Mutex
	// lastSeen is when vCenter last answered a wait; down why the last
	// attempt failed, until the next full copy (see Health).
	lastSeen time.Time
	down     error
}

// NewWatch returns a watch of p's VMs, keeping every field of them
// (AllFields); Run starts it.
func NewWatch(p *Provider) *Watch {
	return &Watch{p: p, fields: AllFields, byRef: map[types.ManagedObjectReference]*mo.VirtualMachine{},
		byName: map[string]vmprovider.VM{}, written: map[string]written{}, synced: make(chan struct{}), pin: pinFor}
}

// OnChange registers f, called (from Run's goroutine or the watch's
// timers, one call at a time)
// with a VM's new state whenever it appears or what VM reports of it
// changes, and with its last state and gone set when it disappears; every
// VM below the folder is reported, whoever owns it (VM.Owner says). f must
// not block for long: the watch waits for it. Register every f before Run
// starts; OnChange is not safe to call while Run runs.
func (w *Watch) OnChange(f func(vm vmprovider.VM, gone bool)) {
	w.onChange = append(w.onChange, f)
}

// SetFields limits what the watch keeps of each VM to f's fields beside
// those it always keeps (see Fields); the others read as their zero
// values (Heartbeat as HeartbeatGray), in its reads, in Cached's and in
// what OnChange is told, and a change to them alone is not reported.
// Call it before Run starts; it is not safe to call while Run runs.
func (w *Watch) SetFields(f Fields) {
	w.fields = f & AllFields
}

// Synced is closed once the watch holds its first full copy.
func (w *Watch) Synced() <-chan struct{} { return w.synced }

// Restarts returns how many times Run has built its collector again after
// a failed wait.
func (w *Watch) Restarts() int {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.restarts
}

// Get returns the VM called name as last seen, and whether there is one.
func (w *Watch) Get(name string) (vmprovider.VM, bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if wr, ok := w.written[name]; ok && time.Now().Before(wr.until) {
		return wr.vm, !wr.gone
	}
	vm, ok := w.byName[name]
	return vm, ok
}

// List returns the VMs carrying owner's mark as last seen, sorted by name.
func (w *Watch) List(owner string) []vmprovider.VM {
	w.mu.RLock()
	defer w.mu.RUnlock()
	var out []vmprovider.VM
	now := time.Now()
	for name, vm := range w.byName {
		if wr, ok := w.written[name]; ok && now.Before(wr.until) {
			continue // below
		}
		if vm, ok := claims(vm, owner); ok {
			out = append(out, vm)
		}
	}
	for _, wr := range w.written {
		if now.Before(wr.until) && !wr.gone && owner != "" && wr.vm.Owner == owner {
			out = append(out, wr.vm)
		}
	}
	slices.SortFunc(out, func(a, b vmprovider.VM) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Run keeps the copy current until ctx ends, and returns nil then. A failed
// wait is retried with a fresh collector after a backoff from one second,
// doubling to thirty while attempts fail before their first full copy.
func (w *Watch) Run(ctx context.Context) error {
	backoff := time.Second
	defer w.stopRechecks()
	for {
		synced, err := w.watch(ctx)
		if ctx.Err() != nil {
			return nil
		}
		w.mu.Lock()
		w.restarts++
		// A failed wait said so already (watch); this covers the calls
		// before it. The next full copy reports what changed meanwhile.
		w.down = withPrivileges(err)
		w.mu.Unlock()
		if synced {
			backoff = time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		if !synced {
			backoff = min(2*backoff, 30*time.Second)
		}
	}
}

// watch makes one collector and view and waits on them, without a time
// limit, until an error; synced says whether it took a full copy.
func (w *Watch) watch(ctx context.Context) (synced bool, err error) {
	c := w.p.client
	pc, err := property.DefaultCollector(c).Create(ctx)
	if err != nil {
		return false, fmt.Errorf("vsphere watch: create a property collector: %w", err)
	}
	defer tidy(ctx, pc.Destroy)
	m := view.NewManager(c)
	v, err := m.CreateContainerView(ctx, w.p.folder.Reference(), []string{"VirtualMachine"}, true)
	if err != nil {
		return false, fmt.Errorf("vsphere watch: create a container view: %w", err)
	}
	defer tidy(ctx, v.Destroy)
	// The filter is rooted at a list view that holds the container view
	// and never changes while the watch runs, as vm-operator's watcher
	// does. A filter on the container view itself sees the view change
	// whenever a VM comes or goes, and govmomi's simulator then re-sends
	// every VM as new, drops the batch's leaves, and can deadlock with a
	// clone (view and filter locked in opposite orders).
	list, err := m.CreateListView(ctx, []types.ManagedObjectReference{v.Reference()})
	if err != nil {
		return false, fmt.Errorf("vsphere watch: create a list view: %w", err)
	}
	defer tidy(ctx, list.Destroy)

	filter := &property.WaitFilter{}
	filter.Spec.ObjectSet = []types.ObjectSpec{{
		Obj:  list.Reference(),
		Skip: types.NewBool(true),
		SelectSet: []types.BaseSelectionSpec{
			&types.TraversalSpec{Type: "ListView", Path: "view",
				SelectSet: []types.BaseSelectionSpec{&types.SelectionSpec{Name: "containerViews"}}},
			&types.TraversalSpec{SelectionSpec: types.SelectionSpec{Name: "containerViews"}, Type: "ContainerView", Path: "view"},
		},
	}}
	filter.Spec.PropSet = []types.PropertySpec{{Type: "VirtualMachine", PathSet: w.fields.props()}}
	pf, err := pc.CreateFilter(ctx, filter.CreateFilter)
	if err != nil {
		return false, fmt.Errorf("vsphere watch: create a property filter: %w", err)
	}
	defer tidy(ctx, pf.Destroy)

	fresh := map[types.ManagedObjectReference]*mo.VirtualMachine{}
	first, truncated := true, false
	err = waitForUpdates(ctx, c, pc, &truncated, w.answered, func(updates []types.ObjectUpdate) {
		if first {
			// The first answer, and the pages after it while truncated,
			// are the full state: gather it, then swap it in.
			for _, u := range updates {
				switch m, ok := fresh[u.Obj]; {
				case u.Kind == types.ObjectUpdateKindLeave:
					delete(fresh, u.Obj)
				case ok && u.Kind == types.ObjectUpdateKindModify:
					mo.ApplyPropertyChange(m, u.ChangeSet)
				default:
					m = &mo.VirtualMachine{}
					m.Self = u.Obj
					mo.ApplyPropertyChange(m, u.ChangeSet)
					fresh[u.Obj] = m
				}
			}
			if !truncated {
				first = false
				w.replace(fresh)
			}
			return
		}
		w.apply(updates)
	})
	if err == nil && ctx.Err() == nil {
		err = fmt.Errorf("vsphere watch: the wait for updates ended")
	}
	if err != nil && ctx.Err() == nil {
		// Said now, not after the calls that tidy up, which a cut link
		// holds for up to staleAfter each.
		w.mu.Lock()
		w.down = withPrivileges(err)
		w.mu.Unlock()
	}
	return !first, err
}

// replace swaps in a full copy and reports what differs from the last.
func (w *Watch) replace(all map[types.ManagedObjectReference]*mo.VirtualMachine) {
	w.mu.Lock()
	old := w.byName
	w.down = nil
	w.byRef = all
	w.byName = make(map[string]vmprovider.VM, len(all))
	refs := make(map[types.ManagedObjectReference]bool, len(all))
	for ref, m := range all {
		refs[ref] = true
		w.byName[m.Name] = w.p.read(m)
	}
	w.p.keepOnly(refs)
	var changed []vmprovider.VM
	var gone []vmprovider.VM
	for name, vm := range w.byName {
		if before, ok := old[name]; !ok || !sameVM(before, vm) {
			changed = append(changed, vm)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(old)) {
		if _, ok := w.byName[name]; !ok {
			gone = append(gone, old[name])
		}
	}
	now := time.Now()
	for name, wr := range w.written {
		cur, ok := w.byName[name]
		if !now.Before(wr.until) || (wr.gone && !ok) || (!wr.gone && ok && agrees(wr.vm, cur)) {
			delete(w.written, name)
		}
	}
	select {
	case <-w.synced:
	default:
		close(w.synced)
	}
	w.mu.Unlock()
	w.notify(changed, gone)
}

// apply applies incremental updates.
func (w *Watch) apply(updates []types.ObjectUpdate) {
	var changed, gone []vmprovider.VM
	w.mu.Lock()
	w.expire(time.Now())
	for _, u := range updates {
		m, ok := w.byRef[u.Obj]
		switch u.Kind {
		case types.ObjectUpdateKindLeave:
			if ok {
				delete(w.byRef, u.Obj)
				vm := w.p.read(m)
				w.p.forget(u.Obj)
				if cur, ok := w.byName[m.Name]; ok && cur.InstanceUUID == vm.InstanceUUID {
					delete(w.byName, m.Name)
				}
				if wr, ok := w.written[m.Name]; ok && wr.gone {
					delete(w.written, m.Name)
				}
				gone = append(gone, vm)
			}
			continue
		case types.ObjectUpdateKindEnter:
			m = &mo.VirtualMachine{}
			m.Self = u.Obj
			w.byRef[u.Obj] = m
		default:
			if !ok {
				continue
			}
		}
		oldName := m.Name
		before, had := w.byName[m.Name]
		mo.ApplyPropertyChange(m, u.ChangeSet)
		vm := w.p.read(m)
		if oldName != "" && oldName != m.Name {
			// Renamed: the old name is gone, if it was this VM's.
			if cur, ok := w.byName[oldName]; ok && cur.InstanceUUID == vm.InstanceUUID {
				delete(w.byName, oldName)
				gone = append(gone, cur)
			}
			before, had = w.byName[m.Name]
		}
		w.byName[m.Name] = vm
		if wr, ok := w.written[m.Name]; ok && !wr.gone && agrees(wr.vm, vm) {
			delete(w.written, m.Name)
		} else if ok && !wr.gone {
			w.recheck(m.Name, wr.until)
		}
		if !had || !sameVM(before, vm) {
			changed = append(changed, vm)
		}
	}
	w.mu.Unlock()
	w.notify(changed, gone)
}

func (w *Watch) notify(changed, gone []vmprovider.VM) {
	w.notifying.Lock()
	defer w.notifying.Unlock()
	for _, f := range w.onChange {
		for _, vm := range gone {
			f(vm, true)
		}
		for _, vm := range changed {
			f(vm, false)
		}
	}
}

// sameVM reports whether two states of a VM are equal.
func sameVM(a, b vmprovider.VM) bool {
	return a.Name == b.Name && a.InstanceUUID == b.InstanceUUID && a.Power == b.Power && a.Owner == b.Owner &&
		a.OwnerName == b.OwnerName && a.CreatedAt.Equal(b.CreatedAt) && a.BootedAt.Equal(b.BootedAt) &&
		slices.Equal(a.IPAddresses, b.IPAddresses) && a.Hostname == b.Hostname &&
		a.ToolsRunning == b.ToolsRunning && a.Heartbeat == b.Heartbeat && a.Zone == b.Zone &&
		a.Revision == b.Revision && a.BaseRevision == b.BaseRevision && a.CPUs == b.CPUs && a.MemoryMiB == b.MemoryMiB &&
		a.CPUHotAdd == b.CPUHotAdd && a.CPUHotRemove == b.CPUHotRemove && a.MemoryHotAdd == b.MemoryHotAdd &&
		a.Endpoint == b.Endpoint && a.Unreachable == b.Unreachable && a.CoresPerSocket == b.CoresPerSocket &&
		a.MemoryHotAddLimitMiB == b.MemoryHotAddLimitMiB && a.MemoryHotAddIncrementMiB == b.MemoryHotAddIncrementMiB &&
		a.Creating == b.Creating && a.Deleting == b.Deleting && a.Failed == b.Failed
}

// maxWait bounds each wait for updates on the server's side, in seconds.
// A wait the client gave up on then ends there within it, even when the
// CancelWaitForUpdates sent on cancellation reached the server before the
// wait itself did: govmomi's simulator would otherwise hold that wait (and
// its own shutdown) for ever, and a vCenter until the session ends. It
// also bounds how long a silent partition goes unnoticed (staleAfter).
// vm-operator waits 300 s; at 10 s an idle watch costs vCenter one call
// every 10 s, 360 an hour, against the 640 operations vCenter serves at
// once ("vCenter Limits for Tasks Running at the Same Time", VMware
// performance blog, 2021), so the shorter wait is kept for the faster
// notice of a partition.
const maxWait = 10

// maxObjectUpdates is the page size of each answer to a wait: at most
// this many objects' updates, the rest in the next answer (truncated).
// vm-operator asks for 100, as govmomi's simulator defaults to; vCenter
// chooses its own page size when none is asked for.
const maxObjectUpdates = 100

// waitForUpdates waits on pc's filters until ctx ends (then it returns
// nil) or a wait fails, calling f with each filter's updates and setting
// truncated as each answer says. Unlike property.WaitForUpdatesEx, a wait
// that ends after maxWait with nothing new is taken up again from the
// same version, with no new full copy. answered is called after every
// answer, before f.
func waitForUpdates(ctx context.Context, rt soap.RoundTripper, pc *property.Collector, truncated *bool, answered func(), f func([]types.ObjectUpdate)) error {
	req := types.WaitForUpdatesEx{This: pc.Reference(), Options: &types.WaitOptions{
		MaxWaitSeconds: types.NewInt32(maxWait), MaxObjectUpdates: maxObjectUpdates}}
	for {
		// The server answers within maxWait; a wait unanswered much
		// longer is on a link that drops what it carries.
		waitCtx, cancel := context.WithTimeout(ctx, staleAfter)
		res, err := methods.WaitForUpdatesEx(waitCtx, rt, &req)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				tidy(ctx, pc.CancelWaitForUpdates)
				return nil
			}
			return err
		}
		answered()
		set := res.Returnval
		if set == nil {
			continue // maxWait passed with nothing new
		}
		req.Version = set.Version
		*truncated = set.Truncated != nil && *set.Truncated
		for _, fs := range set.FilterSet {
			f(fs.ObjectSet)
		}
	}
}
