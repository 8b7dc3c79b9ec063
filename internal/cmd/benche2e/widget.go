package main

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// podWidgets adapts the Widget kind as the owner of Pods, the child kind the
// ReplicaSet controller makes, so both sides write the same objects.
type podWidgets struct{}

var _ kube.Adapter[*unstructured.Unstructured, *corev1.Pod] = podWidgets{}

func (podWidgets) Spec(w *unstructured.Unstructured) (kube.Spec, error) {
	replicas, _, err := unstructured.NestedInt64(w.Object, "spec", "replicas")
	if err != nil || replicas < 0 {
		return kube.Spec{}, fmt.Errorf("spec.replicas %d: %v", replicas, err)
	}
	s := kube.Spec{Replicas: int(replicas), Selector: &metav1.LabelSelector{}}
	sel, _, _ := unstructured.NestedMap(w.Object, "spec", "selector")
	return s, runtime.DefaultUnstructuredConverter.FromUnstructured(sel, s.Selector)
}

func (podWidgets) NewChild(w *unstructured.Unstructured) (*corev1.Pod, error) {
	l, _, err := unstructured.NestedStringMap(w.Object, "spec", "template", "metadata", "labels")
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: podSpec()}, err
}

// Observe: without a kubelet a Pod stays pending.
func (podWidgets) Observe(p *corev1.Pod, r *replicaset.Replica) {
	r.Phase = replicaset.PhasePending
	if p.Status.Phase == corev1.PodRunning {
		r.Phase = replicaset.PhaseRunning
	}
}

func (podWidgets) SetStatus(w *unstructured.Unstructured, s kube.Status) {
	_ = unstructured.SetNestedField(w.Object, map[string]any{
		"replicas": int64(s.Replicas), "readyReplicas": int64(s.ReadyReplicas),
		"observedGeneration": s.ObservedGeneration, "selector": s.Selector,
	}, "status")
}

// podSpec is the Pod both controllers make: one container, no token.
func podSpec() corev1.PodSpec {
	return corev1.PodSpec{
		AutomountServiceAccountToken: ptr.To(false),
		Containers:                   []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
	}
}

func emptyWidget() *unstructured.Unstructured {
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(testenv.WidgetGVK)
	return w
}

func newWidgetReconciler() *kube.Reconciler[*unstructured.Unstructured, *corev1.Pod] {
	return &kube.Reconciler[*unstructured.Unstructured, *corev1.Pod]{
		Adapter:        podWidgets{},
		EmptyOwner:     emptyWidget,
		EmptyChild:     func() *corev1.Pod { return &corev1.Pod{} },
		EmptyChildList: func() client.ObjectList { return &corev1.PodList{} },
	}
}

// widget returns a Widget of replicas Pods labelled app=name.
func widget(ns, name string, replicas int64) *unstructured.Unstructured {
	w := emptyWidget()
	w.SetNamespace(ns)
	w.SetName(name)
	w.Object["spec"] = map[string]any{
		"replicas": replicas,
		"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
		"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": name}}},
	}
	return w
}
