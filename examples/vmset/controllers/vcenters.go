package controllers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// NewVirtualMachineReconcilerOver returns a reconciler over several
// vCenters, each read from a watch of its VMs (vsphere.Cached, keeping
// WatchedFields) and changed through its Provider: a VirtualMachine's VM
// is in the vCenter its zone's placement names (Zones' Endpoint,
// defaultVCenter when it names none, or for a VM in no zone). A vCenter
// that does not answer leaves its VMs unknown (ReasonVCenterUnreachable),
// and sets plan around them (ReplicaSetAdapter.Reachable). ConnectLater
// adds a vCenter that could not be reached yet.
func NewVirtualMachineReconcilerOver(vcenters map[string]*vsphere.Provider, defaultVCenter string) *VirtualMachineReconciler {
	r := &VirtualMachineReconciler{DefaultVCenter: defaultVCenter, vcenters: map[string]*vcenter{}}
	for name, p := range vcenters {
		v := &vcenter{name: name}
		v.connected(p)
		r.vcenters[name] = v
	}
	return r
}

// ConnectLater adds the vCenter called name, which the operator could not
// reach yet, to a reconciler over several: the manager calls connect
// (vsphere.New, say) until it succeeds, one second after the first
// failure and doubling to a minute, and only the leader does. Until then
// the vCenter's VMs are unknown, as those of a vCenter that stopped
// answering are (ReasonVCenterUnreachable; its zones unreachable to sets);
// then it is read and changed as the others are, and every VirtualMachine
// of it is reconciled. Call it before Setup.
func (r *VirtualMachineReconciler) ConnectLater(name string, connect func(context.Context) (*vsphere.Provider, error)) {
	if r.vcenters == nil {
		r.vcenters = map[string]*vcenter{}
	}
	r.vcenters[name] = &vcenter{name: name, connect: connect, err: fmt.Errorf("not connected yet")}
}

// vcenter is one vCenter of a reconciler over several: its provider (a
// vsphere.Cached) and watch, once connected.
type vcenter struct {
	name string
	// connect connects to it, for a vCenter added by ConnectLater; nil
	// for one connected from the start.
	connect func(context.Context) (*vsphere.Provider, error)

	mu     sync.RWMutex
	cached vmprovider.Provider // nil until connected
	watch  *vsphere.Watch      // nil until connected
	err    error               // why it is not connected
}

// connected makes p the vCenter's provider, read through a new watch.
func (v *vcenter) connected(p *vsphere.Provider) {
	w := vsphere.NewWatch(p)
	w.SetFields(WatchedFields)
	v.mu.Lock()
	defer v.mu.Unlock()
	v.cached, v.watch, v.err = vsphere.Cached{Provider: p, Watch: w}, w, nil
}

// failed records why the last attempt to connect failed.
func (v *vcenter) failed(err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.err = err
}

// get returns the vCenter's provider and watch; while it is not
// connected, a provider whose every call fails with the reason (state's
// error) and no watch.
func (v *vcenter) get() (vmprovider.Provider, *vsphere.Watch) {
	p, w, _ := v.state()
	return p, w
}

// state returns the vCenter's provider and watch, or while it is not
// connected a provider whose every call fails with the reason, wrapping
// vmprovider.ErrUnreachable, no watch, and that reason: all as of one
// moment.
func (v *vcenter) state() (vmprovider.Provider, *vsphere.Watch, error) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.cached == nil {
		err := fmt.Errorf("vCenter %s: %w: %w", v.name, vmprovider.ErrUnreachable, v.err)
		return unconnected{err}, nil, err
	}
	return v.cached, v.watch, nil
}

// unconnected is the provider of a vCenter not connected yet.
type unconnected struct{ err error }

func (u unconnected) Create(context.Context, vmprovider.Spec) (vmprovider.VM, error) {
	return vmprovider.VM{}, u.err
}
func (u unconnected) Get(context.Context, string) (vmprovider.VM, error) {
	return vmprovider.VM{}, u.err
}
func (u unconnected) List(context.Context, string) ([]vmprovider.VM, error) { return nil, u.err }
func (u unconnected) SetPower(context.Context, string, string, vmprovider.PowerState) error {
	return u.err
}
func (u unconnected) Delete(context.Context, string, string) error { return u.err }
func (u unconnected) Reset(context.Context, string, string) error  { return u.err }

// Reachable says whether the vCenter that holds zone's VMs answers (a nil
// error, else one wrapping vmprovider.ErrUnreachable), and when it last
// did, from its watch (vsphere.Watch.Health); a vCenter not connected yet
// (ConnectLater) never did. Without watches every zone answers.
func (r *VirtualMachineReconciler) Reachable(zone string) (lastSeen time.Time, err error) {
	w := r.Watch
	if len(r.vcenters) > 0 {
		v := r.vcenters[r.vcenterOf(zone)]
		if v == nil {
			return time.Time{}, nil // no such vCenter: the VirtualMachines say so
		}
		var notYet error
		if _, w, notYet = v.state(); notYet != nil {
			return time.Time{}, notYet
		}
	}
	if w == nil {
		return time.Time{}, nil
	}
	return w.Health()
}

// providerOf returns the provider of the vCenter that holds zone's VMs;
// nil when the reconciler has no vCenter of that name.
func (r *VirtualMachineReconciler) providerOf(zone string) vmprovider.Provider {
	p, _ := r.of(zone)
	return p
}

