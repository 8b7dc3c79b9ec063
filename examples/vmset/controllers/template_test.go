package controllers_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
)

// TestTemplateNotFound_Retried: a VirtualMachine created while no template
// is at the operator's template path (an image pipeline rebuilding it
// under its name destroyed the old one first) says Ready False
// TemplateNotFound and is retried, not refused for good: once the new
// template is there, its VM is made from it.
func TestTemplateNotFound_Retried(t *testing.T) {
	const ns = "tmplmissing"
	e, sim := start(t, ns)
	ctx := context.Background()
	tmplName := sim.Config().Template
	tmpl, logout, err := simVM(ctx, sim, tmplName)
	if err != nil {
		t.Fatal(err)
	}
	defer logout()
	other, logoutOther, err := simVM(ctx, sim, "DC0_H0_VM1")
	if err != nil {
		t.Fatal(err)
	}
	defer logoutOther()
	var m mo.VirtualMachine
	if err := tmpl.Properties(ctx, tmpl.Reference(), []string{"parent"}, &m); err != nil {
		t.Fatal(err)
	}
	run := func(what string, start func(context.Context) (*object.Task, error)) {
		t.Helper()
		task, err := start(ctx)
		if err == nil {
			err = task.Wait(ctx)
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// Packer's -force: the old template goes before the new one is built.
	run("power the template off", tmpl.PowerOff)
	run("destroy the template", tmpl.Destroy)
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	vm := &vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: vmv1.VirtualMachineSpec{CPUs: 1, MemoryMiB: 512}}
	if err := e.Client.Create(ctx, vm); err != nil {
		t.Fatal(err)
	}
	readyIs := func(reason string) error {
		return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			if err := e.Client.Get(ctx, client.ObjectKeyFromObject(vm), vm); err != nil {
				return false, nil
			}
			c := meta.FindStatusCondition(vm.Status.Conditions, "Ready")
			return c != nil && c.Reason == reason, nil
		})
	}
	if err := readyIs(controllers.ReasonTemplateNotFound); err != nil {
		t.Fatalf("web with no template: not TemplateNotFound: %v (%+v)", err, vm.Status.Conditions)
	}
	run("build the new template", func(ctx context.Context) (*object.Task, error) {
		return other.Clone(ctx, object.NewFolder(other.Client(), *m.Parent), tmplName, types.VirtualMachineCloneSpec{})
	})
	if err := readyIs("PoweredOn"); err != nil {
		t.Fatalf("web once the template is back: not PoweredOn: %v (%+v)", err, vm.Status.Conditions)
	}
}
