package kube_test

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// widgets adapts the test Widget kind (unstructured) as owner of
// ConfigMaps: the smallest real owner/child pair.
type widgets struct{}

var _ kube.Adapter[*unstructured.Unstructured, *corev1.ConfigMap] = widgets{}

func (widgets) Spec(w *unstructured.Unstructured) (kube.Spec, error) {
	var s kube.Spec
	replicas, _, err := unstructured.NestedInt64(w.Object, "spec", "replicas")
	if err != nil {
		return s, err
	}
	if replicas < 0 {
		return s, fmt.Errorf("spec.replicas %d is negative", replicas)
	}
	s.Replicas = int(replicas)
	if sel, ok, _ := unstructured.NestedMap(w.Object, "spec", "selector"); ok {
		s.Selector = &metav1.LabelSelector{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(sel, s.Selector); err != nil {
			return s, fmt.Errorf("spec.selector: %w", err)
		}
	}
	s.DeletePolicy, _, _ = unstructured.NestedString(w.Object, "spec", "deletePolicy")
	s.Paused, _, _ = unstructured.NestedBool(w.Object, "spec", "paused")
	s.ReplaceDeleting, _, _ = unstructured.NestedBool(w.Object, "spec", "replaceDeleting")
	minReady, _, _ := unstructured.NestedInt64(w.Object, "spec", "minReadySeconds")
	s.MinReady = time.Duration(minReady) * time.Second
	return s, nil
}

func (widgets) NewChild(w *unstructured.Unstructured) (*corev1.ConfigMap, error) {
	l, _, err := unstructured.NestedStringMap(w.Object, "spec", "template", "metadata", "labels")
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Labels: l}, Data: map[string]string{"owner": w.GetName()}}, nil
}

// Observe: a ConfigMap is running and ready from its creation.
func (widgets) Observe(c *corev1.ConfigMap, r *replicaset.Replica) {
	r.Phase, r.Ready, r.ReadySince = replicaset.PhaseRunning, true, c.CreationTimestamp.Time
}

func (widgets) SetStatus(w *unstructured.Unstructured, s kube.Status) {
	var conds []metav1.Condition
	if raw, ok, _ := unstructured.NestedSlice(w.Object, "status", "conditions"); ok {
		for _, c := range raw {
			var cond metav1.Condition
			if m, ok := c.(map[string]any); ok && runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cond) == nil {
				conds = append(conds, cond)
			}
		}
	}
	s.MergeConditions(&conds)
	raw := make([]any, len(conds))
	for i := range conds {
		raw[i], _ = runtime.DefaultUnstructuredConverter.ToUnstructured(&conds[i])
	}
	status := map[string]any{
		"replicas": int64(s.Replicas), "fullyLabeledReplicas": int64(s.FullyLabeledReplicas),
		"readyReplicas": int64(s.ReadyReplicas), "availableReplicas": int64(s.AvailableReplicas),
		"terminatingReplicas": int64(s.TerminatingReplicas), "observedGeneration": s.ObservedGeneration,
		"selector": s.Selector, "conditions": raw,
	}
	_ = unstructured.SetNestedField(w.Object, status, "status")
}

func emptyWidget() *unstructured.Unstructured {
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(testenv.WidgetGVK)
	return w
}

// newWidgetReconciler returns the reconciler under test.
func newWidgetReconciler() *kube.Reconciler[*unstructured.Unstructured, *corev1.ConfigMap] {
	return &kube.Reconciler[*unstructured.Unstructured, *corev1.ConfigMap]{
		Adapter:        widgets{},
		EmptyOwner:     emptyWidget,
		EmptyChild:     func() *corev1.ConfigMap { return &corev1.ConfigMap{} },
		EmptyChildList: func() client.ObjectList { return &corev1.ConfigMapList{} },
		EmptyOwnerList: func() client.ObjectList {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(testenv.WidgetGVK.GroupVersion().WithKind("WidgetList"))
			return l
		},
	}
}

// widget returns a Widget selecting app=name with the given replicas.
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
