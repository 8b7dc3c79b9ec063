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
// phase to Running and its PodScheduled, Initialized, ContainersReady and
// Ready conditions True, with a running, started and ready status for each
// of its containers, and writes that through the status subresource, as a
// kubelet reports a Pod whose containers started and passed their
// readiness probes. A write that conflicts with another is read and done
// again. pod names the Pod and is left holding what the API server stored.
//
// As a kubelet does, it also sets status.observedGeneration (and each
// condition's) to the Pod's metadata.generation, and each container's
// status resources (Resources and AllocatedResources) to what its spec
// asks, which the API server needs before it resizes the Pod in place. A
// container keeps its restart count and last termination state, so a Pod
// made ready after MarkPodCrashLooping still shows its restarts; to play
// a container restarted on a new image, use MarkPodUpdated.
//
// A test without kubelets (envtest, or the fake client of NewFakeClient)
// decides this way when each Pod becomes ready, so that a rollout waits
// for exactly the moments the test makes. The spec is left alone: the Pod
// is given no node, so the API server still deletes it at once (a Pod on
// no node has no grace period), as such a test needs.
func MarkPodReady(ctx context.Context, c client.Client, pod *corev1.Pod) error {
	return writeStatus(ctx, c, pod, "ready", setReady)
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

// writeStatus reads pod afresh, lets set change its status as of now (in
// whole seconds, as the API server keeps times), and writes the status
// back through the status subresource, reading and setting again after a
// conflict. state names the change in errors ("mark Pod web-0 ready").
func writeStatus(ctx context.Context, c client.Client, pod *corev1.Pod, state string, set func(pod *corev1.Pod, now metav1.Time)) error {
	key := client.ObjectKeyFromObject(pod)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		// A JSON read into a Pod keeps what the answer leaves out, such as
		// container statuses the stored Pod no longer has: read afresh.
		var fresh corev1.Pod
		if err := c.Get(ctx, key, &fresh); err != nil {
			return fmt.Errorf("kubetest: read Pod %s: %w", key.Name, err)
		}
		*pod = fresh
		set(pod, metav1.NewTime(time.Now().Truncate(time.Second)))
		if err := c.Status().Update(ctx, pod); err != nil {
			return fmt.Errorf("kubetest: mark Pod %s %s: %w", key.Name, state, err)
		}
		return nil
	})
}

// setReady makes pod's status what a kubelet reports for a running, ready
// Pod, at now.
func setReady(pod *corev1.Pod, now metav1.Time) {
	setStarted(pod, corev1.PodRunning, now)
	pod.Status.ContainerStatuses = containerStatuses(pod, func(ctr *corev1.Container, last corev1.ContainerStatus) corev1.ContainerStatus {
		return runningStatus(ctr, last, true, now)
	})
	setContainersReady(pod, now, "")
}

// setStarted gives pod the phase and the parts of a status that a kubelet
// writes for any Pod it has admitted, at now: a start time, the PodScheduled
// and Initialized conditions True (kubetest plays no init containers), and
// the generation it observed.
func setStarted(pod *corev1.Pod, phase corev1.PodPhase, now metav1.Time) {
	st := &pod.Status
	st.Phase = phase
	st.ObservedGeneration = pod.Generation
	if st.StartTime == nil {
		st.StartTime = &now
	}
	setCondition(pod, corev1.PodScheduled, corev1.ConditionTrue, "", "", now)
	setCondition(pod, corev1.PodInitialized, corev1.ConditionTrue, "", "", now)
}

// setContainersReady sets pod's ContainersReady and Ready conditions from
// its container statuses, as a kubelet does: True when every container is
// ready, or else False with reason ContainersNotReady and a message naming
// the unready containers in spec order, followed by why when why is not
// empty.
func setContainersReady(pod *corev1.Pod, now metav1.Time, why string) {
	var unready []string
	for _, cs := range pod.Status.ContainerStatuses {
		if !cs.Ready {
			unready = append(unready, cs.Name)
		}
	}
	status, reason, message := corev1.ConditionTrue, "", ""
	if len(unready) > 0 {
		status, reason, message = corev1.ConditionFalse, reasonContainersNotReady, fmt.Sprintf("containers with unready status: %s", unready)
		if why != "" {
			message += ": " + why
		}
	}
	setCondition(pod, corev1.ContainersReady, status, reason, message, now)
	setCondition(pod, corev1.PodReady, status, reason, message, now)
}

// setCondition sets pod's condition t to status, reason and message,
// observed at the Pod's generation; its transition time moves to now only
// when its status changes. A missing condition is added at the end.
func setCondition(pod *corev1.Pod, t corev1.PodConditionType, status corev1.ConditionStatus, reason, message string, now metav1.Time) {
	st := &pod.Status
	i := slices.IndexFunc(st.Conditions, func(c corev1.PodCondition) bool { return c.Type == t })
	if i < 0 {
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t})
		i = len(st.Conditions) - 1
	}
	c := &st.Conditions[i]
	if c.Status != status {
		c.Status, c.LastTransitionTime = status, now
	}
	c.Reason, c.Message, c.ObservedGeneration = reason, message, pod.Generation
}

// containerStatuses returns a status for each of pod's containers, in spec
// order, made by status from the container and its last status (the zero
// status when it had none).
func containerStatuses(pod *corev1.Pod, status func(ctr *corev1.Container, last corev1.ContainerStatus) corev1.ContainerStatus) []corev1.ContainerStatus {
	out := make([]corev1.ContainerStatus, 0, len(pod.Spec.Containers))
	for i := range pod.Spec.Containers {
		ctr := &pod.Spec.Containers[i]
		var last corev1.ContainerStatus
		if j := slices.IndexFunc(pod.Status.ContainerStatuses, func(cs corev1.ContainerStatus) bool { return cs.Name == ctr.Name }); j >= 0 {
			last = pod.Status.ContainerStatuses[j]
		}
		out = append(out, status(ctr, last))
	}
	return out
}

// runningStatus is the status of ctr running its spec's image and started,
// ready or not, after last: it keeps last's restart count and last
// termination state, and its start time when it was already running the
// same image (else it started at now).
func runningStatus(ctr *corev1.Container, last corev1.ContainerStatus, ready bool, now metav1.Time) corev1.ContainerStatus {
	startedAt := now
	if last.State.Running != nil && last.Image == ctr.Image {
		startedAt = last.State.Running.StartedAt
	}
	started := true
	cs := corev1.ContainerStatus{
		Name: ctr.Name, Image: ctr.Image, Ready: ready, Started: &started,
		RestartCount: last.RestartCount, LastTerminationState: last.LastTerminationState,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: startedAt}},
	}
	setResources(&cs, ctr)
	return cs
}

// setResources sets cs's resources to what ctr's spec asks, as a kubelet
// reports for a container it has created once any resize is done:
// Resources its requests and limits (empty, but set, when it asks for
// none), AllocatedResources its requests. The API server refuses to
// resize a Pod whose first running container has no status Resources, as
// one on a node without in-place resize.
func setResources(cs *corev1.ContainerStatus, ctr *corev1.Container) {
	r := ctr.Resources
	cs.Resources = &corev1.ResourceRequirements{Requests: r.Requests.DeepCopy(), Limits: r.Limits.DeepCopy()}
	cs.AllocatedResources = r.Requests.DeepCopy()
}
