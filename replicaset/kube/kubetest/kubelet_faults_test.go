package kubetest_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/replicakit/replicakit/replicaset/kube/kubetest"
)

// The times a wanted status names: the moment of the call under test
// (any time from its start to its end matches it), and a moment long
// before, when a seeded Pod started.
var (
	callTime = metav1.NewTime(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
	longAgo  = metav1.NewTime(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
)

// workerResources is what the container worker of faultPod asks.
func workerResources(cpu string) *corev1.ResourceRequirements {
	return &corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
}

// faultPod is a Pod in namespace default with two containers: worker,
// which asks for resources, and sidecar, which asks for none.
func faultPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "worker", Image: "busybox:1.36", Resources: *workerResources("100m")},
			{Name: "sidecar", Image: "registry.example/sidecar:v1"},
		}}}
}

// faultBackend is a client the kubelet is played on, and how a Pod's
// image and CPU request change in place there.
type faultBackend struct {
	name  string
	start func(t *testing.T) client.Client
	// change sets the image and the CPU request of pod's container worker
	// as an in-place update does, and leaves pod holding what was stored:
	// generation changed, from 1.
	change  func(ctx context.Context, c client.Client, pod *corev1.Pod, image, cpu string) error
	changed int64
}

var faultBackends = []faultBackend{
	{
		name: "fake",
		start: func(t *testing.T) client.Client {
			c, err := kubetest.NewFakeClient(newReconciler(newScheme()), "pool")
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
		// The fake client keeps any spec and never raises the generation.
		change: func(ctx context.Context, c client.Client, pod *corev1.Pod, image, cpu string) error {
			pod.Spec.Containers[0].Image = image
			pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
			pod.Generation++
			return c.Update(ctx, pod)
		},
		changed: 2,
	},
	{
		name:  "envtest",
		start: startKubeletEnvtest,
		// The image through a patch, the resources through the resize
		// subresource; the API server raises the generation for each.
		change: func(ctx context.Context, c client.Client, pod *corev1.Pod, image, cpu string) error {
			patch := client.MergeFrom(pod.DeepCopy())
			pod.Spec.Containers[0].Image = image
			if err := c.Patch(ctx, pod, patch); err != nil {
				return err
			}
			pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
			return c.SubResource("resize").Update(ctx, pod)
		},
		changed: 3,
	},
}

// startKubeletEnvtest starts a kube-apiserver and etcd from
// KUBEBUILDER_ASSETS for t, or skips t without them, and returns a client
// of it.
func startKubeletEnvtest(t *testing.T) client.Client {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		if os.Getenv("REPLICAKIT_REQUIRE_ENVTEST") == "1" {
			t.Fatal("KUBEBUILDER_ASSETS is not set (make test sets it to bin/)")
		}
		t.Skip("KUBEBUILDER_ASSETS is not set: no kube-apiserver and etcd to test on")
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("envtest stop: %v", err)
		}
	})
	c, err := client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestKubeletFaults plays each fault on the fake client of NewFakeClient
// and on a real API server, and compares the status stored there, read
// back, with what a kubelet (or the scheduler) writes.
func TestKubeletFaults(t *testing.T) {
	for _, b := range faultBackends {
		t.Run(b.name, func(t *testing.T) {
			c := b.start(t)
			t.Run("NotReady", func(t *testing.T) { testNotReady(t, c) })
			t.Run("CrashLoopingTwice", func(t *testing.T) { testCrashLoopingTwice(t, c) })
			t.Run("Pending", func(t *testing.T) { testPending(t, c) })
			t.Run("Updated", func(t *testing.T) { testUpdated(t, c, b) })
		})
	}
}

