package kubetest_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/replicakit/replicakit/replicaset/kube/kubetest"
)

// Play a Pod whose image cannot be pulled: the Pool's operator counts it
// and never sees it ready, until the test plays the pull succeeding.
// MarkPodPending with "Unschedulable" plays instead a Pod no node takes.
func ExampleMarkPodPending() {
	ctx := context.Background()
	r := newReconciler(newScheme())
	pool := newPool("pool", 1)
	c, err := kubetest.NewFakeClient(r, "pool", pool)
	if err != nil {
		fmt.Println(err)
		return
	}
	pass := passer(ctx, r, c, pool)
	pass() // creates pool-0

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pool-0"}}
	if err := kubetest.MarkPodPending(ctx, c, pod, "ImagePullBackOff"); err != nil {
		fmt.Println(err)
		return
	}
	w := pod.Status.ContainerStatuses[0].State.Waiting
	fmt.Println(pod.Status.Phase, w.Reason, w.Message)
	pass()
	fmt.Printf("%d of %d ready\n", pool.Status.ReadyReplicas, pool.Status.Replicas)

	if err := kubetest.MarkPodReady(ctx, c, pod); err != nil {
		fmt.Println(err)
		return
	}
	pass()
	fmt.Printf("%d of %d ready\n", pool.Status.ReadyReplicas, pool.Status.Replicas)
	// Output:
	// Pending ImagePullBackOff Back-off pulling image "busybox"
	// 0 of 1 ready
	// 1 of 1 ready
}

// Play a container that crashes twice, as a healing test needs: each call
// is one more crash, and the Pod stays Running but not ready, backing off
// before the next restart. MarkPodReady then plays it coming back, its
// restarts kept.
func ExampleMarkPodCrashLooping() {
	ctx := context.Background()
	r := newReconciler(newScheme())
	pool := newPool("pool", 1)
	c, err := kubetest.NewFakeClient(r, "pool", pool)
	if err != nil {
		fmt.Println(err)
		return
	}
	passer(ctx, r, c, pool)() // creates pool-0

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pool-0"}}
	for range 2 {
		if err := kubetest.MarkPodCrashLooping(ctx, c, pod); err != nil {
			fmt.Println(err)
			return
		}
	}
	cs := pod.Status.ContainerStatuses[0]
	fmt.Println(pod.Status.Phase, cs.State.Waiting.Reason, "restarts:", cs.RestartCount, "ready:", kubetest.PodReady(pod))
	fmt.Println("last:", cs.LastTerminationState.Terminated.Reason, "exit code", cs.LastTerminationState.Terminated.ExitCode)

	if err := kubetest.MarkPodReady(ctx, c, pod); err != nil {
		fmt.Println(err)
		return
	}
	cs = pod.Status.ContainerStatuses[0]
	fmt.Println(pod.Status.Phase, "restarts:", cs.RestartCount, "ready:", kubetest.PodReady(pod))
	// Output:
	// Running CrashLoopBackOff restarts: 2 ready: false
	// last: Error exit code 1
	// Running restarts: 2 ready: true
}

// Play the kubelet after an in-place update: the Pod's image changed in
// its spec (on an API server, by a patch; resources, through the resize
// subresource), and MarkPodUpdated restarts the container on it, reports
// what the spec asks, and observes the Pod's generation.
func ExampleMarkPodUpdated() {
	ctx := context.Background()
	r := newReconciler(newScheme())
	pool := newPool("pool", 1)
	c, err := kubetest.NewFakeClient(r, "pool", pool)
	if err != nil {
		fmt.Println(err)
		return
	}
	passer(ctx, r, c, pool)() // creates pool-0

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pool-0"}}
	if err := kubetest.MarkPodReady(ctx, c, pod); err != nil {
		fmt.Println(err)
		return
	}
	pod.Spec.Containers[0].Image = "busybox:1.37"
	pod.Generation++ // the fake client does not raise it; an API server does
	if err := c.Update(ctx, pod); err != nil {
		fmt.Println(err)
		return
	}
	if err := kubetest.MarkPodUpdated(ctx, c, pod); err != nil {
		fmt.Println(err)
		return
	}
	cs := pod.Status.ContainerStatuses[0]
	fmt.Println(cs.Image, "restarts:", cs.RestartCount, "ready:", kubetest.PodReady(pod), "observed generation:", pod.Status.ObservedGeneration)
	// Output:
	// busybox:1.37 restarts: 1 ready: true observed generation: 2
}

// Play a Pod whose readiness probe fails: it stays Running, its
// containers running but not ready, and the Ready condition says so as a
// kubelet does, with the given reason after the kubelet's message.
func ExampleMarkPodNotReady() {
	ctx := context.Background()
	r := newReconciler(newScheme())
	pool := newPool("pool", 1)
	c, err := kubetest.NewFakeClient(r, "pool", pool)
	if err != nil {
		fmt.Println(err)
		return
	}
	passer(ctx, r, c, pool)() // creates pool-0

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pool-0"}}
	if err := kubetest.MarkPodNotReady(ctx, c, pod, "Readiness probe failed: HTTP probe failed with statuscode: 503"); err != nil {
		fmt.Println(err)
		return
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady {
			fmt.Println(pod.Status.Phase, cond.Status, cond.Reason)
			fmt.Println(cond.Message)
		}
	}
	// Output:
	// Running False ContainersNotReady
	// containers with unready status: [worker]: Readiness probe failed: HTTP probe failed with statuscode: 503
}
