package kube_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// Wire the reconciler into an operator's manager for its own kinds: here a
// Widget (any owner kind with replicas, a selector and a template) that
// keeps ConfigMaps. The Adapter (widgets, in this package's tests) is the
// only kind-specific code: it reads the spec, builds a child from the
// template, tells whether a child is ready, and writes status.
func Example() {
	// The operator's manager; this example never starts it.
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:6443"}, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	r := &kube.Reconciler[*unstructured.Unstructured, *corev1.ConfigMap]{
		Adapter: widgets{},
		EmptyOwner: func() *unstructured.Unstructured {
			w := &unstructured.Unstructured{}
			w.SetGroupVersionKind(testenv.WidgetGVK)
			return w
		},
		EmptyChild:     func() *corev1.ConfigMap { return &corev1.ConfigMap{} },
		EmptyChildList: func() client.ObjectList { return &corev1.ConfigMapList{} },
	}
	// Client, APIReader, Scheme, events and metrics come from the manager.
	if err := r.SetupWithManager(mgr, "widget-replicas"); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("registered: the manager now keeps every Widget's ConfigMaps at spec.replicas")
	// Output:
	// registered: the manager now keeps every Widget's ConfigMaps at spec.replicas
}
