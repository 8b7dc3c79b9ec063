package kube_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/replicakit/replicakit/replicaset/kube"
)

// What a hook's controller reads of a child: whether it prepares to
// leave, and which hooks still hold it. It does its work, then removes
// its own annotation (a patch setting it to null) to release the child.
func ExamplePreDeleteHooks() {
	const domain = "example.com"
	child := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-x7k2p", Annotations: map[string]string{
		kube.AnnotationPreparing:                          "2026-12-05T10:00:00Z",
		kube.PreDeleteHookAnnotation(domain, "drain"):     "web",
		kube.PreDeleteHookAnnotation(domain, "lb-remove"): "web",
	}}}
	_, leaving := child.Annotations[kube.AnnotationPreparing]
	fmt.Println("leaving:", leaving)
	fmt.Println("held by:", kube.PreDeleteHooks(child, domain))
	fmt.Println("our hook:", kube.PreDeleteHookAnnotation(domain, "drain"))
	// Output:
	// leaving: true
	// held by: [drain lb-remove]
	// our hook: pre-delete.hook.example.com/drain
}

// A new child starts with its launch gates closed; the gate's controller
// opens one by removing its annotation once the workload serves.
func ExampleLaunchGates() {
	const domain = "example.com"
	child := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-x7k2p", Annotations: map[string]string{
		kube.LaunchGateAnnotation(domain, "lb-registered"): "web",
	}}}
	fmt.Println("closed:", kube.LaunchGates(child, domain))
	delete(child.Annotations, kube.LaunchGateAnnotation(domain, "lb-registered"))
	fmt.Println("closed:", kube.LaunchGates(child, domain))
	// Output:
	// closed: [lb-registered]
	// closed: []
}
