package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/vmprovider"
)

// Finalizer keeps a VirtualMachine until its vSphere VM is destroyed.
const Finalizer = "vm.replicakit.io/vsphere-vm"

// VirtualMachineReconciler realizes VirtualMachines in vSphere.
type VirtualMachineReconciler struct {
	// Client reads and writes VirtualMachines.
	Client client.Client
	// Provider creates, powers and destroys the VMs.
	Provider vmprovider.Provider
	// Events records events on VirtualMachines; nil records none.
	Events events.EventRecorder
}

// VSphereName is the name of the vSphere VM for a VirtualMachine: namespace
// and name joined with '-', cut and hashed to fit vSphere's 80 characters.
// Ownership is decided by the VM's mark (the object's UID), never by name.
func VSphereName(vm *vmv1.VirtualMachine) string {
	name := vm.Namespace + "-" + vm.Name
	if len(name) <= naming.MaxVSphereName {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:naming.MaxVSphereName-11] + "-" + hex.EncodeToString(sum[:5])
}

// The VirtualMachine controller's permissions, from which `make generate`
// writes config/rbac/role.yaml:
//
// +kubebuilder:rbac:groups=vm.replicakit.io,resources=virtualmachines,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=vm.replicakit.io,resources=virtualmachines/status,verbs=patch
// +kubebuilder:rbac:groups=vm.replicakit.io,resources=virtualmachines/finalizers,verbs=update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile implements reconcile.Reconciler.
func (r *VirtualMachineReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var vm vmv1.VirtualMachine
	if err := r.Client.Get(ctx, req.NamespacedName, &vm); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	owner := string(vm.UID)
	name := VSphereName(&vm)

	if vm.DeletionTimestamp != nil {
		if !controllerutil.ContainsFinalizer(&vm, Finalizer) {
			return reconcile.Result{}, nil
		}
		if err := r.Provider.Delete(ctx, name, owner); err != nil && !errors.Is(err, vmprovider.ErrNotOwned) {
			return reconcile.Result{}, r.fail(ctx, &vm, "DeleteFailed", err)
		}
		patch := client.MergeFrom(vm.DeepCopy())
		controllerutil.RemoveFinalizer(&vm, Finalizer)
		return reconcile.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, &vm, patch))
	}
	if !controllerutil.ContainsFinalizer(&vm, Finalizer) {
		patch := client.MergeFrom(vm.DeepCopy())
		controllerutil.AddFinalizer(&vm, Finalizer)
		if err := r.Client.Patch(ctx, &vm, patch); err != nil {
			return reconcile.Result{}, err
		}
	}

	want := vm.Spec.PowerState
	if want == "" {
		want = vmv1.PoweredOn
	}
	got, err := r.Provider.Get(ctx, name)
	switch {
	case errors.Is(err, vmprovider.ErrNotFound):
		got, err = r.Provider.Create(ctx, vmprovider.Spec{
			Name: name, Owner: vmprovider.Owner{UID: owner, Name: vm.Namespace + "/" + vm.Name},
			Template: vm.Spec.Template, CPUs: vm.Spec.CPUs, MemoryMiB: vm.Spec.MemoryMiB,
			PowerOn: want == vmv1.PoweredOn,
		})
		if err != nil {
			return reconcile.Result{}, r.fail(ctx, &vm, "CreateFailed", err)
		}
		r.event(&vm, corev1.EventTypeNormal, "Created", "Create", "Created vSphere VM %s", name)
	case err != nil:
		return reconcile.Result{}, r.fail(ctx, &vm, "GetFailed", err)
	case got.Owner != owner:
		err := &vmprovider.NotOwnedError{Name: name, Want: owner, Got: got.Owner}
		return reconcile.Result{}, reconcile.TerminalError(r.fail(ctx, &vm, "NameTaken", err))
	}
	if string(want) != string(got.Power) {
		if err := r.Provider.SetPower(ctx, name, owner, vmprovider.PowerState(want)); err != nil {
			return reconcile.Result{}, r.fail(ctx, &vm, "PowerFailed", err)
		}
		got.Power = vmprovider.PowerState(want)
	}
	return reconcile.Result{}, r.setStatus(ctx, &vm, got, metav1.Condition{
		Type: "Ready", Status: metav1.ConditionTrue, Reason: string(got.Power),
		Message: fmt.Sprintf("vSphere VM %s is %s", name, got.Power),
	})
}

// fail records err in the Ready condition and returns it for a retry with
// backoff.
func (r *VirtualMachineReconciler) fail(ctx context.Context, vm *vmv1.VirtualMachine, reason string, err error) error {
	r.event(vm, corev1.EventTypeWarning, reason, "Reconcile", "%v", err)
	cond := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: reason, Message: err.Error()}
	return errors.Join(err, r.setStatus(ctx, vm, vmprovider.VM{Power: vmprovider.PowerState(vm.Status.PowerState), InstanceUUID: vm.Status.InstanceUUID}, cond))
}

// setStatus patches the status when it changed.
func (r *VirtualMachineReconciler) setStatus(ctx context.Context, vm *vmv1.VirtualMachine, got vmprovider.VM, cond metav1.Condition) error {
	before := vm.DeepCopy()
	vm.Status.PowerState = string(got.Power)
	vm.Status.InstanceUUID = got.InstanceUUID
	vm.Status.ObservedGeneration = vm.Generation
	cond.ObservedGeneration = vm.Generation
	meta.SetStatusCondition(&vm.Status.Conditions, cond)
	if equality.Semantic.DeepEqual(before.Status, vm.Status) {
		return nil
	}
	err := r.Client.Status().Patch(ctx, vm, client.MergeFrom(before))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (r *VirtualMachineReconciler) event(vm *vmv1.VirtualMachine, kind, reason, action, note string, args ...any) {
	if r.Events != nil {
		r.Events.Eventf(vm, nil, kind, reason, action, note, args...)
	}
}

// SetupWithManager registers the controller.
func (r *VirtualMachineReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Events == nil {
		r.Events = mgr.GetEventRecorder("virtualmachine")
	}
	return ctrl.NewControllerManagedBy(mgr).Named("virtualmachine").For(&vmv1.VirtualMachine{}).Complete(r)
}
