package kubetest_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// An importer's operator, as the tests of this package see it: a Pool keeps
// spec.replicas Pods made from its template. The types are what kubebuilder
// would generate (deep copies written by hand), and testdata holds the CRD
// controller-gen would write for them.

// Pool is the owner kind.
type Pool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PoolSpec   `json:"spec"`
	Status            PoolStatus `json:"status,omitempty"`
}

// PoolSpec is what a Pool asks for.
type PoolSpec struct {
	Replicas int32                  `json:"replicas"`
	Selector *metav1.LabelSelector  `json:"selector"`
	Template corev1.PodTemplateSpec `json:"template"`
}

// PoolStatus is what the binding reports.
type PoolStatus struct {
	Replicas      int32              `json:"replicas"`
	ReadyReplicas int32              `json:"readyReplicas"`
	Selector      string             `json:"selector,omitempty"`
	Conditions    []metav1.Condition `json:"conditions,omitempty"`
}

// PoolList is a list of Pools.
type PoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Pool `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (p *Pool) DeepCopyObject() runtime.Object {
	out := *p
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.Selector = p.Spec.Selector.DeepCopy()
	p.Spec.Template.DeepCopyInto(&out.Spec.Template)
	out.Status.Conditions = slices.Clone(p.Status.Conditions)
	return &out
}

// DeepCopyObject implements runtime.Object.
func (l *PoolList) DeepCopyObject() runtime.Object {
	out := *l
	out.Items = make([]Pool, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*Pool)
	}
	return &out
}

var poolGV = schema.GroupVersion{Group: "example.com", Version: "v1"}

// newScheme knows Pods and Pools.
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	s.AddKnownTypes(poolGV, &Pool{}, &PoolList{})
	metav1.AddToGroupVersion(s, poolGV)
	return s
}

// poolAdapter is the Pool-specific code the tests check.
type poolAdapter struct{}

var _ kube.Adapter[*Pool, *corev1.Pod] = poolAdapter{}

func (poolAdapter) Spec(p *Pool) (kube.Spec, error) {
	if p.Spec.Replicas < 0 {
		return kube.Spec{}, fmt.Errorf("spec.replicas %d is negative", p.Spec.Replicas)
	}
	return kube.Spec{Replicas: int(p.Spec.Replicas), Selector: p.Spec.Selector, DeletePolicy: "HighestOrdinal"}, nil
}

func (poolAdapter) NewChild(p *Pool) (*corev1.Pod, error) {
	t := p.Spec.Template.DeepCopy()
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: t.Labels, Annotations: t.Annotations}, Spec: t.Spec}, nil
}

func (poolAdapter) Describe(pod *corev1.Pod, r *replicaset.Replica) {
	r.Phase = replicaset.PhasePending
	if pod.Status.Phase == corev1.PodRunning {
		r.Phase = replicaset.PhaseRunning
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			r.Ready, r.ReadySince = true, c.LastTransitionTime.Time
		}
	}
}

func (poolAdapter) SetStatus(p *Pool, s kube.Status) {
	p.Status.Replicas, p.Status.ReadyReplicas, p.Status.Selector = s.Replicas, s.ReadyReplicas, s.Selector
	s.MergeConditions(&p.Status.Conditions)
}

// newReconciler is the operator's Reconciler: Pods named pool-0, pool-1, …
// and removed highest ordinal first.
func newReconciler(s *runtime.Scheme) *kube.Reconciler[*Pool, *corev1.Pod] {
	return &kube.Reconciler[*Pool, *corev1.Pod]{
		Scheme:         s,
		Adapter:        poolAdapter{},
		EmptyOwner:     func() *Pool { return &Pool{} },
		EmptyChild:     func() *corev1.Pod { return &corev1.Pod{} },
		EmptyChildList: func() client.ObjectList { return &corev1.PodList{} },
		EmptyOwnerList: func() client.ObjectList { return &PoolList{} },
		Naming:         kube.OrdinalNames,
	}
}

// newPool is a Pool of n Pods running one container.
func newPool(name string, n int32) *Pool {
	labels := map[string]string{"pool": name}
	return &Pool{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: PoolSpec{
			Replicas: n,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "worker", Image: "busybox"}}},
			},
		},
	}
}

// PodNames maps the names of the Pods in the default namespace to their
// UIDs.
type PodNames map[string]string

func (p *PodNames) read(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	*p = PodNames{}
	for _, pod := range pods.Items {
		(*p)[pod.Name] = string(pod.UID)
	}
}