// call runs mark on pod, reads pod back from c, and checks that the
// status read back is want, with want's callTime standing for any moment
// from since (when the test began) to the end of the call, and that mark
// left pod holding it.
func call(t *testing.T, c client.Client, pod *corev1.Pod, since time.Time, what string, mark func(*corev1.Pod) error, want corev1.PodStatus) *corev1.Pod {
	t.Helper()
	if err := mark(pod); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	got := &corev1.Pod{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(pod), got); err != nil {
		t.Fatal(err)
	}
	opt := timesAs(since.Truncate(time.Second), time.Now())
	if diff := cmp.Diff(want, got.Status, opt); diff != "" {
		t.Errorf("%s: stored status (-want +got):\n%s", what, diff)
	}
	if diff := cmp.Diff(got.Status, pod.Status, opt); diff != "" {
		t.Errorf("%s: the Pod it was given holds (-stored +held):\n%s", what, diff)
	}
	return got
}

// timesAs compares times as text: callTime and any time from start to
// end as "now", others in RFC 3339. The API server adds the QoS class,
// which the fake client does not: it is not compared.
func timesAs(start, end time.Time) cmp.Option {
	text := func(t metav1.Time) string {
		switch {
		case t.IsZero():
			return "zero"
		case t.Equal(&callTime) || !t.Time.Before(start) && !t.Time.After(end):
			return "now"
		}
		return t.UTC().Format(time.RFC3339)
	}
	return cmp.Options{
		cmp.Transformer("time", text),
		cmp.Transformer("timeRef", func(t *metav1.Time) string {
			if t == nil {
				return "nil"
			}
			return text(*t)
		}),
		cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".QOSClass" }, cmp.Ignore()),
	}
}

// create makes pod on c and returns it as stored.
func create(t *testing.T, c client.Client, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	if err := c.Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// seedRunning writes, as a kubelet would have, that pod has run ready since
// longAgo, its worker restarted 3 times, with conditions extra added.
func seedRunning(t *testing.T, c client.Client, pod *corev1.Pod, extra ...corev1.PodCondition) {
	t.Helper()
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, StartTime: &longAgo, QOSClass: pod.Status.QOSClass,
		Conditions: append(conditions(longAgo, longAgo, corev1.ConditionTrue, "", "", 0), extra...),
		ContainerStatuses: []corev1.ContainerStatus{
			running("worker", "busybox:1.36", longAgo, true, 3, workerResources("100m")),
			running("sidecar", "registry.example/sidecar:v1", longAgo, true, 0, &corev1.ResourceRequirements{}),
		},
	}
	if err := c.Status().Update(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
}

// conditions are PodScheduled and Initialized True since scheduledAt, and
// ContainersReady and Ready ready with reason and message since readyAt,
// all observed at generation gen, as a kubelet lists them.
func conditions(scheduledAt, readyAt metav1.Time, ready corev1.ConditionStatus, reason, message string, gen int64) []corev1.PodCondition {
	return []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: scheduledAt, ObservedGeneration: gen},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: scheduledAt, ObservedGeneration: gen},
		{Type: corev1.ContainersReady, Status: ready, Reason: reason, Message: message, LastTransitionTime: readyAt, ObservedGeneration: gen},
		{Type: corev1.PodReady, Status: ready, Reason: reason, Message: message, LastTransitionTime: readyAt, ObservedGeneration: gen},
	}
}

// running is the status of a started container running image since at.
func running(name, image string, at metav1.Time, ready bool, restarts int32, res *corev1.ResourceRequirements) corev1.ContainerStatus {
	started := true
	return corev1.ContainerStatus{
		Name: name, Image: image, Ready: ready, Started: &started, RestartCount: restarts,
		State:     corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}},
		Resources: res, AllocatedResources: res.Requests,
	}
}

// withLast is cs with last state last.
func withLast(cs corev1.ContainerStatus, last *corev1.ContainerStateTerminated) corev1.ContainerStatus {
	cs.LastTerminationState = corev1.ContainerState{Terminated: last}
	return cs
}

const notReady = "containers with unready status: [worker sidecar]"

