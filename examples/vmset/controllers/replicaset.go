package controllers

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// ReplicaSetAdapter tells replicakit's binding about VirtualMachineReplicaSet
// (the owner) and VirtualMachine (the child).
type ReplicaSetAdapter struct{}

var _ kube.Adapter[*vmv1.VirtualMachineReplicaSet, *vmv1.VirtualMachine] = ReplicaSetAdapter{}

// Spec implements kube.Adapter.
func (ReplicaSetAdapter) Spec(s *vmv1.VirtualMachineReplicaSet) (kube.Spec, error) {
	replicas := 1
	if s.Spec.Replicas != nil {
		replicas = int(*s.Spec.Replicas)
	}
	return kube.Spec{
		Replicas:     replicas,
		Selector:     s.Spec.Selector.ToMeta(),
		DeletePolicy: s.Spec.DeletePolicy,
		MinReady:     time.Duration(s.Spec.MinReadySeconds) * time.Second,
		Paused:       s.Spec.Paused,
	}, nil
}

// NewChild implements kube.Adapter.
func (ReplicaSetAdapter) NewChild(s *vmv1.VirtualMachineReplicaSet) (*vmv1.VirtualMachine, error) {
	return &vmv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      copyMap(s.Spec.Template.Metadata.Labels),
			Annotations: copyMap(s.Spec.Template.Metadata.Annotations),
		},
		Spec: *s.Spec.Template.Spec.DeepCopy(),
	}, nil
}

// Describe implements kube.Adapter: a VirtualMachine is pending until vCenter
// has it, ready while its Ready condition is true.
func (ReplicaSetAdapter) Describe(vm *vmv1.VirtualMachine, r *replicaset.Replica) {
	ready := meta.FindStatusCondition(vm.Status.Conditions, "Ready")
	switch {
	case vm.Status.InstanceUUID == "":
		r.Phase = replicaset.PhasePending
	default:
		r.Phase = replicaset.PhaseRunning
	}
	if ready != nil && ready.Status == metav1.ConditionTrue {
		r.Ready, r.ReadySince = true, ready.LastTransitionTime.Time
	}
}

// SetStatus implements kube.Adapter.
func (ReplicaSetAdapter) SetStatus(s *vmv1.VirtualMachineReplicaSet, st kube.Status) {
	s.Status.Replicas = st.Replicas
	s.Status.FullyLabeledReplicas = st.FullyLabeledReplicas
	s.Status.ReadyReplicas = st.ReadyReplicas
	s.Status.AvailableReplicas = st.AvailableReplicas
	s.Status.TerminatingReplicas = st.TerminatingReplicas
	s.Status.ObservedGeneration = st.ObservedGeneration
	s.Status.Selector = st.Selector
	st.MergeConditions(&s.Status.Conditions)
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// The replica-set controller's permissions: it reads sets and writes their
// status, and creates, adopts, releases and deletes their VirtualMachines.
// Setting blockOwnerDeletion on a VirtualMachine needs update on its owner's
// finalizers.
//
// +kubebuilder:rbac:groups=vm.replicakit.io,resources=virtualmachinereplicasets,verbs=get;list;watch
// +kubebuilder:rbac:groups=vm.replicakit.io,resources=virtualmachinereplicasets/status,verbs=patch
// +kubebuilder:rbac:groups=vm.replicakit.io,resources=virtualmachinereplicasets/finalizers,verbs=update
// +kubebuilder:rbac:groups=vm.replicakit.io,resources=virtualmachines,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// NewReplicaSetReconciler returns the VirtualMachineReplicaSet reconciler.
func NewReplicaSetReconciler() *kube.Reconciler[*vmv1.VirtualMachineReplicaSet, *vmv1.VirtualMachine] {
	return &kube.Reconciler[*vmv1.VirtualMachineReplicaSet, *vmv1.VirtualMachine]{
		Adapter:        ReplicaSetAdapter{},
		EmptyOwner:     func() *vmv1.VirtualMachineReplicaSet { return &vmv1.VirtualMachineReplicaSet{} },
		EmptyChild:     func() *vmv1.VirtualMachine { return &vmv1.VirtualMachine{} },
		EmptyChildList: func() client.ObjectList { return &vmv1.VirtualMachineList{} },
		EmptyOwnerList: func() client.ObjectList { return &vmv1.VirtualMachineReplicaSetList{} },
		// Each child becomes a clone: one read of the set per creating
		// pass is cheap beside cloning a VM for a set being deleted.
		ConfirmOwnerBeforeCreate: true,
	}
}

// Setup registers both controllers with mgr, the VirtualMachine one using p.
func Setup(mgr ctrl.Manager, p *VirtualMachineReconciler) error {
	if err := p.SetupWithManager(mgr); err != nil {
		return err
	}
	return NewReplicaSetReconciler().SetupWithManager(mgr, "virtualmachinereplicaset")
}