// watchOf returns the watch of the vCenter that holds zone's VMs; nil
// when there is none (yet).
func (r *VirtualMachineReconciler) watchOf(zone string) *vsphere.Watch {
	_, w := r.of(zone)
	return w
}

// of returns the provider and watch of the vCenter that holds zone's VMs:
// Provider and Watch for a reconciler over one vCenter; nil, nil when the
// reconciler has no vCenter of that name.
func (r *VirtualMachineReconciler) of(zone string) (vmprovider.Provider, *vsphere.Watch) {
	if len(r.vcenters) == 0 {
		return r.Provider, r.Watch
	}
	v := r.vcenters[r.vcenterOf(zone)]
	if v == nil {
		return nil, nil
	}
	return v.get()
}

// vcenterOf names the vCenter that holds zone's VMs.
func (r *VirtualMachineReconciler) vcenterOf(zone string) string {
	if ep := r.Zones[zone].Endpoint; ep != "" {
		return ep
	}
	return r.DefaultVCenter
}

// watched reports whether the reconciler reads vCenter through watches.
func (r *VirtualMachineReconciler) watched() bool {
	return r.Watch != nil || len(r.vcenters) > 0
}

// healthCheck is how often a watch's health is looked at, so that its
// VirtualMachines are reconciled when it loses vCenter or finds it again.
const healthCheck = 2 * time.Second

// runWatches adds to mgr a runnable per watch: Watch, each vCenter's,
// and for each vCenter ConnectLater added, one that connects first.
func (r *VirtualMachineReconciler) runWatches(mgr ctrl.Manager, changes chan<- event.TypedGenericEvent[*vmv1.VirtualMachine]) error {
	var runs []manager.RunnableFunc
	if r.Watch != nil {
		runs = append(runs, func(ctx context.Context) error { return r.serveWatch(ctx, r.Watch, true, changes) })
	}
	for _, name := range slices.Sorted(maps.Keys(r.vcenters)) {
		v := r.vcenters[name]
		if v.connect == nil {
			_, w := v.get()
			runs = append(runs, func(ctx context.Context) error { return r.serveWatch(ctx, w, true, changes) })
			continue
		}
		runs = append(runs, func(ctx context.Context) error {
			p, err := r.connectVCenter(ctx, v)
			if err != nil || p == nil {
				return err
			}
			defer func() { _ = p.Close(context.WithoutCancel(ctx)) }()
			_, w := v.get()
			return r.serveWatch(ctx, w, false, changes)
		})
	}
	for _, run := range runs {
		if err := mgr.Add(run); err != nil {
			return err
		}
	}
	return nil
}

// connectVCenter calls v.connect until it succeeds, and makes v's
// provider and watch of what it returns; nil when ctx ends first.
func (r *VirtualMachineReconciler) connectVCenter(ctx context.Context, v *vcenter) (*vsphere.Provider, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("vcenter", v.name)
	backoff := time.Second
	for {
		p, err := v.connect(ctx)
		if err == nil {
			v.connected(p)
			log.Info("connected to vCenter")
			return p, nil
		}
		if ctx.Err() != nil {
			return nil, nil
		}
		v.failed(err)
		if errors.Is(err, vmprovider.ErrUnreachable) {
			log.Info("vCenter does not answer yet; its VMs are unknown", "retryIn", backoff, "error", err.Error())
		} else {
			log.Error(err, "vCenter answers but cannot be used (credentials, placement?); its VMs are unknown", "retryIn", backoff)
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Minute)
	}
}

// serveWatch runs w until ctx ends: its changes become reconciles of the
// VirtualMachines named in the VMs' marks, and when it loses vCenter or
// finds it again, every VirtualMachine whose VM it holds is reconciled
// (so that Ready says Unknown, and says what is there again); healthy
// says whether its VirtualMachines were last told it answers.
func (r *VirtualMachineReconciler) serveWatch(ctx context.Context, w *vsphere.Watch, healthy bool, changes chan<- event.TypedGenericEvent[*vmv1.VirtualMachine]) error {
	stopped := make(chan struct{})
	send := func(ns, name string) {
		select {
		case changes <- event.TypedGenericEvent[*vmv1.VirtualMachine]{
			Object: &vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		}:
		case <-stopped: // shutting down: nobody reads any more
		}
	}
	w.OnChange(func(vm vmprovider.VM, _ bool) {
		ns, name, ok := strings.Cut(vm.OwnerName, "/")
		if vm.Owner == "" || !ok {
			return // not one of ours
		}
		send(ns, name)
	})
	go func() { <-ctx.Done(); close(stopped) }()
	go r.watchHealth(ctx, w, healthy, send)
	return w.Run(ctx)
}

// watchHealth sends every VirtualMachine whose VM w holds whenever w's
// health changes from was, until ctx ends.
func (r *VirtualMachineReconciler) watchHealth(ctx context.Context, w *vsphere.Watch, was bool, send func(ns, name string)) {
	tick := time.NewTicker(healthCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		_, err := w.Health()
		now := err == nil
		if now == was {
			continue
		}
		var l vmv1.VirtualMachineList
		if err := r.Client.List(ctx, &l); err != nil {
			continue // tried again at the next tick
		}
		was = now
		for _, vm := range l.Items {
			if r.watchOf(vm.Spec.Zone) == w {
				send(vm.Namespace, vm.Name)
			}
		}
	}
}