// testNotReady: a ready Pod's probe fails, and passes again; the Pod stays
// Running, its containers keep their start times and restarts.
func testNotReady(t *testing.T, c client.Client) {
	ctx, since := t.Context(), time.Now()
	pod := create(t, c, faultPod("not-ready"))
	seedRunning(t, c, pod)
	const probe = "Readiness probe failed: HTTP probe failed with statuscode: 503"
	got := call(t, c, pod, since, "MarkPodNotReady", func(p *corev1.Pod) error { return kubetest.MarkPodNotReady(ctx, c, p, probe) }, corev1.PodStatus{
		Phase: corev1.PodRunning, StartTime: &longAgo, ObservedGeneration: 1,
		Conditions: conditions(longAgo, callTime, corev1.ConditionFalse, "ContainersNotReady", notReady+": "+probe, 1),
		ContainerStatuses: []corev1.ContainerStatus{
			running("worker", "busybox:1.36", longAgo, false, 3, workerResources("100m")),
			running("sidecar", "registry.example/sidecar:v1", longAgo, false, 0, &corev1.ResourceRequirements{}),
		},
	})
	if kubetest.PodReady(got) {
		t.Error("PodReady after MarkPodNotReady = true, want false")
	}
	call(t, c, pod, since, "MarkPodReady", func(p *corev1.Pod) error { return kubetest.MarkPodReady(ctx, c, p) }, corev1.PodStatus{
		Phase: corev1.PodRunning, StartTime: &longAgo, ObservedGeneration: 1,
		Conditions: conditions(longAgo, callTime, corev1.ConditionTrue, "", "", 1),
		ContainerStatuses: []corev1.ContainerStatus{
			running("worker", "busybox:1.36", longAgo, true, 3, workerResources("100m")),
			running("sidecar", "registry.example/sidecar:v1", longAgo, true, 0, &corev1.ResourceRequirements{}),
		},
	})
}

// testCrashLoopingTwice: two crashes of a new Pod leave restart count 2
// and a 20s back-off; the Pod made ready again keeps both.
func testCrashLoopingTwice(t *testing.T, c client.Client) {
	ctx, since := t.Context(), time.Now()
	pod := create(t, c, faultPod("crash"))
	crash := func(p *corev1.Pod) error { return kubetest.MarkPodCrashLooping(ctx, c, p) }
	crashed := func(name, image string, restarts int32, backOff string, res *corev1.ResourceRequirements) corev1.ContainerStatus {
		started := false
		return corev1.ContainerStatus{
			Name: name, Image: image, Started: &started, RestartCount: restarts,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=crash_default(%s)", backOff, name, pod.UID)}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", StartedAt: callTime, FinishedAt: callTime}},
			Resources:            res, AllocatedResources: res.Requests,
		}
	}
	for i, backOff := range []string{"10s", "20s"} {
		restarts := int32(i + 1)
		call(t, c, pod, since, fmt.Sprintf("MarkPodCrashLooping #%d", restarts), crash, corev1.PodStatus{
			Phase: corev1.PodRunning, StartTime: &callTime, ObservedGeneration: 1,
			Conditions: conditions(callTime, callTime, corev1.ConditionFalse, "ContainersNotReady", notReady, 1),
			ContainerStatuses: []corev1.ContainerStatus{
				crashed("worker", "busybox:1.36", restarts, backOff, workerResources("100m")),
				crashed("sidecar", "registry.example/sidecar:v1", restarts, backOff, &corev1.ResourceRequirements{}),
			},
		})
	}
	if t.Failed() {
		return
	}
	last := &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", StartedAt: callTime, FinishedAt: callTime}
	call(t, c, pod, since, "MarkPodReady", func(p *corev1.Pod) error { return kubetest.MarkPodReady(ctx, c, p) }, corev1.PodStatus{
		Phase: corev1.PodRunning, StartTime: &callTime, ObservedGeneration: 1,
		Conditions: conditions(callTime, callTime, corev1.ConditionTrue, "", "", 1),
		ContainerStatuses: []corev1.ContainerStatus{
			withLast(running("worker", "busybox:1.36", callTime, true, 2, workerResources("100m")), last),
			withLast(running("sidecar", "registry.example/sidecar:v1", callTime, true, 2, &corev1.ResourceRequirements{}), last),
		},
	})
}
