package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// drainer is the demo's own hook controller, as a user would write one:
// it watches the set's VirtualMachines, drains each that prepares to
// leave (here: waits hold, standing in for a node drain or a load
// balancer's connection draining), checks it still runs in vCenter, and
// releases it by removing its drain hook; and it opens each new VM's
// launch gate (lb) once the VM is Ready, as a load balancer registering
// it would.
type drainer struct {
	c       client.Client
	vc      vsphere.Config
	ns, set string
	hold    time.Duration

	mu       sync.Mutex
	draining map[string]time.Time // VM → when the drainer saw it prepare
	drained  map[string]drained   // VM → its drain, once released
	booted   map[string]bool      // VMs whose guest the drainer started
}

// drained is one VM's drain, as the drainer saw it.
type drained struct {
	held    time.Duration // from when it was seen preparing to its release
	running bool          // in vCenter, and PoweredOn, when released
}

// drainHook and lbGate are the hook and gate the demo's hooks set names.
var (
	drainHook = kube.PreDeleteHookAnnotation(controllers.HookDomain, "drain")
	lbGate    = kube.LaunchGateAnnotation(controllers.HookDomain, "lb")
)

func newDrainer(c client.Client, vc vsphere.Config, ns, set string, hold time.Duration) *drainer {
	return &drainer{c: c, vc: vc, ns: ns, set: set, hold: hold,
		draining: map[string]time.Time{}, drained: map[string]drained{}, booted: map[string]bool{}}
}

// run drains until ctx ends, looking every 200 ms.
func (d *drainer) run(ctx context.Context) {
	for {
		if err := d.pass(ctx); err != nil && ctx.Err() == nil {
			fmt.Printf("  drainer: %v (trying again)\n", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (d *drainer) pass(ctx context.Context) error {
	var l vmv1.VirtualMachineList
	if err := d.c.List(ctx, &l, client.InNamespace(d.ns), client.MatchingLabels{"app": d.set}); err != nil {
		return err
	}
	for i := range l.Items {
		vm := &l.Items[i]
		// A VM deleted around its set (kubectl delete vm) is prepared by
		// the operator and drained here like any other.
		if vm.DeletionTimestamp != nil && vm.Annotations[kube.AnnotationPreparing] == "" {
			continue
		}
		// The simulator has no guests: once a VM is on, its guest's tools
		// start (a real guest's would at boot), so that the operator can
		// shut it down through them.
		if vm.Status.PowerState == string(vmv1.PoweredOn) && !d.booted[vm.Name] {
			if err := vcsim.ReportGuest(ctx, d.vc, d.ns+"-"+vm.Name, fmt.Sprintf("10.0.7.%d", len(d.booted)+1)); err != nil {
				return err
			}
			d.booted[vm.Name] = true
		}
		if _, gated := vm.Annotations[lbGate]; gated && d.booted[vm.Name] && meta.IsStatusConditionTrue(vm.Status.Conditions, "Ready") {
			if err := d.remove(ctx, vm, lbGate); err != nil {
				return err
			}
			fmt.Printf("  drainer: %s is Ready; registered in the load balancer, launch gate lb opened\n", vm.Name)
		}
		if vm.Annotations[kube.AnnotationPreparing] == "" {
			d.mu.Lock()
			if _, ok := d.draining[vm.Name]; ok {
				// Taken back before it left: a real drainer undoes its
				// work here (uncordons the node, registers the address
				// again).
				delete(d.draining, vm.Name)
				fmt.Printf("  drainer: %s taken back; undoing its drain\n", vm.Name)
			}
			d.mu.Unlock()
			continue
		}
		if _, held := vm.Annotations[drainHook]; !held {
			continue
		}
		d.mu.Lock()
		seen, ok := d.draining[vm.Name]
		if !ok {
			seen = time.Now()
			d.draining[vm.Name] = seen
			fmt.Printf("  drainer: %s prepares to leave; draining it for %v\n", vm.Name, d.hold)
		}
		d.mu.Unlock()
		if time.Since(seen) < d.hold {
			continue
		}
		names, err := vcsim.VMNames(ctx, d.vc)
		if err != nil {
			return err
		}
		running := slices.Contains(names, d.ns+"-"+vm.Name) && vm.Status.PowerState == string(vmv1.PoweredOn)
		if err := d.remove(ctx, vm, drainHook); err != nil {
			return err
		}
		d.mu.Lock()
		d.drained[vm.Name] = drained{held: time.Since(seen), running: running}
		d.mu.Unlock()
		fmt.Printf("  drainer: %s drained (still running in vCenter: %v); hook released\n", vm.Name, running)
	}
	return nil
}

// remove removes the annotation key from vm.
func (d *drainer) remove(ctx context.Context, vm *vmv1.VirtualMachine, key string) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, key)
	target := &vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: vm.Namespace, Name: vm.Name}}
	return client.IgnoreNotFound(d.c.Patch(ctx, target, client.RawPatch("application/merge-patch+json", patch)))
}

// check says whether each of names was drained for at least the hold and
// released while it still ran in vCenter.
func (d *drainer) check(names []string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, n := range names {
		got, ok := d.drained[n]
		switch {
		case !ok:
			return fmt.Errorf("%s left without the drainer releasing it", n)
		case got.held < d.hold:
			return fmt.Errorf("%s was released after %v, before its drain of %v", n, got.held, d.hold)
		case !got.running:
			return fmt.Errorf("%s was no longer running in vCenter when its drain ended", n)
		}
	}
	return nil
}
