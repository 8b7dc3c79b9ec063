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
	// CPUHotAdd turns CPU hot-add on when the VM is cloned, so that more
	// CPUs can be given to it while it runs (status.hardware says what
	// vCenter has). Changing it later needs a new VM: in a set, a rollout
	// replaces the VMs.
	// +optional
	CPUHotAdd bool `json:"cpuHotAdd,omitempty"`
	// MemoryHotAdd turns memory hot-add on when the VM is cloned, so that
	// its memory can be raised while it runs. The guest must support it
	// too. Changing it later needs a new VM.
	// +optional
	MemoryHotAdd bool `json:"memoryHotAdd,omitempty"`
	// PowerState is the desired power state.
	// +kubebuilder:default=PoweredOn
	// +optional
	PowerState PowerState `json:"powerState,omitempty"`
	// Network connects the VM's network adapters; absent keeps the
	// template's networks.
	// +optional
	Network *VirtualMachineNetwork `json:"network,omitempty"`
	// Bootstrap customizes the guest when it first boots.
	// +optional
	Bootstrap *VirtualMachineBootstrap `json:"bootstrap,omitempty"`
	// Readiness says when the VM counts as ready (its Ready condition, and
	// so a set's readyReplicas and availableReplicas): PoweredOn (the
	// default), GuestHeartbeat (VMware Tools answer) or IPAddress (the
	// guest reports an address).
	// +kubebuilder:default=PoweredOn
	// +optional
	Readiness Readiness `json:"readiness,omitempty"`
	// Zone is the failure domain the VM is placed in: one of the zones
	// the operator is configured with (-zone, $VSPHERE_ZONES), each a
	// cluster or resource pool and optionally a folder and datastore.
	// Empty: the operator's default placement. A set with spec.zones
	// sets it on each VirtualMachine it creates. A zone the operator
	// does not know fails the VM with the reason UnknownZone.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`
	// +optional
	Zone string `json:"zone,omitempty"`
}

// Readiness says when a VM counts as ready.
// +kubebuilder:validation:Enum=PoweredOn;GuestHeartbeat;IPAddress
type Readiness string

// The readiness choices.
const (
	ReadyWhenPoweredOn      Readiness = "PoweredOn"
	ReadyWhenGuestHeartbeat Readiness = "GuestHeartbeat"
	ReadyWhenIPAddress      Readiness = "IPAddress"
)

// VirtualMachineNetwork lists the VM's network adapters.
type VirtualMachineNetwork struct {
	// Interfaces are the VM's network adapters in order: the template's
	// first adapter joins the first interface's network, and so on;
	// adapters are added for interfaces beyond the template's.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	Interfaces []NetworkInterface `json:"interfaces"`
}

// NetworkInterface is one network adapter.
type NetworkInterface struct {
	// Network is the vSphere network (a standard or distributed port
	// group) the adapter joins, by name or inventory path.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Network string `json:"network"`
}

// VirtualMachineBootstrap customizes the guest at first boot.
type VirtualMachineBootstrap struct {
	// CloudInit hands user data and metadata to cloud-init in the guest.
	// +optional
	CloudInit *CloudInitBootstrap `json:"cloudInit,omitempty"`
}

// CloudInitBootstrap is cloud-init's data. The operator adds instance-id
// (the VirtualMachine's UID) and local-hostname (its name) to the metadata
// unless they are given, so every replica of a set gets its own.
//
// +kubebuilder:validation:XValidation:rule="has(self.userData) || has(self.metaData)",message="bootstrap.cloudInit needs userData or metaData"
type CloudInitBootstrap struct {
	// UserData is cloud-init's user data, such as a #cloud-config
	// document.
	// +kubebuilder:validation:MaxLength=65536
	// +optional
	UserData string `json:"userData,omitempty"`
	// MetaData is cloud-init's instance metadata, a YAML mapping:
	// local-hostname, and network config version 2 under network (for
	// example network.ethernets.eth0.addresses). Metadata that is not a
	// YAML mapping fails the VM with the reason InvalidSpec.
	// +kubebuilder:validation:MaxLength=65536
	// +optional
	MetaData string `json:"metaData,omitempty"`
}

