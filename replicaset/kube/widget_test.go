package kube_test

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/widgetkind"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// widgets adapts the test Widget kind (unstructured) as owner of
// ConfigMaps: the smallest real owner/child pair.
type widgets struct{}

var _ kube.Adapter[*unstructured.Unstructured, *corev1.ConfigMap] = widgets{}

func (widgets) Spec(w *unstructured.Unstructured) (kube.Spec, error) { return widgetkind.Spec(w) }

func (widgets) NewChild(w *unstructured.Unstructured) (*corev1.ConfigMap, error) {
	l, err := widgetkind.TemplateLabels(w)
	if err != nil {
		return nil, err
	}
	a, err := widgetkind.TemplateAnnotations(w)
	if err != nil {
		return nil, err
	}
	data, err := widgetkind.TemplateData(w)
	if err != nil {
		return nil, err
	}
	if data == nil {
		data = map[string]string{}
	}
	data["owner"] = w.GetName()
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Labels: l, Annotations: a}, Data: data}, nil
}

// Describe: a ConfigMap is running and ready from its creation, unless
// its data says phase: Failed (the tests' stand-in for a platform that
// failed to make the replica).
func (widgets) Describe(c *corev1.ConfigMap, r *replicaset.Replica) {
	if c.Data["phase"] == "Failed" {
		r.Phase = replicaset.PhaseFailed
		return
	}
	r.Phase, r.Ready, r.ReadySince = replicaset.PhaseRunning, true, c.CreationTimestamp.Time
}

func (widgets) SetStatus(w *unstructured.Unstructured, s kube.Status) { widgetkind.SetStatus(w, s) }

func emptyWidget() *unstructured.Unstructured { return widgetkind.Empty() }

// newWidgetReconciler returns the reconciler under test.
func newWidgetReconciler() *kube.Reconciler[*unstructured.Unstructured, *corev1.ConfigMap] {
	return &kube.Reconciler[*unstructured.Unstructured, *corev1.ConfigMap]{
		Adapter:   widgets{},
		OwnerKind: testenv.WidgetGVK,
	}
}

// widget returns a Widget selecting app=name with the given replicas.
func widget(ns, name string, replicas int64) *unstructured.Unstructured {
	return widgetkind.New(ns, name, replicas)
}
