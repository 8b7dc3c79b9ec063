package kube_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/replicaset/kube/kubetest"
)

// TestPodHealth reads Pods as kubetest's kubelet leaves them: ready is
// healthy; not ready, crash-looping, stuck on an image or unschedulable
// is not, with the reason a Kubernetes user knows; a failed Pod gives its
// status reason.
func TestPodHealth(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		desc   string
		mark   func(client.Client, *corev1.Pod) error
		ok     bool
		reason string
	}{
		{"created, no kubelet yet", func(client.Client, *corev1.Pod) error { return nil }, false, "NotReady"},
		{"ready", func(c client.Client, p *corev1.Pod) error { return kubetest.MarkPodReady(ctx, c, p) }, true, ""},
		{"not ready", func(c client.Client, p *corev1.Pod) error { return kubetest.MarkPodNotReady(ctx, c, p, "probe failed") }, false, "NotReady"},
		{"crash-looping", func(c client.Client, p *corev1.Pod) error { return kubetest.MarkPodCrashLooping(ctx, c, p) }, false, "CrashLoopBackOff"},
		{"image pull", func(c client.Client, p *corev1.Pod) error {
			return kubetest.MarkPodPending(ctx, c, p, "ImagePullBackOff")
		}, false, "ImagePullBackOff"},
		{"bad image name", func(c client.Client, p *corev1.Pod) error {
			return kubetest.MarkPodPending(ctx, c, p, "InvalidImageName")
		}, false, "InvalidImageName"},
		{"unschedulable", func(c client.Client, p *corev1.Pod) error { return kubetest.MarkPodPending(ctx, c, p, "Unschedulable") }, false, "Unschedulable"},
		{"container creating", func(c client.Client, p *corev1.Pod) error {
			return kubetest.MarkPodPending(ctx, c, p, "ContainerCreating")
		}, false, "NotReady"},
		{"ready again", func(c client.Client, p *corev1.Pod) error {
			if err := kubetest.MarkPodCrashLooping(ctx, c, p); err != nil {
				return err
			}
			return kubetest.MarkPodReady(ctx, c, p)
		}, true, ""},
		{"evicted", func(c client.Client, p *corev1.Pod) error {
			p.Status.Phase, p.Status.Reason = corev1.PodFailed, "Evicted"
			return c.Status().Update(ctx, p)
		}, false, "Evicted"},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:v1"}}}}
		c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(pod).WithStatusSubresource(pod).Build()
		if err := tt.mark(c, pod); err != nil {
			t.Fatalf("%s: %v", tt.desc, err)
		}
		var stored corev1.Pod
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), &stored); err != nil {
			t.Fatal(err)
		}
		if ok, reason := (kube.PodHealth{}).CheckHealth(&stored); ok != tt.ok || reason != tt.reason {
			t.Errorf("%s: CheckHealth = %v %q, want %v %q", tt.desc, ok, reason, tt.ok, tt.reason)
		}
	}
}

// ExamplePodHealth embeds PodHealth in an Adapter of Pods, which makes
// it a HealthChecker: with Spec.Remediation, a Pod crash-looping or
// stuck Pending is remediated once its window ends.
func ExamplePodHealth() {
	type poolAdapter struct {
		kube.PodHealth
		kube.PodZones
	}
	var a any = poolAdapter{}
	_, checks := a.(kube.HealthChecker[*corev1.Pod])
	pod := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
		{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}}}
	ok, reason := poolAdapter{}.CheckHealth(pod)
	fmt.Println(checks, ok, reason)
	// Output: true false ImagePullBackOff
}

// TestPodHealth_StartedAt: a Pod held by its scheduling gates has not
// started; one past them has, at a time the binding takes (its creation,
// or the first pass that sees it ungated).
func TestPodHealth_StartedAt(t *testing.T) {
	gated := &corev1.Pod{Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: "kueue.x-k8s.io/admission"}}}}
	condition := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated}}}}
	free := &corev1.Pod{}
	for _, tt := range []struct {
		desc    string
		pod     *corev1.Pod
		started bool
	}{{"gates in its spec", gated, false}, {"SchedulingGated", condition, false}, {"ungated", free, true}} {
		if at, started := (kube.PodHealth{}).StartedAt(tt.pod); started != tt.started || !at.IsZero() {
			t.Errorf("%s: StartedAt = %v, %v; want a zero time, %v", tt.desc, at, started, tt.started)
		}
	}
}
