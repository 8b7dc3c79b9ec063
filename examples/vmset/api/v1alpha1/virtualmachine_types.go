package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PowerState is a VM's power state.
// +kubebuilder:validation:Enum=PoweredOn;PoweredOff
type PowerState string

// The power states a VirtualMachine can ask for.
const (
	PoweredOn  PowerState = "PoweredOn"
	PoweredOff PowerState = "PoweredOff"
)

// VirtualMachineSpec is the VM a VirtualMachine asks for.
type VirtualMachineSpec struct {
	// Template is the vSphere VM or template to clone; empty means the
	// operator's default.
	// +optional
	Template string `json:"template,omitempty"`
	// CPUs is the number of virtual CPUs; 0 keeps the template's.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=768
	// +optional
	CPUs int32 `json:"cpus,omitempty"`
	// MemoryMiB is the memory size in MiB; 0 keeps the template's.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MemoryMiB int64 `json:"memoryMiB,omitempty"`
	// PowerState is the desired power state.
	// +kubebuilder:default=PoweredOn
	// +optional
	PowerState PowerState `json:"powerState,omitempty"`
}

// VirtualMachineStatus is what vCenter reports about the VM.
type VirtualMachineStatus struct {
	// PowerState is the VM's power state in vCenter.
	// +optional
	PowerState string `json:"powerState,omitempty"`
	// InstanceUUID is vCenter's identifier for the VM.
	// +optional
	InstanceUUID string `json:"instanceUUID,omitempty"`
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready is true when the VM exists and is in the desired
	// power state.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// VirtualMachine is a vSphere VM managed through Kubernetes.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vm
// +kubebuilder:printcolumn:name="POWER-STATE",type=string,JSONPath=`.status.powerState`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="UUID",type=string,JSONPath=`.status.instanceUUID`,priority=1
type VirtualMachine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired VM.
	Spec VirtualMachineSpec `json:"spec,omitempty"`
	// Status is the observed VM.
	Status VirtualMachineStatus `json:"status,omitempty"`
}

// VirtualMachineList is a list of VirtualMachines.
//
// +kubebuilder:object:root=true
type VirtualMachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the VirtualMachines.
	Items []VirtualMachine `json:"items"`
}
