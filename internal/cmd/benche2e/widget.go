package main

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/widgetkind"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// podWidgets adapts the Widget kind as the owner of Pods, the child kind the
// ReplicaSet controller makes, so both sides write the same objects.
type podWidgets struct{}

var _ kube.Adapter[*unstructured.Unstructured, *corev1.Pod] = podWidgets{}

func (podWidgets) Spec(w *unstructured.Unstructured) (kube.Spec, error) { return widgetkind.Spec(w) }

func (podWidgets) NewChild(w *unstructured.Unstructured) (*corev1.Pod, error) {
	l, err := widgetkind.TemplateLabels(w)
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: podSpec()}, err
}

// Describe: without a kubelet a Pod stays pending.
func (podWidgets) Describe(p *corev1.Pod, r *replicaset.Replica) {
	r.Phase = replicaset.PhasePending
	if p.Status.Phase == corev1.PodRunning {
		r.Phase = replicaset.PhaseRunning
	}
}

func (podWidgets) SetStatus(w *unstructured.Unstructured, s kube.Status) { widgetkind.SetStatus(w, s) }

// podSpec is the Pod both controllers make: one container, no token.
func podSpec() corev1.PodSpec {
	return corev1.PodSpec{
		AutomountServiceAccountToken: ptr.To(false),
		Containers:                   []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
	}
}

func newWidgetReconciler() *kube.Reconciler[*unstructured.Unstructured, *corev1.Pod] {
	return &kube.Reconciler[*unstructured.Unstructured, *corev1.Pod]{
		Adapter:   podWidgets{},
		OwnerKind: testenv.WidgetGVK,
	}
}
