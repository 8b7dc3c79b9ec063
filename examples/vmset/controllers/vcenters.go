package controllers

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// watches returns Watch and every one of Watches, by name.
func (r *VirtualMachineReconciler) watches() []*vsphere.Watch {
	var out []*vsphere.Watch
	if r.Watch != nil {
		out = append(out, r.Watch)
	}
	for _, name := range slices.Sorted(maps.Keys(r.Watches)) {
		out = append(out, r.Watches[name])
	}
	return out
}

// healthCheck is how often a watch's health is looked at, so that its
// VirtualMachines are reconciled when it loses vCenter or finds it again.
const healthCheck = 2 * time.Second

// runWatch adds w to mgr: its changes become reconciles of the
// VirtualMachines named in the VMs' marks, and when it loses vCenter or
// finds it again, every VirtualMachine whose VM it holds is reconciled
// (so that Ready says Unknown, and says what is there again).
func (r *VirtualMachineReconciler) runWatch(mgr ctrl.Manager, w *vsphere.Watch, changes chan<- event.TypedGenericEvent[*vmv1.VirtualMachine]) error {
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
	run := func(ctx context.Context) error {
		go func() { <-ctx.Done(); close(stopped) }()
		go r.watchHealth(ctx, w, send)
		return w.Run(ctx)
	}
	return mgr.Add(manager.RunnableFunc(run))
}

// watchHealth sends every VirtualMachine whose VM w holds whenever w's
// health changes, until ctx ends.
func (r *VirtualMachineReconciler) watchHealth(ctx context.Context, w *vsphere.Watch, send func(ns, name string)) {
	tick := time.NewTicker(healthCheck)
	defer tick.Stop()
	_, err := w.Health()
	was := err == nil
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
