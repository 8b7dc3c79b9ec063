package kubetest_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/replicakit/replicakit/replicaset/kube/kubetest"
)

// unscheduled is the status of a new Pod the scheduler did not place, for
// reason, with message.
func unscheduled(reason, message string) corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: reason, Message: message,
		LastTransitionTime: callTime, ObservedGeneration: 1,
	}}}
}

// waiting is the status of a new Pod placed on a node whose kubelet cannot
// start faultPod's containers, both waiting for reason with the messages
// given.
func waiting(reason, worker, sidecar string) corev1.PodStatus {
	notStarted := false
	status := func(name, image, message string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Image: image, Started: &notStarted,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}
	}
	return corev1.PodStatus{
		Phase: corev1.PodPending, StartTime: &callTime, ObservedGeneration: 1,
		Conditions: conditions(callTime, callTime, corev1.ConditionFalse, "ContainersNotReady", notReady, 1),
		ContainerStatuses: []corev1.ContainerStatus{
			status("worker", "busybox:1.36", worker),
			status("sidecar", "registry.example/sidecar:v1", sidecar),
		},
	}
}

// testPending: each reason gives the scheduler's or the kubelet's status of
// a new Pod stuck Pending, and MarkPodReady then starts it, PodScheduled
// True.
func testPending(t *testing.T, c client.Client) {
	for _, tc := range []struct {
		pod, reason string
		want        corev1.PodStatus
	}{
		{"unschedulable", "Unschedulable", unscheduled("Unschedulable", "no nodes available to schedule pods")},
		{"gated", "SchedulingGated", unscheduled("SchedulingGated", "Scheduling is blocked due to non-empty scheduling gates")},
		{"backoff", "ImagePullBackOff", waiting("ImagePullBackOff",
			`Back-off pulling image "busybox:1.36"`, `Back-off pulling image "registry.example/sidecar:v1"`)},
		{"pull", "ErrImagePull", waiting("ErrImagePull",
			`rpc error: code = NotFound desc = failed to pull and unpack image "busybox:1.36": not found`,
			`rpc error: code = NotFound desc = failed to pull and unpack image "registry.example/sidecar:v1": not found`)},
		{"invalid", "InvalidImageName", waiting("InvalidImageName",
			`Failed to apply default image tag "busybox:1.36": couldn't parse image name "busybox:1.36": invalid reference format`,
			`Failed to apply default image tag "registry.example/sidecar:v1": couldn't parse image name "registry.example/sidecar:v1": invalid reference format`)},
		{"config", "CreateContainerConfigError", waiting("CreateContainerConfigError",
			`kubetest plays CreateContainerConfigError for container "worker"`,
			`kubetest plays CreateContainerConfigError for container "sidecar"`)},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			ctx, since := t.Context(), time.Now()
			pod := create(t, c, faultPod("pending-"+tc.pod))
			call(t, c, pod, since, "MarkPodPending", func(p *corev1.Pod) error { return kubetest.MarkPodPending(ctx, c, p, tc.reason) }, tc.want)
			if err := kubetest.MarkPodReady(ctx, c, pod); err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodScheduled })
			if !kubetest.PodReady(pod) || pod.Status.Phase != corev1.PodRunning || i < 0 || pod.Status.Conditions[i].Status != corev1.ConditionTrue {
				t.Errorf("after MarkPodReady: phase %s, conditions %+v; want Running, Ready and PodScheduled True", pod.Status.Phase, pod.Status.Conditions)
			}
		})
	}
}

// TestMarkPodPending_NoReason: an empty reason is an error and writes
// nothing.
func TestMarkPodPending_NoReason(t *testing.T) {
	pod := faultPod("pending")
	c := fake.NewClientBuilder().WithScheme(newScheme()).WithObjects(pod.DeepCopy()).Build()
	if err := kubetest.MarkPodPending(t.Context(), c, pod, ""); err == nil {
		t.Error(`MarkPodPending(pod, "") = nil, want an error`)
	}
	var got corev1.Pod
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(pod), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(corev1.PodStatus{}, got.Status); diff != "" {
		t.Errorf(`MarkPodPending(pod, "") wrote a status (-want +got):\n%s`, diff)
	}
}
