package v1alpha1_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
)

// Register the API's types with a scheme, as the operator's manager does;
// a client built on that scheme then knows each type's group, version and
// kind.
func ExampleAddToScheme() {
	scheme := runtime.NewScheme()
	if err := vmv1.AddToScheme(scheme); err != nil {
		fmt.Println(err)
		return
	}
	for _, obj := range []runtime.Object{&vmv1.VirtualMachine{}, &vmv1.VirtualMachineReplicaSet{}} {
		kinds, _, err := scheme.ObjectKinds(obj)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(kinds[0])
	}
	// Output:
	// vm.replicakit.io/v1alpha1, Kind=VirtualMachine
	// vm.replicakit.io/v1alpha1, Kind=VirtualMachineReplicaSet
}

// A set's selector converts to the metav1 form the Kubernetes libraries
// take, and from there to the selector a list call uses.
func ExampleLabelSelector_ToMeta() {
	sel := &vmv1.LabelSelector{
		MatchLabels: map[string]string{"app": "web"},
		MatchExpressions: []vmv1.LabelSelectorRequirement{
			{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"front", "edge"}},
		},
	}
	s, err := metav1.LabelSelectorAsSelector(sel.ToMeta())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s)

	var none *vmv1.LabelSelector
	fmt.Println(none.ToMeta() == nil)
	// Output:
	// app=web,tier in (edge,front)
	// true
}

// A set of three VMs spread over two zones, each VM cloned from a template
// with two CPUs and 4 GiB, ready once its guest reports an address.
// DeepCopy gives a copy to change without touching the original, as a
// controller must do with objects read from its cache.
func ExampleVirtualMachineReplicaSet() {
	set := &vmv1.VirtualMachineReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "web"},
		Spec: vmv1.VirtualMachineReplicaSetSpec{
			Replicas: ptr.To[int32](3),
			Selector: &vmv1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: vmv1.VirtualMachineTemplate{
				Metadata: vmv1.TemplateMetadata{Labels: map[string]string{"app": "web"}},
				Spec: vmv1.VirtualMachineSpec{
					Template:  "ubuntu-24.04",
					CPUs:      2,
					MemoryMiB: 4096,
					Readiness: vmv1.ReadyWhenIPAddress,
				},
			},
			DeletePolicy: "Oldest",
			Zones:        []string{"zone-a", "zone-b"},
		},
	}

	scaled := set.DeepCopy()
	*scaled.Spec.Replicas = 5
	scaled.Spec.Zones = append(scaled.Spec.Zones, "zone-c")

	fmt.Println(*set.Spec.Replicas, set.Spec.Zones)
	fmt.Println(*scaled.Spec.Replicas, scaled.Spec.Zones)
	// Output:
	// 3 [zone-a zone-b]
	// 5 [zone-a zone-b zone-c]
}
