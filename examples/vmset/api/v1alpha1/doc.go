// Package v1alpha1 is the API of the example operator: VirtualMachine, a
// vSphere VM as a Kubernetes object, and VirtualMachineReplicaSet, which
// keeps a number of VirtualMachines converged on spec.replicas.
//
// +kubebuilder:object:generate=true
// +groupName=vm.replicakit.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API's group and version.
var GroupVersion = schema.GroupVersion{Group: "vm.replicakit.io", Version: "v1alpha1"}

// AddToScheme adds the API's types to s. Registration is explicit: the
// package registers nothing by itself.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&VirtualMachine{}, &VirtualMachineList{},
		&VirtualMachineReplicaSet{}, &VirtualMachineReplicaSetList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
