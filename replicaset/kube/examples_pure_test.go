package kube_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/replicakit/replicakit/replicaset/kube"
)

// A child's metadata as the planner sees it, annotations included; a cost
// that is not an integer is reported and counted as 0.
func ExampleReplicaOf() {
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "web-zmdmm",
		UID:  "uid-1",
		Annotations: map[string]string{
			kube.AnnotationDeleteFirst:  "true",
			kube.AnnotationDeletionCost: "cheap",
		},
	}}
	r, err := kube.ReplicaOf(child)
	fmt.Println(r.Name, r.MarkedForDeletion, r.DeletionCost)
	fmt.Println(err)
	// Output:
	// web-zmdmm true 0
	// child web-zmdmm: annotation replicakit.io/deletion-cost="cheap" is not an integer; using 0
}

// zonedPoolAdapter is the package example's Adapter for WorkerPools,
// with zones: embedding kube.PodZones makes it a kube.Zoner for Pods.
type zonedPoolAdapter struct {
	kube.PodZones
	poolAdapter
}

// The compile-time check: a Zoner of another signature would not be found.
var _ kube.Zoner[*corev1.Pod] = zonedPoolAdapter{}

// An Adapter for Pods embeds PodZones to be a Zoner: a Pod is put in its
// zone by a node selector on the zone label, which the scheduler acts on,
// and labelled with it. An orphan labelled with a zone, and no node
// selector, is counted in that zone.
func ExamplePodZones() {
	var a kube.Adapter[*WorkerPool, *corev1.Pod] = zonedPoolAdapter{}
	z, ok := a.(kube.Zoner[*corev1.Pod])
	fmt.Println("a Zoner:", ok)

	pod := &corev1.Pod{}
	z.SetZone(pod, "eu-west-1b")
	fmt.Println(z.Zone(pod), pod.Spec.NodeSelector, pod.Labels)

	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{kube.ZoneLabel: "eu-west-1a"}}}
	fmt.Printf("%q %q\n", z.Zone(orphan), z.Zone(&corev1.Pod{}))
	// Output:
	// a Zoner: true
	// eu-west-1b map[topology.kubernetes.io/zone:eu-west-1b] map[topology.kubernetes.io/zone:eu-west-1b]
	// "eu-west-1a" ""
}