// VirtualMachineStatus is what vCenter reports about the VM.
type VirtualMachineStatus struct {
	// VSphereName is the VM's name in vCenter, in the operator's folder:
	// <namespace>-<name>, shortened with a hash where that is too long
	// (what govc vm.info and the vSphere Client show).
	// +optional
	VSphereName string `json:"vSphereName,omitempty"`
	// PowerState is the VM's power state in vCenter.
	// +optional
	PowerState string `json:"powerState,omitempty"`
	// InstanceUUID is vCenter's identifier for the VM.
	// +optional
	InstanceUUID string `json:"instanceUUID,omitempty"`
	// Addresses are the IP addresses the guest reports, the primary one
	// first.
	// +listType=atomic
	// +optional
	Addresses []string `json:"addresses,omitempty"`
	// Hostname is the guest's host name as it reports it.
	// +optional
	Hostname string `json:"hostname,omitempty"`
	// GuestHeartbeat is the guest's heartbeat health in vCenter: gray
	// (unknown), green, yellow or red.
	// +optional
	GuestHeartbeat string `json:"guestHeartbeat,omitempty"`
	// Hardware is the VM's CPUs and memory as vCenter reports them, and
	// whether hot-add is on. A change of spec.cpus or spec.memoryMiB
	// reaches the VM where it runs: live when hot-add allows it, else by
	// a power cycle when the VirtualMachine is annotated
	// vm.replicakit.io/power-cycle: allowed (a set does so when its
	// strategy allows it; Ready is False, reason PowerCycling, from the
	// cycle's start until the VM runs again); the Resized condition says
	// where it stands.
	// +optional
	Hardware *VirtualMachineHardware `json:"hardware,omitempty"`
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready is true when the VM exists, is in the desired
	// power state and, when that is PoweredOn, is ready as spec.readiness
	// says and its guest's heartbeat is not red (reason HeartbeatRed: the
	// guest stopped answering); its lastTransitionTime is when it became
	// so. Healthy says
	// whether the VM passes the health check a set's spec.remediation
	// acts on: True (reason Healthy), or False with the reason naming
	// what fails (PoweredOff, HeartbeatRed; HeartbeatGray, HeartbeatYellow
	// or NoAddress where spec.readiness needs a heartbeat or an address)
	// and a message saying it; its lastTransitionTime is when that began.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// VirtualMachineHardware is a VM's CPUs and memory in vCenter.
type VirtualMachineHardware struct {
	// CPUs is the number of virtual CPUs.
	CPUs int32 `json:"cpus"`
	// MemoryMiB is the memory size in MiB.
	MemoryMiB int64 `json:"memoryMiB"`
	// CPUHotAdd says CPUs can be added while the VM runs.
	// +optional
	CPUHotAdd bool `json:"cpuHotAdd,omitempty"`
	// CPUHotRemove says CPUs can be removed while the VM runs.
	// +optional
	CPUHotRemove bool `json:"cpuHotRemove,omitempty"`
	// MemoryHotAdd says memory can be added while the VM runs.
	// +optional
	MemoryHotAdd bool `json:"memoryHotAdd,omitempty"`
}

// VirtualMachine is a vSphere VM managed through Kubernetes.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vm
// +kubebuilder:printcolumn:name="POWER-STATE",type=string,JSONPath=`.status.powerState`
// +kubebuilder:printcolumn:name="READY",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="IP",type=string,JSONPath=`.status.addresses[0]`
// +kubebuilder:printcolumn:name="ZONE",type=string,JSONPath=`.spec.zone`
// +kubebuilder:printcolumn:name="REVISION",type=string,JSONPath=`.metadata.labels.replicakit\.io/revision`
// +kubebuilder:printcolumn:name="PREPARING",type=date,JSONPath=`.metadata.annotations.replicakit\.io/preparing`
// +kubebuilder:printcolumn:name="IN-PLACE",type=date,JSONPath=`.metadata.annotations.replicakit\.io/updated-in-place`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="HOSTNAME",type=string,JSONPath=`.status.hostname`,priority=1
// +kubebuilder:printcolumn:name="VSPHERE-NAME",type=string,JSONPath=`.status.vSphereName`,priority=1
// +kubebuilder:printcolumn:name="UUID",type=string,JSONPath=`.status.instanceUUID`,priority=1
// +kubebuilder:printcolumn:name="HEALTH",type=string,JSONPath=`.status.conditions[?(@.type=="Healthy")].reason`,priority=1
// +kubebuilder:printcolumn:name="CPUS",type=integer,JSONPath=`.status.hardware.cpus`,priority=1
// +kubebuilder:printcolumn:name="MEMORY-MIB",type=integer,JSONPath=`.status.hardware.memoryMiB`,priority=1
type VirtualMachine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired VM. Its network and bootstrap are applied when
	// the VM is cloned, and cannot change after.
	// +kubebuilder:validation:XValidation:rule="has(self.network) == has(oldSelf.network) && (!has(self.network) || self.network == oldSelf.network)",message="spec.network cannot change: adapters are set when the VM is cloned"
	// +kubebuilder:validation:XValidation:rule="has(self.bootstrap) == has(oldSelf.bootstrap) && (!has(self.bootstrap) || self.bootstrap == oldSelf.bootstrap)",message="spec.bootstrap cannot change: the guest is customized when the VM is cloned"
	// +kubebuilder:validation:XValidation:rule="(has(self.zone) ? self.zone : '') == (has(oldSelf.zone) ? oldSelf.zone : '')",message="spec.zone cannot change: the VM is placed when it is cloned"
	// +kubebuilder:validation:XValidation:rule="(has(self.cpuHotAdd) ? self.cpuHotAdd : false) == (has(oldSelf.cpuHotAdd) ? oldSelf.cpuHotAdd : false) && (has(self.memoryHotAdd) ? self.memoryHotAdd : false) == (has(oldSelf.memoryHotAdd) ? oldSelf.memoryHotAdd : false)",message="spec.cpuHotAdd and spec.memoryHotAdd cannot change: hot-add is set when the VM is cloned"
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
