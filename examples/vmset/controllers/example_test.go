package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider/vmprovidertest"
)

// A VirtualMachine's vSphere VM is named after its namespace and name;
// names longer than vSphere's 80 characters are cut and end in a hash, so
// that they stay distinct.
func ExampleVSphereName() {
	short := &vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "web-x2bkp"}}
	long := &vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: strings.Repeat("a", 90)}}
	fmt.Println(controllers.VSphereName(short))
	name := controllers.VSphereName(long)
	fmt.Println(len(name), name[len(name)-11:])
	// Output:
	// prod-web-x2bkp
	// 80 -c9c15a11bf
}

// One reconcile of a new VirtualMachine: the reconciler adds its finalizer,
// clones the VM through the provider (here the in-memory Fake), powers it
// on and reports it ready. Deleting the VirtualMachine destroys the VM
// before the finalizer is removed.
func ExampleVirtualMachineReconciler() {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := vmv1.AddToScheme(scheme); err != nil {
		fmt.Println(err)
		return
	}
	vm := &vmv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "web-x2bkp", UID: "6f1c9a52"},
		Spec:       vmv1.VirtualMachineSpec{Template: "ubuntu-24.04", CPUs: 2, MemoryMiB: 4096},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(vm).WithStatusSubresource(vm).Build()
	provider := &vmprovidertest.Fake{}
	r := &controllers.VirtualMachineReconciler{Client: c, Provider: provider}
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(vm)}

	if _, err := r.Reconcile(ctx, req); err != nil {
		fmt.Println(err)
		return
	}
	var got vmv1.VirtualMachine
	if err := c.Get(ctx, req.NamespacedName, &got); err != nil {
		fmt.Println(err)
		return
	}
	ready := meta.FindStatusCondition(got.Status.Conditions, "Ready")
	fmt.Println(got.Finalizers, got.Status.VSphereName, got.Status.PowerState, got.Status.InstanceUUID)
	fmt.Println(ready.Status, ready.Reason, ready.Message)

	if err := c.Delete(ctx, &got); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		fmt.Println(err)
		return
	}
	vms, err := provider.List(ctx, "6f1c9a52")
	fmt.Println(len(vms), err)
	// Output:
	// [vm.replicakit.io/vsphere-vm] prod-web-x2bkp PoweredOn fake-00000001
	// True PoweredOn vSphere VM prod-web-x2bkp is PoweredOn
	// 0 <nil>
}

// The adapter is what the replica-set reconciler knows about the two
// kinds: it reads a set's spec (refusing a zone the operator has no
// placement for), makes a new VirtualMachine from the template, tells
// one made from another template, and says what state a VirtualMachine
// is in.
func ExampleReplicaSetAdapter() {
	a := controllers.ReplicaSetAdapter{Zones: []string{"zone-a", "zone-b"}}
	set := &vmv1.VirtualMachineReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "web"},
		Spec: vmv1.VirtualMachineReplicaSetSpec{
			Replicas: ptr.To[int32](3),
			Selector: &vmv1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: vmv1.VirtualMachineTemplate{
				Metadata: vmv1.TemplateMetadata{Labels: map[string]string{"app": "web"}},
				Spec:     vmv1.VirtualMachineSpec{CPUs: 2, MemoryMiB: 4096},
			},
			DeletePolicy: "Oldest",
			Zones:        []string{"zone-a", "zone-b"},
		},
	}
	spec, err := a.Spec(set)
	fmt.Println(spec.Replicas, spec.DeletePolicy, spec.Zones, err)

	set.Spec.Zones = append(set.Spec.Zones, "zone-c")
	_, err = a.Spec(set)
	fmt.Println(err)

	child, err := a.NewChild(set)
	if err != nil {
		fmt.Println(err)
		return
	}
	a.SetZone(child, "zone-b")
	fmt.Println(child.Labels, child.Spec.CPUs, child.Spec.MemoryMiB, a.Zone(child))

	// A VirtualMachine without a revision label matches the template
	// when its spec is the template's, zone aside: one made from an
	// older template is rolled.
	older := child.DeepCopy()
	older.Spec.CPUs = 1
	fmt.Println(a.MatchesTemplate(set, child), a.MatchesTemplate(set, older))

	var r replicaset.Replica
	a.Describe(child, &r)
	fmt.Println(r.Phase, r.Ready)
	child.Status.InstanceUUID, child.Status.PowerState = "fake-00000001", string(vmv1.PoweredOn)
	child.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "PoweredOn",
		LastTransitionTime: metav1.NewTime(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))}}
	a.Describe(child, &r)
	fmt.Println(r.Phase, r.Ready, r.ReadySince.Format(time.RFC3339))

	// Powered off while its spec wants it on, it serves nothing: pending
	// again, and a rollout does not count it among those that may serve.
	child.Status.PowerState, child.Status.Conditions = string(vmv1.PoweredOff), nil
	r = replicaset.Replica{}
	a.Describe(child, &r)
	fmt.Println(r.Phase, r.Ready)
	// Output:
	// 3 Oldest [zone-a zone-b] <nil>
	// spec.zones: zone "zone-c" has no placement in the operator's configuration (it has zone-a, zone-b)
	// map[app:web] 2 4096 zone-b
	// true false
	// Pending false
	// Running true 2026-11-30T12:00:00Z
	// Pending false
}
