package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// holdDeletion reports whether the VM of vm, a VirtualMachine being
// deleted, must wait for pre-delete hooks before it is destroyed, and how
// long to wait before looking again (zero: until the VirtualMachine
// changes). It is the gate of every deletion the set did not plan: a
// VirtualMachine deleted with kubectl, or by the garbage collector in a
// foreground deletion of its set (openkruise/kruise#2161 is the bug of a
// gate such a path skips). A VirtualMachine deleted without preparing is
// prepared here first (kube.AnnotationPreparing and its set's hooks), so
// that the hooks' controllers see it; one that prepared waits until no
// hook (pre-delete.hook.vm.replicakit.io/…) holds it, or the set's
// timeout has passed since it began to prepare, then goes (Continue) or
// stays, saying so (Abandon). As in the set's rules, a VM that never ran
// (no clone finished: no instance UUID) has nothing to drain and goes at
// once; so does one whose set is gone, as the set's own deletion decided
// (it lets its finalizer go only once no hook holds a VM, or they timed
// out), and one that no set controls. A VirtualMachine the set deleted
// once its hooks released it goes at once.
func (r *VirtualMachineReconciler) holdDeletion(ctx context.Context, vm *vmv1.VirtualMachine) (bool, time.Duration, error) {
	if vm.Status.InstanceUUID == "" {
		return false, 0, nil
	}
	lc, found, err := r.lifecycleOf(ctx, vm)
	if err != nil || !found {
		return err != nil, 0, err
	}
	hooks := kube.PreDeleteHooks(vm, HookDomain)
	stamp, preparing := vm.Annotations[kube.AnnotationPreparing]
	now := time.Now()
	if !preparing {
		var declared []string
		if lc != nil {
			declared = lc.PreDelete
		}
		if len(declared) == 0 && len(hooks) == 0 {
			return false, 0, nil
		}
		patch := client.MergeFrom(vm.DeepCopy())
		if vm.Annotations == nil {
			vm.Annotations = map[string]string{}
		}
		vm.Annotations[kube.AnnotationPreparing] = now.UTC().Format(time.RFC3339Nano)
		for _, h := range declared {
			vm.Annotations[kube.PreDeleteHookAnnotation(HookDomain, h)] = vm.Name
		}
		if err := r.Client.Patch(ctx, vm, patch); err != nil {
			return true, 0, client.IgnoreNotFound(err)
		}
		r.event(vm, corev1.EventTypeNormal, "Preparing", "Prepare",
			"Deleted without preparing: waiting on its pre-delete hooks before its VM is shut down")
		return true, 0, nil // the patch's own event looks again
	}
	var rl replicaset.Lifecycle
	if lc != nil {
		rl = lc.Lifecycle
	}
	since, err := time.Parse(time.RFC3339Nano, stamp)
	if err != nil {
		since = vm.DeletionTimestamp.Time // the latest it can have begun
	}
	switch by, deadline := rl.Hold(replicaset.Preparing{Since: since, Hooks: hooks}, now); {
	case by == replicaset.HoldPreDelete:
		return true, deadline.Sub(now), nil
	case by == replicaset.HoldHookAbandoned:
		r.event(vm, corev1.EventTypeWarning, "HookAbandoned", "Delete",
			"Pre-delete hooks %s held it past their timeout (%s), and the default result is Abandon: its VM stays until they release it",
			strings.Join(hooks, ", "), deadline.UTC().Format(time.RFC3339))
		return true, 0, nil
	case len(hooks) > 0:
		r.event(vm, corev1.EventTypeWarning, "HookTimedOut", "Delete",
			"Pre-delete hooks %s still held it when their timeout passed: shutting its VM down", strings.Join(hooks, ", "))
		return false, 0, nil
	}
	return false, 0, nil // released
}

// lifecycleOf is the lifecycle of vm's set (nil when it has no
// spec.lifecycle); found is false when no set controls vm, or its set is
// gone.
func (r *VirtualMachineReconciler) lifecycleOf(ctx context.Context, vm *vmv1.VirtualMachine) (lc *kube.Lifecycle, found bool, err error) {
	ref := metav1.GetControllerOfNoCopy(vm)
	if ref == nil || ref.Kind != "VirtualMachineReplicaSet" {
		return nil, false, nil
	}
	var set vmv1.VirtualMachineReplicaSet
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: vm.Namespace, Name: ref.Name}, &set); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("read the set of %s for its lifecycle: %w", vm.Name, err)
	}
	if set.UID != ref.UID {
		return nil, false, nil
	}
	lc, err = lifecycle(set.Spec.Lifecycle)
	return lc, true, err
}
