package kube_test

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// An operator's own kind: a WorkerPool keeps spec.replicas worker Pods made
// from its template. Its types are what kubebuilder would generate, with the
// deep copies written by hand so the example stands alone.

// WorkerPool is the owner.
type WorkerPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WorkerPoolSpec   `json:"spec"`
	Status            WorkerPoolStatus `json:"status,omitempty"`
}

// WorkerPoolSpec is what a WorkerPool asks for.
type WorkerPoolSpec struct {
	Replicas        int32                  `json:"replicas"`
	Selector        *metav1.LabelSelector  `json:"selector"`
	Template        corev1.PodTemplateSpec `json:"template"`
	DeletePolicy    string                 `json:"deletePolicy,omitempty"`
	MinReadySeconds int32                  `json:"minReadySeconds,omitempty"`
	Paused          bool                   `json:"paused,omitempty"`
}

// WorkerPoolStatus is what the binding reports. Give the counts
// +kubebuilder:default=0 in the CRD: status is written as a merge patch.
type WorkerPoolStatus struct {
	Replicas           int32              `json:"replicas"`
	ReadyReplicas      int32              `json:"readyReplicas"`
	AvailableReplicas  int32              `json:"availableReplicas"`
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Selector           string             `json:"selector,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// WorkerPoolList is a list of WorkerPools.
type WorkerPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkerPool `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (w *WorkerPool) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.Selector = w.Spec.Selector.DeepCopy()
	w.Spec.Template.DeepCopyInto(&out.Spec.Template)
	out.Status.Conditions = slices.Clone(w.Status.Conditions)
	return &out
}

// DeepCopyObject implements runtime.Object.
func (l *WorkerPoolList) DeepCopyObject() runtime.Object {
	out := *l
	out.Items = make([]WorkerPool, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*WorkerPool)
	}
	return &out
}

var poolGV = schema.GroupVersion{Group: "example.com", Version: "v1"}

// poolAdapter is the whole of the WorkerPool-specific code: it reads the
// spec, builds a Pod from the template, tells whether a Pod is ready, and
// writes the status.
type poolAdapter struct{}

var _ kube.Adapter[*WorkerPool, *corev1.Pod] = poolAdapter{}

func (poolAdapter) Spec(p *WorkerPool) (kube.Spec, error) {
	if p.Spec.Replicas < 0 {
		return kube.Spec{}, fmt.Errorf("spec.replicas %d is negative", p.Spec.Replicas)
	}
	return kube.Spec{
		Replicas:     int(p.Spec.Replicas),
		Selector:     p.Spec.Selector,
		DeletePolicy: p.Spec.DeletePolicy,
		MinReady:     time.Duration(p.Spec.MinReadySeconds) * time.Second,
		Paused:       p.Spec.Paused,
	}, nil
}

func (poolAdapter) NewChild(p *WorkerPool) (*corev1.Pod, error) {
	t := p.Spec.Template.DeepCopy()
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: t.Labels, Annotations: t.Annotations}, Spec: t.Spec}, nil
}

// Describe reads the Pod (the cache's object: never modify it).
func (poolAdapter) Describe(pod *corev1.Pod, r *replicaset.Replica) {
	switch pod.Status.Phase {
	case corev1.PodRunning, corev1.PodSucceeded:
		r.Phase = replicaset.PhaseRunning
	case corev1.PodFailed:
		r.Phase = replicaset.PhaseFailed
	default:
		r.Phase = replicaset.PhasePending
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			r.Ready, r.ReadySince = true, c.LastTransitionTime.Time
		}
	}
}

func (poolAdapter) SetStatus(p *WorkerPool, s kube.Status) {
	p.Status.Replicas, p.Status.ReadyReplicas = s.Replicas, s.ReadyReplicas
	p.Status.AvailableReplicas, p.Status.ObservedGeneration = s.AvailableReplicas, s.ObservedGeneration
	p.Status.Selector = s.Selector
	s.MergeConditions(&p.Status.Conditions)
}

// The permissions the binding needs, as kubebuilder markers to copy into
// your controller's package (controller-gen rbac turns them into a Role).
// An owner with Spec.Remediation or Spec.Lifecycle also needs patch on
// its own kind (workerpools: get;list;watch;patch), for its history
// annotation and its finalizer:
//
// +kubebuilder:rbac:groups=example.com,resources=workerpools,verbs=get;list;watch
// +kubebuilder:rbac:groups=example.com,resources=workerpools/status,verbs=patch
// +kubebuilder:rbac:groups=example.com,resources=workerpools/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Keep every WorkerPool's Pods at spec.replicas: an Adapter for the two
// kinds, a Reconciler over them, and SetupWithManager. The manager is your
// operator's; this one has a fixed REST mapping so that the example runs
// without an API server (yours discovers it).
func Example() {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	scheme.AddKnownTypes(poolGV, &WorkerPool{}, &WorkerPoolList{})
	metav1.AddToGroupVersion(scheme, poolGV)

	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:6443"}, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		MapperProvider: func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
			m := meta.NewDefaultRESTMapper(nil)
			m.Add(poolGV.WithKind("WorkerPool"), meta.RESTScopeNamespace)
			m.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
			return m, nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	r := &kube.Reconciler[*WorkerPool, *corev1.Pod]{
		Adapter: poolAdapter{},
		Naming:  kube.OrdinalNames, // pool-0, pool-1, …
	}
	// Client, Cache, APIReader, Scheme, events and metrics come from the
	// manager; so do the indexes the reconciler reads through.
	if err := r.SetupWithManager(mgr, "workerpool"); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("registered: mgr.Start keeps every WorkerPool's Pods at spec.replicas")
	// Output:
	// registered: mgr.Start keeps every WorkerPool's Pods at spec.replicas
}
