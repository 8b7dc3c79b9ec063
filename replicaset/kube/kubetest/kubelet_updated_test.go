package kubetest_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset/kube/kubetest"
)

// testUpdated: a running Pod's worker gets a new image and a larger CPU
// request in place (b.change); MarkPodUpdated restarts worker on the new
// image, reports the new resources and the generation the change made,
// drops the resize condition, and leaves sidecar running as it was. A
// second call, with nothing new in the spec, restarts nothing; nor does a
// call after the image of a container that never started changed.
func testUpdated(t *testing.T, c client.Client, b faultBackend) {
	ctx, since, change := t.Context(), time.Now(), b.change
	pod := create(t, c, faultPod("updated"))
	seedRunning(t, c, pod, corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue, LastTransitionTime: longAgo})
	if err := change(ctx, c, pod, "busybox:1.37", "200m"); err != nil {
		t.Fatal(err)
	}
	gen, worker := pod.Generation, pod.Spec.Containers[0]
	if gen != b.changed || worker.Image != "busybox:1.37" || worker.Resources.Requests.Cpu().Cmp(resource.MustParse("200m")) != 0 {
		t.Fatalf("after the change: generation %d, worker on %s asking %v; want generation %d, busybox:1.37 and cpu 200m",
			gen, worker.Image, worker.Resources.Requests, b.changed)
	}
	want := corev1.PodStatus{
		Phase: corev1.PodRunning, StartTime: &longAgo, ObservedGeneration: gen,
		Conditions: conditions(longAgo, longAgo, corev1.ConditionTrue, "", "", gen),
		ContainerStatuses: []corev1.ContainerStatus{
			withLast(running("worker", "busybox:1.37", callTime, true, 4, workerResources("200m")),
				&corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: longAgo, FinishedAt: callTime}),
			running("sidecar", "registry.example/sidecar:v1", longAgo, true, 0, &corev1.ResourceRequirements{}),
		},
	}
	updated := func(p *corev1.Pod) error { return kubetest.MarkPodUpdated(ctx, c, p) }
	call(t, c, pod, since, "MarkPodUpdated", updated, want)
	call(t, c, pod, since, "MarkPodUpdated again", updated, want)

	// A container that never started (its image not found) is not
	// restarted when its image is fixed: it starts, with no restarts.
	pulling := create(t, c, faultPod("updated-pulling"))
	if err := kubetest.MarkPodPending(ctx, c, pulling, "ErrImagePull"); err != nil {
		t.Fatal(err)
	}
	if err := change(ctx, c, pulling, "busybox:1.37", "200m"); err != nil {
		t.Fatal(err)
	}
	call(t, c, pulling, since, "MarkPodUpdated after ErrImagePull", updated, corev1.PodStatus{
		Phase: corev1.PodRunning, StartTime: &callTime, ObservedGeneration: pulling.Generation,
		Conditions: conditions(callTime, callTime, corev1.ConditionTrue, "", "", pulling.Generation),
		ContainerStatuses: []corev1.ContainerStatus{
			running("worker", "busybox:1.37", callTime, true, 0, workerResources("200m")),
			running("sidecar", "registry.example/sidecar:v1", callTime, true, 0, &corev1.ResourceRequirements{}),
		},
	})
}
