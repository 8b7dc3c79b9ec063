package controllers_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// TestDelete_GuestShutsDown: a VirtualMachine deleted while its guest runs
// VMware Tools and ignores the request to shut down keeps its finalizer,
// with Ready False ShuttingDown, while the provider gives the guest its
// grace; then the VM is powered off, destroyed, and the object goes. No
// reconcile waits out the grace (vmprovider.ErrDeleting).
func TestDelete_GuestShutsDown(t *testing.T) {
	const ns = "shutdown"
	e := env.Require(t)
	faults := &vcsim.Faults{}
	sim := vcsimtest.StartFaulty(t, faults)
	cfg := sim.Config()
	cfg.ShutdownGrace = 3 * time.Second
	p, err := vsphere.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	e.StartManager(t, vmcheck.Scheme(), func(mgr ctrl.Manager) error {
		return controllers.Setup(mgr, controllers.NewVirtualMachineReconciler(p))
	}, testenv.OnlyNamespace(ns))
	ctx := context.Background()
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	vm := &vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: vmv1.VirtualMachineSpec{CPUs: 1, MemoryMiB: 512}}
	if err := e.Client.Create(ctx, vm); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(vm)
	readyIs := func(reason string) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			if err := e.Client.Get(ctx, key, vm); err != nil {
				return false, err
			}
			c := meta.FindStatusCondition(vm.Status.Conditions, "Ready")
			return c != nil && c.Reason == reason, nil
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, readyIs("PoweredOn")); err != nil {
		t.Fatalf("web not powered on: %v (%+v)", err, vm.Status)
	}
	name := controllers.VSphereName(vm)
	if err := vcsim.ReportGuest(ctx, sim.Config(), name, "10.2.0.10"); err != nil {
		t.Fatal(err)
	}
	svm, logout, err := simVM(ctx, sim, name)
	if err != nil {
		t.Fatal(err)
	}
	logout()
	defer faults.Ignore("ShutdownGuest", svm.Reference())()

	if err := e.Client.Delete(ctx, vm); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, readyIs(controllers.ReasonShuttingDown)); err != nil {
		t.Fatalf("web not ShuttingDown: %v (%+v)", err, vm.Status)
	}
	if !controllerutil.ContainsFinalizer(vm, controllers.Finalizer) {
		t.Errorf("web ShuttingDown without its finalizer: %v", vm.Finalizers)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := e.Client.Get(ctx, key, &vmv1.VirtualMachine{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("web still there: %v", err)
	}
	if _, _, err := simVM(ctx, sim, name); err == nil {
		t.Errorf("vSphere VM %s still there once its VirtualMachine is gone", name)
	}
	calls := faults.Calls()
	if calls["ShutdownGuest"] != 1 || calls["PowerOffVM_Task"] != 1 {
		t.Errorf("ShutdownGuest %d, PowerOffVM_Task %d calls; want 1 and 1: asked once, powered off once the grace passed",
			calls["ShutdownGuest"], calls["PowerOffVM_Task"])
	}
}
