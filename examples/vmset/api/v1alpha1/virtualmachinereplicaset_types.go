package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TemplateMetadata is the metadata every replica gets.
type TemplateMetadata struct {
	// Labels of every replica; the selector must select them.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations of every replica.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// VirtualMachineTemplate describes the VirtualMachines a set creates.
type VirtualMachineTemplate struct {
	// Metadata is the replicas' labels and annotations.
	// +optional
	Metadata TemplateMetadata `json:"metadata,omitempty"`
	// Spec is every replica's VirtualMachine spec.
	Spec VirtualMachineSpec `json:"spec"`
}

// VirtualMachineReplicaSetSpec is what a set asks for.
//
// +kubebuilder:validation:XValidation:rule="!has(self.selector.matchLabels) || self.selector.matchLabels.all(k, has(self.template.metadata.labels) && k in self.template.metadata.labels && self.template.metadata.labels[k] == self.selector.matchLabels[k])",message="spec.selector.matchLabels must match spec.template.metadata.labels"
type VirtualMachineReplicaSetSpec struct {
	// Replicas is the desired number of VirtualMachines.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Selector selects the set's VirtualMachines. It must select the
	// template's labels, and cannot change.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.selector is immutable"
	// +kubebuilder:validation:XValidation:rule="has(self.matchLabels) || has(self.matchExpressions)",message="spec.selector must not be empty"
	Selector *LabelSelector `json:"selector"`
	// Template is the VirtualMachine every replica is made from.
	Template VirtualMachineTemplate `json:"template"`
	// DeletePolicy chooses which replicas a scale-down removes: Random
	// (default), Oldest, Newest or UnhealthyFirst. HighestOrdinal needs
	// ordinal names, and this operator names VMs randomly: it is refused
	// with the ReplicaFailure reason NeedsOrdinalNames.
	// +kubebuilder:default=Random
	// +kubebuilder:validation:MaxLength=63
	// +optional
	DeletePolicy string `json:"deletePolicy,omitempty"`
	// MinReadySeconds is how long a replica must be ready to count as
	// available.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`
	// Paused stops the set from creating, deleting, adopting or releasing
	// replicas; status is still reported, with the reason Paused.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// Zones lists the failure domains to spread the replicas over, each
	// one the operator is configured with (a zone it does not know is
	// refused with the ReplicaFailure reason InvalidSpec, naming it). New
	// replicas go to the zone with the fewest, scale-down takes from the
	// zone with the most, and a zone whose clones fail is avoided for a
	// while as the others take its replicas. Empty: no spreading.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	// +listType=set
	// +optional
	Zones []string `json:"zones,omitempty"`
	// Rebalance moves replicas back into balance across zones (after a
	// zone recovered, or when zones were added): one at a time, creating
	// the new replica before deleting one from the fullest zone, never
	// taking available replicas below spec.replicas.
	// +optional
	Rebalance bool `json:"rebalance,omitempty"`
	// CloneMode is how new VMs are cloned: Full (the default) copies the
	// template's disks, so each VM stands alone; Linked makes child disks
	// of the template's snapshot replicakit-linked-clone (taken once if it
	// has none; never whichever snapshot is current), in
	// seconds rather than minutes, but every VM then depends on that
	// snapshot and the template's datastore (vsphere.Provider's Linked
	// clones). Changing it is not a rollout: new VMs are cloned the new
	// way, existing ones stay.
	// +kubebuilder:validation:Enum=Full;Linked
	// +optional
	CloneMode string `json:"cloneMode,omitempty"`
	// Strategy says how VMs made from an older template are replaced when
	// spec.template changes. The default is a rolling update of one surge
	// VM and none unavailable. The template's labels and annotations reach
	// existing VMs in place, with no new VM.
	// +optional
	Strategy UpdateStrategy `json:"strategy,omitempty"`
	// ProgressDeadlineSeconds is how long a rollout may go without
	// moving before the RolledOut condition says
	// ProgressDeadlineExceeded. Nothing is rolled back. Default 600.
	// +kubebuilder:validation:Minimum=1
	// +optional
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`
	// Remediation turns self-healing on: VMs that stay unhealthy (their
	// Healthy condition False: powered off by someone else, a red guest
	// heartbeat, not ready as spec.template.spec.readiness says) are
	// reset in vCenter and, when that does not help, replaced, under
	// guards that keep a fault outside the VMs from replacing them all.
	// Absent: no self-healing. Empty ({}): self-healing with the safe
	// defaults each field states.
	// +optional
	Remediation *Remediation `json:"remediation,omitempty"`
	// Lifecycle holds the set's lifecycle hooks: a VM chosen to go (by a
	// scale-down, a rollout, remediation, rebalancing, or the set's own
	// deletion) prepares first, and is shut down and destroyed only once
	// its pre-delete hooks released it or timed out; a new VM counts as
	// ready only once its launch gates opened. Absent: a VM chosen to go
	// is deleted at once.
	// +optional
	Lifecycle *Lifecycle `json:"lifecycle,omitempty"`
}

// Lifecycle is a set's lifecycle hooks, as kube.Lifecycle, which the
// replicaset package's Lifecycle hooks section states the rules of. Hooks
// and gates are annotations on each VirtualMachine, under the domain
// vm.replicakit.io: pre-delete.hook.vm.replicakit.io/<name> while a hook
// holds a VM that prepares to leave (replicakit.io/preparing says since
// when), launch.gate.vm.replicakit.io/<name> while a gate keeps a new VM
// from counting as ready. Each hook's or gate's controller removes its
// annotation when its work is done.
type Lifecycle struct {
	// PreDelete names the hooks every VM waits on before it goes: each is
	// put on the VM as it begins to prepare. Hook annotations another
	// controller puts on a VM hold it too.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9_.]{0,61}[a-z0-9])?$`
	// +listType=set
	// +optional
	PreDelete []string `json:"preDelete,omitempty"`
	// LaunchGates names the gates every new VM passes before it counts as
	// ready: each is put on the VM when it is made.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9_.]{0,61}[a-z0-9])?$`
	// +listType=set
	// +optional
	LaunchGates []string `json:"launchGates,omitempty"`
	// Timeout is how long hooks may hold a VM, from when it began to
	// prepare; then DefaultResult applies. A positive duration. Default
	// 15m: long enough for a node drain or a load balancer's connection
	// draining, short enough that a hook whose controller crashed delays a
	// scale-down by minutes.
	// +kubebuilder:validation:XValidation:rule="self.size() <= 32 && self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) > duration('0s')",message="must be a positive duration, such as 90s or 10m"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// DefaultResult is what a timeout means: Continue (the default)
	// deletes the VM anyway; Abandon keeps it, preparing, and says so in
	// the ReplicaFailure condition until its hooks release it. With
	// Abandon, a set being deleted stays until then too (its finalizer
	// replicakit.io/drain waits for every VM): remove the hook
	// annotations to let it go.
	// +kubebuilder:validation:Enum=Continue;Abandon
	// +optional
	DefaultResult string `json:"defaultResult,omitempty"`
	// MarkNotReady counts a VM as not ready from the moment it begins to
	// prepare (its Ready condition stays as the VM is; the set's status
	// stops counting it). False: it counts as its readiness says until it
	// is deleted. A rollout never counts on a preparing VM either way.
	// +optional
	MarkNotReady bool `json:"markNotReady,omitempty"`
}

// Remediation is a set's self-healing policy, as replicaset.Remediation,
// which states the rules: when a VM falls due, what is done, and the
// guards. Every field is optional, and its default is safe: a VM is given
// minutes before anything is done to it, a reset comes before a clone, and
// a fault that makes many VMs unhealthy at once replaces none.
type Remediation struct {
	// StartupWindow is how long a VM has, from when its clone is under
	// way (past the operator's CreateWait, or done) or it was last reset
	// or power-cycled for a resize, to pass its health check and be
	// ready; one that has not by then is remediated, a clone that hangs
	// too. A duration of at least 1s, such as "90s" or
	// "10m".
	// Default 10m: a clone, its boot and a guest's first heartbeat take
	// minutes.
	// +kubebuilder:validation:XValidation:rule="self.size() <= 32 && self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) >= duration('1s')",message="must be a duration of at least 1s, such as 90s or 10m: a shorter window cannot tell many VMs failing at once from one fault"
	// +optional
	StartupWindow *metav1.Duration `json:"startupWindow,omitempty"`
	// UnhealthyWindow is how long a VM that was healthy may fail its
	// health check without a break before it is remediated: longer than
	// the blips that heal by themselves. At least 1s. Default 5m:
	// longer than a vMotion, a VMware Tools restart or a network blip.
	// +kubebuilder:validation:XValidation:rule="self.size() <= 32 && self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) >= duration('1s')",message="must be a duration of at least 1s, such as 90s or 10m: a shorter window cannot tell many VMs failing at once from one fault"
	// +optional
	UnhealthyWindow *metav1.Duration `json:"unhealthyWindow,omitempty"`
	// Backoff is how long the next replacement waits after one whose VM
	// never became healthy, doubling with each further such one. At
	// least 1s. Default 1m.
	// +kubebuilder:validation:XValidation:rule="self.size() <= 32 && self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) >= duration('1s')",message="must be a duration of at least 1s, such as 90s or 10m: a shorter window cannot tell many VMs failing at once from one fault"
	// +optional
	Backoff *metav1.Duration `json:"backoff,omitempty"`
	// Restart resets a VM due for remediation in vCenter first (a hard
	// reset, as the power button would) and gives it the start-up window
	// again; only a VM still unhealthy after that is replaced. False
	// replaces a VM at once. Default true: a reset takes seconds and
	// keeps the VM, its disks and its address, where a replacement is a
	// clone of minutes.
	// +optional
	Restart *bool `json:"restart,omitempty"`
	// MaxUnhealthy is the storm guard: while more VMs are unhealthy than
	// this, the fault is taken to be outside them (a storage or network
	// outage) and none is remediated. A count of at least 1, or a
	// percentage of spec.replicas rounded down (at least 1). Default 40%.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^([1-9][0-9]?|100)%$')",message="must be a count of at least 1 or a percentage from 1% to 100%"
	// +optional
	MaxUnhealthy *intstr.IntOrString `json:"maxUnhealthy,omitempty"`
	// MaxInFlight caps the remediations under way at once: VMs reset and
	// in their start-up window, and unhealthy VMs being deleted. A count
	// of at least 1, or a percentage of spec.replicas rounded up. Default
	// 10% (so at least 1).
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^([1-9][0-9]?|100)%$')",message="must be a count of at least 1 or a percentage from 1% to 100%"
	// +optional
	MaxInFlight *intstr.IntOrString `json:"maxInFlight,omitempty"`
	// MaxFailures is how many replacements in a row may never become
	// healthy before remediation is suspended (the RemediationAllowed
	// condition says Suspended) until a VM started since is healthy: a
	// template whose VMs never become healthy costs that many clones, not
	// an endless loop of them. Default 3.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxFailures *int32 `json:"maxFailures,omitempty"`
}

// UpdateStrategy says how a set replaces VMs made from an older template:
// as replicaset.Strategy, which states the order and the bounds.
// maxSurge and maxUnavailable may not both be 0 in a rolling update, as
// in a Deployment: no VM could ever be replaced.
// +kubebuilder:validation:XValidation:rule="(has(self.type) && self.type == 'OnDelete') || !has(self.maxSurge) || !has(self.maxUnavailable) || !((self.maxSurge == 0 || self.maxSurge == '0' || self.maxSurge == '0%') && (self.maxUnavailable == 0 || self.maxUnavailable == '0' || self.maxUnavailable == '0%'))",message="spec.strategy.maxSurge and spec.strategy.maxUnavailable may not both be 0: no VM could ever be replaced; set maxSurge above 0 to replace each VM once its replacement is available, or maxUnavailable above 0 to replace VMs without a surge VM"
type UpdateStrategy struct {
	// Type is RollingUpdate (the default) or OnDelete (only VMs deleted
	// for other reasons come back on the new template).
	// +kubebuilder:validation:Enum=RollingUpdate;OnDelete
	// +optional
	Type string `json:"type,omitempty"`
	// MaxSurge is how many VMs a rolling update may have above
	// spec.replicas, counting those being deleted: a count or a
	// percentage of spec.replicas, rounded up. Default 1.
	// +kubebuilder:validation:XIntOrString
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`
	// MaxUnavailable is how far below spec.replicas a rolling update may
	// take the available VMs, and the VMs on older templates that may
	// still serve (powered on, though not seen ready): a count or a
	// percentage, rounded down, at most spec.replicas. Default 0.
	// +kubebuilder:validation:XIntOrString
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// Partition is how many VMs stay on older templates (a canary): a
	// count or a percentage, rounded up. Default 0.
	// +kubebuilder:validation:XIntOrString
	// +optional
	Partition *intstr.IntOrString `json:"partition,omitempty"`
	// Paused stops the rollout (kubectl rollout pause does this for a
	// Deployment); scaling goes on.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// ZoneByZone replaces VMs one zone at a time, in spec.zones order.
	// +optional
	ZoneByZone bool `json:"zoneByZone,omitempty"`
	// Method is how a VM made from an older template moves onto the
	// current one: Replace (the default) clones a new VM for it;
	// InPlaceIfPossible changes its CPUs and memory where it runs when
	// nothing else changed (live with hot-add on, else by a power cycle
	// within maxUnavailable, drained through the pre-delete hooks first)
	// and replaces it otherwise; InPlaceOnly never replaces a VM for its
	// template: what cannot change in place holds the rollout, and the
	// RolledOut condition names the VM and why.
	// +kubebuilder:validation:Enum=Replace;InPlaceIfPossible;InPlaceOnly
	// +optional
	Method string `json:"method,omitempty"`
}

// ZoneStatus is a set's replicas in one zone.
type ZoneStatus struct {
	// Zone is the zone's name; empty for replicas in no zone.
	Zone string `json:"zone"`
	// Replicas counts live replicas in the zone.
	Replicas int32 `json:"replicas"`
	// ReadyReplicas counts the zone's ready replicas.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// AvailableReplicas counts the zone's available replicas.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`
	// BackoffUntil, when set, is when new replicas may go to the zone
	// again: a clone there failed.
	// +optional
	BackoffUntil *metav1.Time `json:"backoffUntil,omitempty"`
	// Unreachable reports that the vCenter holding the zone does not
	// answer: its replicas are unknown, neither ready nor gone, and none
	// is deleted or replaced by name until it answers.
	// +optional
	Unreachable bool `json:"unreachable,omitempty"`
	// LastSeen, for an unreachable zone, is when its vCenter last
	// answered; unset if it never did since the operator started.
	// +optional
	LastSeen *metav1.Time `json:"lastSeen,omitempty"`
}

// VirtualMachineReplicaSetStatus is what the set observed.
type VirtualMachineReplicaSetStatus struct {
	// Replicas counts live replicas (not being deleted). The counters
	// shown by kubectl default to 0, so that a status patch may leave a
	// zero out and kubectl still prints it.
	// +kubebuilder:default=0
	Replicas int32 `json:"replicas"`
	// FullyLabeledReplicas counts live replicas with the template's labels.
	// +optional
	FullyLabeledReplicas int32 `json:"fullyLabeledReplicas,omitempty"`
	// ReadyReplicas counts live, ready replicas.
	// +kubebuilder:default=0
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// AvailableReplicas counts replicas ready for at least minReadySeconds.
	// +kubebuilder:default=0
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`
	// TerminatingReplicas counts replicas being deleted.
	// +optional
	TerminatingReplicas int32 `json:"terminatingReplicas,omitempty"`
	// UnknownReplicas counts live replicas whose state is unknown: their
	// vCenter does not answer (the zone is unreachable), or it cannot read
	// them (their datastore is gone, their host disconnected: the
	// VirtualMachine says Ready Unknown, VMUnreadable). They count in
	// replicas, never in readyReplicas or availableReplicas, and none is
	// replaced or deleted until vCenter reads it again.
	// +kubebuilder:default=0
	// +optional
	UnknownReplicas int32 `json:"unknownReplicas,omitempty"`
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Selector is spec.selector in string form, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`
	// Zones, when spec.zones is set, counts the replicas per zone: each
	// listed zone in order, then any other zone a replica is in.
	// +listType=atomic
	// +optional
	Zones []ZoneStatus `json:"zones,omitempty"`
	// Spread is zones on one line, "zone-a=2 zone-b=1", for kubectl's
	// -o wide.
	// +optional
	Spread string `json:"spread,omitempty"`
	// UpdatedReplicas counts live replicas made from the current
	// template.
	// +kubebuilder:default=0
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
	// UpdatedAvailableReplicas counts those of them that are available.
	// +optional
	UpdatedAvailableReplicas int32 `json:"updatedAvailableReplicas,omitempty"`
	// UpdateRevision is the current template's revision, which VMs made
	// from it carry in the label replicakit.io/revision.
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`
	// CurrentRevision is the revision the set is rolling from: the older
	// revision most of its VMs carry, or updateRevision once none does.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`
	// UnhealthyReplicas counts live VMs that are unhealthy: failed, past
	// their start-up window without having been healthy, or failing their
	// health check after being healthy (a VM reset and in its start-up
	// window is a remediation in flight, not counted). Set only with
	// spec.remediation: kubectl's UNHEALTHY shows <none> without it.
	// +optional
	UnhealthyReplicas *int32 `json:"unhealthyReplicas,omitempty"`
	// RemediationsAllowed is how many more VMs may be remediated now,
	// with spec.remediation: zero while too many are unhealthy, while
	// remediation backs off or is suspended, or while the cap in flight is
	// reached. The RemediationAllowed condition says which.
	// +optional
	RemediationsAllowed *int32 `json:"remediationsAllowed,omitempty"`
	// PreparingReplicas counts live VMs that prepare to leave, waiting on
	// their pre-delete hooks. Set only with spec.lifecycle: kubectl's
	// PREPARING shows <none> without it.
	// +optional
	PreparingReplicas *int32 `json:"preparingReplicas,omitempty"`
	// Conditions: ReplicaFailure, ScalingUp, ScalingDown, Ready,
	// RolledOut, ZonesBalanced when spec.zones is set,
	// RemediationAllowed when spec.remediation is, and Draining when
	// spec.lifecycle is.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// VirtualMachineReplicaSet keeps spec.replicas VirtualMachines made from
// spec.template.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=vmrs;vmreplicaset
// +kubebuilder:printcolumn:name="REPLICAS",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="READY",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="UP-TO-DATE",type=integer,JSONPath=`.status.updatedReplicas`
// +kubebuilder:printcolumn:name="UNHEALTHY",type=integer,JSONPath=`.status.unhealthyReplicas`
// +kubebuilder:printcolumn:name="PREPARING",type=integer,JSONPath=`.status.preparingReplicas`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="DESIRED",type=integer,JSONPath=`.spec.replicas`,priority=1
// +kubebuilder:printcolumn:name="AVAILABLE",type=integer,JSONPath=`.status.availableReplicas`,priority=1
// +kubebuilder:printcolumn:name="UNKNOWN",type=integer,JSONPath=`.status.unknownReplicas`,priority=1
// +kubebuilder:printcolumn:name="POLICY",type=string,JSONPath=`.spec.deletePolicy`,priority=1
// +kubebuilder:printcolumn:name="ZONES",type=string,JSONPath=`.status.spread`,priority=1
type VirtualMachineReplicaSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the set asks for.
	Spec VirtualMachineReplicaSetSpec `json:"spec"`
	// Status is what the set observed.
	Status VirtualMachineReplicaSetStatus `json:"status,omitempty"`
}

// VirtualMachineReplicaSetList is a list of VirtualMachineReplicaSets.
//
// +kubebuilder:object:root=true
type VirtualMachineReplicaSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the sets.
	Items []VirtualMachineReplicaSet `json:"items"`
}
