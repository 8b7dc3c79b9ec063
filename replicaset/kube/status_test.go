package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestStatusJSON: the status alone, for typed and unstructured objects,
// and "{}" for an object without one.
func TestStatusJSON(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "w", "managedFields": []any{map[string]any{"manager": "x"}}},
		"status":   map[string]any{"replicas": int64(2)},
	}}
	tests := []struct {
		name string
		obj  client.Object
		want string
	}{
		{"unstructured", u, `{"replicas":2}`},
		{"unstructured without status", &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "w"}}}, `{}`},
		{"typed", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}, `{"phase":"Running"}`},
		{"typed without status", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"status": "x"}}, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := statusJSON(tt.obj)
			if err != nil || string(got) != tt.want {
				t.Errorf("statusJSON(%s) = %s, %v; want %s", tt.name, got, err, tt.want)
			}
		})
	}
}
