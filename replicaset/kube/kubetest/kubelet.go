package kubetest

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MarkPodReady plays the kubelet for one Pod: it reads the Pod, sets its
// phase to Running and its Initialized, ContainersReady and Ready
// conditions True, with a running, started and ready status for each of
// its containers, and writes that through the status subresource, as a
// kubelet reports a Pod whose containers started and passed their
// readiness probes. A write that conflicts with another is read and done
// again. pod names the Pod and is left holding what the API server stored.
//
// A test without kubelets (envtest, or the fake client of NewFakeClient)
// decides this way when each Pod becomes ready, so that a rollout waits
// for exactly the moments the test makes. The spec is left alone: the Pod
// is given no node, so the API server still deletes it at once (a Pod on
// no node has no grace period), as such a test needs.
func MarkPodReady(ctx context.Context, c client.Client, pod *corev1.Pod) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return fmt.Errorf("kubetest: read Pod %s: %w", pod.Name, err)
		}
		setReady(pod, metav1.NewTime(time.Now().Truncate(time.Second)))
		if err := c.Status().Update(ctx, pod); err != nil {
			return fmt.Errorf("kubetest: mark Pod %s ready: %w", pod.Name, err)
		}
		return nil
	})
}

// MarkPodsReady plays the kubelet for every Pod owner controls (by its
// controller reference, in owner's namespace) that is not ready and not
// being deleted, as MarkPodReady does for one, and returns their names in
// order. owner must have its UID: read it, or create it, first.
func MarkPodsReady(ctx context.Context, c client.Client, owner client.Object) ([]string, error) {
	if owner.GetUID() == "" {
		return nil, fmt.Errorf("kubetest: owner %s has no UID; create or read it first", owner.GetName())
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(owner.GetNamespace())); err != nil {
		return nil, fmt.Errorf("kubetest: list Pods of %s: %w", owner.GetName(), err)
	}
	var marked []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if ref := metav1.GetControllerOfNoCopy(p); ref == nil || ref.UID != owner.GetUID() || p.DeletionTimestamp != nil || PodReady(p) {
			continue
		}
		if err := MarkPodReady(ctx, c, p); err != nil {
			return marked, err
		}
		marked = append(marked, p.Name)
	}
	slices.Sort(marked)
	return marked, nil
}

// PodReady reports whether pod's Ready condition is True. It is the
// readiness WatchBounds takes for Pods.
func PodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// setReady makes pod's status what a kubelet reports for a running, ready
// Pod, at now.
func setReady(pod *corev1.Pod, now metav1.Time) {
	st := &pod.Status
	st.Phase = corev1.PodRunning
	if st.StartTime == nil {
		st.StartTime = &now
	}
	for _, t := range []corev1.PodConditionType{corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		i := slices.IndexFunc(st.Conditions, func(c corev1.PodCondition) bool { return c.Type == t })
		if i < 0 {
			st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t})
			i = len(st.Conditions) - 1
		}
		if c := &st.Conditions[i]; c.Status != corev1.ConditionTrue {
			c.Status, c.LastTransitionTime, c.Reason, c.Message = corev1.ConditionTrue, now, "", ""
		}
	}
	started := true
	st.ContainerStatuses = st.ContainerStatuses[:0]
	for _, ctr := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: ctr.Name, Image: ctr.Image, Ready: true, Started: &started,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
}
