package kubetest_test

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/replicaset/kube/kubetest"
)

// An importer's operator: a Pool keeps spec.replicas Pods made from its
// template, and rolls them (one surge Pod at a time, none unavailable)
// when the template changes. The types are what kubebuilder would generate, with the deep
// copies written by hand; controller-gen's CRD for them (testdata/, used by
// the envtest example) keeps spec and status whole
// (x-kubernetes-preserve-unknown-fields), so that spec.template, a
// PodTemplateSpec, needs no schema here.

// Pool is the owner kind.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
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
	return kube.Spec{Replicas: int(p.Spec.Replicas), Selector: p.Spec.Selector, DeletePolicy: "HighestOrdinal",
		Rollout: &replicaset.Strategy{}}, nil
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
		Scheme:  s,
		Adapter: poolAdapter{},
		Naming:  kube.OrdinalNames,
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

// Run an operator's passes one at a time on a fake client: the first
// creates the Pool's Pods, the next, seeing them, reports status; after a
// scale-down, a pass deletes the highest ordinals, and the next reports
// it. In an importer's test, each step is a check on the client's objects.
func ExampleNewFakeClient() {
	ctx := context.Background()
	r := newReconciler(newScheme())
	pool := newPool("pool", 3)
	c, err := kubetest.NewFakeClient(r, "pool", pool)
	if err != nil {
		fmt.Println(err)
		return
	}
	pass := func() {
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pool)}); err != nil {
			fmt.Println(err)
		}
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace("default")); err != nil {
			fmt.Println(err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
			fmt.Println(err)
		}
		var names []string
		for _, p := range pods.Items {
			names = append(names, p.Name)
		}
		fmt.Printf("Pods %v, status.replicas %d\n", names, pool.Status.Replicas)
	}
	pass()
	pass()

	pool.Spec.Replicas = 1
	if err := c.Update(ctx, pool); err != nil {
		fmt.Println(err)
		return
	}
	pass()
	pass()
	// Output:
	// Pods [pool-0 pool-1 pool-2], status.replicas 0
	// Pods [pool-0 pool-1 pool-2], status.replicas 3
	// Pods [pool-0], status.replicas 3
	// Pods [pool-0], status.replicas 1
}
