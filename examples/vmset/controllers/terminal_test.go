package controllers_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/faults"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// TestTerminalStatusRetried: a VirtualMachine the controller gives up on
// (a vSphere name another owner's VM holds, a zone with no placement) is
// not retried, but its Ready condition, which says why, is written even
// when the first status write fails. The VirtualMachines carry the
// finalizer already, as after a restart of the operator, so that nothing
// but the controller's own retry can bring them back.
func TestTerminalStatusRetried(t *testing.T) {
	e := env.Require(t)
	sim := vcsimtest.Start(t)
	ctx := context.Background()
	const ns = "terminal"
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	other, err := vsphere.New(ctx, sim.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close(context.Background()) })
	if _, err := other.Create(ctx, vmprovider.Spec{Name: ns + "-taken", Owner: vmprovider.Owner{UID: "someone-else", Name: "elsewhere"}}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"taken": "NameTaken", "nowhere": "UnknownZone"}
	for name := range want {
		vm := &vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: []string{controllers.Finalizer}}}
		if name == "nowhere" {
			vm.Spec.Zone = "zone-nowhere"
		}
		if err := e.Client.Create(ctx, vm); err != nil {
			t.Fatal(err)
		}
	}

	// The first status write of each VirtualMachine fails.
	var mu sync.Mutex
	failed := map[string]int{}
	funcs := interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
		mu.Lock()
		first := obj.GetNamespace() == ns && failed[obj.GetName()] == 0
		if first {
			failed[obj.GetName()]++
		}
		mu.Unlock()
		if first {
			return apierrors.NewInternalError(errors.New("injected by the test"))
		}
		return c.SubResource(sub).Patch(ctx, obj, p, opts...)
	}}
	p, err := vsphere.New(ctx, sim.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) }) // runs after the manager stops
	e.StartManager(t, vmcheck.Scheme(), func(mgr ctrl.Manager) error {
		return controllers.Setup(mgr, controllers.NewVirtualMachineReconciler(p))
	}, func(o *ctrl.Options) { o.NewClient = faults.NewClient(funcs) }, testenv.OnlyNamespace(ns))

	got := map[string]string{}
	// The bound is for a busy CI machine (the test passes as soon as both
	// reasons show, in seconds when run alone): the retry after a failed
	// write is what it waits for, and nothing races it.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for name := range want {
			var vm vmv1.VirtualMachine
			if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &vm); err != nil {
				return false, nil
			}
			got[name] = "no Ready condition"
			if c := meta.FindStatusCondition(vm.Status.Conditions, "Ready"); c != nil {
				got[name] = c.Reason
			}
		}
		return got["taken"] == want["taken"] && got["nowhere"] == want["nowhere"], nil
	})
	mu.Lock()
	defer mu.Unlock()
	if err != nil {
		t.Errorf("Ready's reasons %v 2 min after a failed first status write (failed writes: %v), want %v", got, failed, want)
	}
	if failed["taken"] != 1 || failed["nowhere"] != 1 {
		t.Errorf("failed status writes %v, want one of each VirtualMachine: the test exercised nothing", failed)
	}
}
