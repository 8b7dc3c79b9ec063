package chaos_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// foreignObjects are what someone else owns in the namespace: a
// VirtualMachine with the set's labels controlled by another owner, one with
// other labels and no owner, and a VirtualMachine whose vSphere name is taken
// by a VM that another owner marked.
type foreignObjects struct {
	vms     []*vmv1.VirtualMachine // as planted
	taken   *vmv1.VirtualMachine
	other   *vsphere.Provider
	vmName  string
	vmOwner string
}

func plantForeign(t testing.TB, e *testenv.Env, sim *vcsimtest.Sim, ns string) *foreignObjects {
	t.Helper()
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other-owner"}}
	if err := e.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	owned := &vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: "foreign-owned", Labels: map[string]string{"app": setName},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID, Controller: ptr.To(true)}},
	}, Spec: vmv1.VirtualMachineSpec{CPUs: 2}}
	bystander := &vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: "bystander", Labels: map[string]string{"app": "other"},
	}}
	f := &foreignObjects{vmName: ns + "-taken", vmOwner: "someone-else"}
	var err error
	if f.other, err = vsphere.New(ctx, sim.Config()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.other.Close(context.Background()) })
	if _, err := f.other.Create(ctx, vmprovider.Spec{Name: f.vmName, Owner: vmprovider.Owner{UID: f.vmOwner, Name: "elsewhere"}, PowerOn: true}); err != nil {
		t.Fatal(err)
	}
	f.taken = &vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"}}
	for _, vm := range []*vmv1.VirtualMachine{owned, bystander, f.taken} {
		if err := e.Client.Create(ctx, vm); err != nil {
			t.Fatal(err)
		}
		f.vms = append(f.vms, vm.DeepCopy())
	}
	return f
}

// reported waits, while the operator runs, until the VirtualMachine whose
// vSphere name another owner's VM holds says so (Ready False, reason
// NameTaken). The operator may come to it late: it has a VirtualMachine
// it listed at start at a lower priority than the set's, and gives up on
// it at once (reconcile.TerminalError), so the condition is the only sign
// it was seen.
func (f *foreignObjects) reported(t testing.TB, e *testenv.Env) {
	t.Helper()
	var c *metav1.Condition
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var got vmv1.VirtualMachine
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(f.taken), &got); err != nil {
			return false, nil
		}
		c = meta.FindStatusCondition(got.Status.Conditions, "Ready")
		return c != nil && c.Reason == "NameTaken", nil
	})
	if err != nil {
		t.Errorf("VirtualMachine %s with a taken vSphere name: Ready %+v after 2 minutes, want reason NameTaken%s", f.taken.Name, c, stacks())
	}
}

// made waits, while the operator runs, until it has done all it will do
// with the foreign objects: the VMs of the VirtualMachines that are not
// the set's made and powered on, and the taken name reported (reported).
// A scenario that counts vCenter's clones from a moment on waits for it
// first: the operator reaches the foreign objects after the set's work.
func (f *foreignObjects) made(t testing.TB, e *testenv.Env) {
	t.Helper()
	f.reported(t, e)
	for _, want := range f.vms {
		if want.Name == f.taken.Name {
			continue
		}
		var got vmv1.VirtualMachine
		err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			err := e.Client.Get(ctx, client.ObjectKeyFromObject(want), &got)
			return err == nil && got.Status.PowerState == string(vmv1.PoweredOn), nil
		})
		if err != nil {
			t.Fatalf("foreign VirtualMachine %s: no VM powered on after 2 minutes: %+v%s", want.Name, got.Status, stacks())
		}
	}
}

// changed counts the foreign objects that the operator changed beyond what
// the VirtualMachine controller owns (status and its finalizer), and checks
// that the taken name's VM was left alone.
func (f *foreignObjects) changed(t testing.TB, e *testenv.Env) int {
	t.Helper()
	ctx := context.Background()
	n := 0
	for _, want := range f.vms {
		var got vmv1.VirtualMachine
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(want), &got); err != nil {
			t.Errorf("foreign %s: %v", want.Name, err)
			n++
			continue
		}
		diff := cmp.Diff(want.Labels, got.Labels) + cmp.Diff(want.OwnerReferences, got.OwnerReferences) + cmp.Diff(want.Spec, got.Spec)
		if got.DeletionTimestamp != nil || diff != "" {
			t.Errorf("foreign %s changed (deleting: %v):\n%s", want.Name, got.DeletionTimestamp != nil, diff)
			n++
		}
	}
	vm, err := f.other.Get(ctx, f.vmName)
	if err != nil || vm.Owner != f.vmOwner || vm.Power != vmprovider.PoweredOn {
		t.Errorf("the foreign vSphere VM %s: %+v, %v; want it untouched, owned by %s and powered on", f.vmName, vm, err, f.vmOwner)
		n++
	}
	return n
}
