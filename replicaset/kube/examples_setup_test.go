package kube_test

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/replicakit/replicakit/replicaset/kube"
)

// Register the binding's metrics with a registry of your own (a Reconciler
// whose Metrics is nil registers them with controller-runtime's registry in
// SetupWithManager). A second Reconciler registering with the same registry
// shares them; a registry where another collector already holds one of
// their names with other labels refuses them.
func ExampleNewMetrics() {
	reg := prometheus.NewRegistry()
	first, err := kube.NewMetrics(reg)
	if err != nil {
		fmt.Println(err)
		return
	}
	pools := &kube.Reconciler[*WorkerPool, *corev1.Pod]{Metrics: first}
	second, err := kube.NewMetrics(reg)
	fmt.Println("a second reconciler shares them:", err == nil)
	batch := &kube.Reconciler[*WorkerPool, *corev1.Pod]{Metrics: second}
	fmt.Println("both record into reg:", pools.Metrics != nil && batch.Metrics != nil)

	taken := prometheus.NewRegistry()
	taken.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{
		Name: "replicakit_children_created_total", Help: "Another program's counter.",
	}))
	_, err = kube.NewMetrics(taken)
	fmt.Println("a registry where a name is taken refuses them:", err != nil)
	// Output:
	// a second reconciler shares them: true
	// both record into reg: true
	// a registry where a name is taken refuses them: true
}

// An Adapter's SetStatus merges the binding's conditions into the owner's:
// a condition whose status did not change keeps its transition time.
func ExampleStatus_MergeConditions() {
	then := metav1.NewTime(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	existing := []metav1.Condition{
		{Type: kube.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: then},
	}
	s := kube.Status{Conditions: []metav1.Condition{
		{Type: kube.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready"},
		{Type: kube.ConditionScalingUp, Status: metav1.ConditionFalse, Reason: "Scaled"},
	}}
	s.MergeConditions(&existing)
	for _, c := range existing {
		fmt.Println(c.Type, c.Status, c.LastTransitionTime.Equal(&then))
	}
	// Output:
	// Ready True true
	// ScalingUp False false
}
