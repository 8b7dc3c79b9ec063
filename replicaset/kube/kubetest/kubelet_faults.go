package kubetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The reasons a kubelet writes, which the faults below play.
const (
	// reasonContainersNotReady is the reason of the ContainersReady and
	// Ready conditions of a Pod with an unready container.
	reasonContainersNotReady = "ContainersNotReady"
	// reasonCrashLoopBackOff is a crashed container's waiting reason.
	reasonCrashLoopBackOff = "CrashLoopBackOff"
	// reasonError is the termination reason of a container that exited
	// with a code other than 0; reasonCompleted, with 0.
	reasonError     = "Error"
	reasonCompleted = "Completed"
)

// MarkPodNotReady plays the kubelet for a Pod whose readiness probe fails:
// the Pod stays Running (scheduled, initialized, its start time kept) and
// each of its containers running and started but not ready, keeping its
// restart count and, when it already ran the same image, its start time;
// the ContainersReady and Ready conditions are False with the reason a
// kubelet writes, ContainersNotReady, and its message ("containers with
// unready status: [worker]") followed by ": " and reason when reason is
// not empty. The given reason goes in the message, not the conditions'
// reason, so that code matching a kubelet's reasons sees the real one; it
// stands for what a kubelet reports only in an event, such as "Readiness
// probe failed: HTTP probe failed with statuscode: 503".
//
// It writes through the status subresource as MarkPodReady does, with its
// observed generations, and a later MarkPodReady makes the Pod ready
// again: together they play a Pod that stops and resumes passing its
// probe.
func MarkPodNotReady(ctx context.Context, c client.Client, pod *corev1.Pod, reason string) error {
	return writeStatus(ctx, c, pod, "not ready", func(pod *corev1.Pod, now metav1.Time) {
		setStarted(pod, corev1.PodRunning, now)
		pod.Status.ContainerStatuses = containerStatuses(pod, func(ctr *corev1.Container, last corev1.ContainerStatus) corev1.ContainerStatus {
			return runningStatus(ctr, last, false, now)
		})
		setContainersReady(pod, now, reason)
	})
}

// MarkPodCrashLooping plays one more crash of every container of a Pod, as
// a kubelet reports it while it backs off before the next restart: the Pod
// Running (scheduled, initialized), each container's restart count one
// higher than before, its state Waiting with reason CrashLoopBackOff and
// the kubelet's message ("back-off 20s restarting failed container=worker
// pod=web-0_default(uid)", the back-off doubling from 10s with each
// restart up to 5m0s), its last state Terminated with exit code 1 and
// reason Error (from when it last started until now), not ready and not
// started, and the ContainersReady and Ready conditions False with reason
// ContainersNotReady. The container status resources are what the spec
// asks, as for MarkPodReady.
//
// Called n times on a Pod, it leaves restart count n on each container;
// a later MarkPodReady plays the container that came back, keeping the
// count and the last termination. It writes through the status
// subresource as MarkPodReady does.
func MarkPodCrashLooping(ctx context.Context, c client.Client, pod *corev1.Pod) error {
	return writeStatus(ctx, c, pod, "crash-looping", setCrashLooping)
}

// setCrashLooping makes pod's status that of a Pod whose containers all
// crashed once more, at now.
func setCrashLooping(pod *corev1.Pod, now metav1.Time) {
	setStarted(pod, corev1.PodRunning, now)
	pod.Status.ContainerStatuses = containerStatuses(pod, func(ctr *corev1.Container, last corev1.ContainerStatus) corev1.ContainerStatus {
		began := now
		if last.State.Running != nil {
			began = last.State.Running.StartedAt
		}
		restarts := last.RestartCount + 1
		started := false
		cs := corev1.ContainerStatus{
			Name: ctr.Name, Image: ctr.Image, Started: &started, RestartCount: restarts,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: reasonCrashLoopBackOff,
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
					crashBackOff(restarts), ctr.Name, pod.Name, pod.Namespace, pod.UID),
			}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 1, Reason: reasonError, StartedAt: began, FinishedAt: now,
			}},
		}
		setResources(&cs, ctr)
		return cs
	})
	setContainersReady(pod, now, "")
}

// crashBackOff is the kubelet's back-off before restarting a container
// that has restarted restarts times: 10s, doubled at each restart after
// the first, at most 5m.
func crashBackOff(restarts int32) time.Duration {
	d := 10 * time.Second
	for i := int32(1); i < restarts && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

// errNoReason is MarkPodPending's error for an empty reason.
var errNoReason = errors.New("kubetest: MarkPodPending needs a reason, such as Unschedulable or ImagePullBackOff")

// MarkPodPending plays a Pod stuck Pending, for reason, as the scheduler
// or a kubelet reports it; reason is one of two kinds.
//
// Scheduler reasons: "Unschedulable" (corev1.PodReasonUnschedulable) and
// "SchedulingGated" (corev1.PodReasonSchedulingGated) play a Pod no node
// took: phase Pending, the PodScheduled condition False with that reason
// and the message the scheduler or the API server writes ("no nodes
// available to schedule pods"; "Scheduling is blocked due to non-empty
// scheduling gates"), and none of what a kubelet writes: no start time,
// no container statuses, no Initialized, ContainersReady or Ready
// condition. status.observedGeneration is left as it was, as the
// scheduler leaves it.
//
// Any other reason is a container's waiting reason from a kubelet that
// took the Pod but cannot start its containers: image reasons
// ("ImagePullBackOff", "ErrImagePull", "InvalidImageName", each with a
// kubelet's message naming the container's image), or others such as
// "CreateContainerConfigError" or "ContainerCreating" (with a message
// saying kubetest played it). Then the Pod is Pending with a start time,
// PodScheduled and Initialized True, each container Waiting with reason
// and its message, not ready and not started, with no status resources
// (it was never created), and ContainersReady and Ready False with reason
// ContainersNotReady, observed at the Pod's generation.
//
// Either way it writes through the status subresource as MarkPodReady
// does, and MarkPodReady later plays the Pod starting. An empty reason is
// an error and writes nothing. The Pod is given no node in either case:
// its spec is left alone.
func MarkPodPending(ctx context.Context, c client.Client, pod *corev1.Pod, reason string) error {
	if reason == "" {
		return errNoReason
	}
	return writeStatus(ctx, c, pod, "pending", func(pod *corev1.Pod, now metav1.Time) {
		switch reason {
		case corev1.PodReasonUnschedulable, corev1.PodReasonSchedulingGated:
			setUnscheduled(pod, reason, now)
		default:
			setWaiting(pod, reason, now)
		}
	})
}

// setUnscheduled makes pod's status that of a Pod the scheduler has not
// placed, for reason, at now.
func setUnscheduled(pod *corev1.Pod, reason string, now metav1.Time) {
	st := &pod.Status
	st.Phase, st.StartTime, st.ContainerStatuses = corev1.PodPending, nil, nil
	st.Conditions = slices.DeleteFunc(st.Conditions, func(c corev1.PodCondition) bool {
		switch c.Type {
		case corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady:
			return true
		}
		return false
	})
	message := "no nodes available to schedule pods"
	if reason == corev1.PodReasonSchedulingGated {
		message = "Scheduling is blocked due to non-empty scheduling gates"
	}
	setCondition(pod, corev1.PodScheduled, corev1.ConditionFalse, reason, message, now)
}

// setWaiting makes pod's status that of a Pod whose containers a kubelet
// cannot start, all waiting for reason, at now.
func setWaiting(pod *corev1.Pod, reason string, now metav1.Time) {
	setStarted(pod, corev1.PodPending, now)
	pod.Status.ContainerStatuses = containerStatuses(pod, func(ctr *corev1.Container, last corev1.ContainerStatus) corev1.ContainerStatus {
		started := false
		return corev1.ContainerStatus{
			Name: ctr.Name, Image: ctr.Image, Started: &started,
			RestartCount: last.RestartCount, LastTerminationState: last.LastTerminationState,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: waitingMessage(reason, ctr)}},
		}
	})
	setContainersReady(pod, now, "")
}

// waitingMessage is the message a kubelet writes beside reason for ctr, or
// one saying kubetest played it when reason is not an image reason.
func waitingMessage(reason string, ctr *corev1.Container) string {
	switch reason {
	case "ImagePullBackOff":
		return fmt.Sprintf("Back-off pulling image %q", ctr.Image)
	case "ErrImagePull":
		return fmt.Sprintf("rpc error: code = NotFound desc = failed to pull and unpack image %q: not found", ctr.Image)
	case "InvalidImageName":
		return fmt.Sprintf("Failed to apply default image tag %q: couldn't parse image name %q: invalid reference format", ctr.Image, ctr.Image)
	}
	return fmt.Sprintf("kubetest plays %s for container %q", reason, ctr.Name)
}

// MarkPodUpdated plays the kubelet taking in the Pod's spec as it is now,
// after an in-place change (an image changed by a patch or an update,
// resources changed through the Pod's resize subresource), once it has
// acted on all of it:
//   - each container whose status image differs from its spec image, and
//     which had started (its state Running or Terminated), is restarted in
//     place: its restart count rises by 1, its last state is the old
//     container's end (Terminated with exit code 0 and reason Completed,
//     when it stopped because the kubelet asked), and it runs the spec's
//     image, since now; one that was Waiting (never created, such as after
//     MarkPodPending with an image reason, or backing off after
//     MarkPodCrashLooping, whose crashes are already counted) just starts
//     on the spec's image, its restart count as it was;
//   - every container is running, started and ready (one that was already
//     running its spec's image keeps its start time; every container keeps
//     its restart count otherwise);
//   - each container's status resources, Resources and
//     AllocatedResources, are what its spec asks, as a kubelet reports
//     once a resize is done, and the PodResizePending and
//     PodResizeInProgress conditions are gone;
//   - status.observedGeneration (and each condition's) is the Pod's
//     metadata.generation, which the API server raised with the change;
//   - the Pod is Running and Ready, as MarkPodReady leaves it.
//
// A container with no status yet simply starts, with restart count 0.
// Pod-level resources (spec.resources) are left alone. It writes through
// the status subresource as MarkPodReady does. The name says what it
// plays from the side of the test: the Pod has been updated.
func MarkPodUpdated(ctx context.Context, c client.Client, pod *corev1.Pod) error {
	return writeStatus(ctx, c, pod, "updated", setUpdated)
}

// setUpdated makes pod's status what a kubelet reports once it has
// applied pod's spec, at now.
func setUpdated(pod *corev1.Pod, now metav1.Time) {
	setStarted(pod, corev1.PodRunning, now)
	pod.Status.ContainerStatuses = containerStatuses(pod, func(ctr *corev1.Container, last corev1.ContainerStatus) corev1.ContainerStatus {
		cs := runningStatus(ctr, last, true, now)
		if last.Image == ctr.Image {
			return cs
		}
		switch {
		case last.State.Running != nil:
			cs.RestartCount++
			cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: reasonCompleted, StartedAt: last.State.Running.StartedAt, FinishedAt: now,
			}}
		case last.State.Terminated != nil:
			cs.RestartCount++
			cs.LastTerminationState = last.State
		}
		return cs
	})
	pod.Status.Resize = ""
	pod.Status.Conditions = slices.DeleteFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress
	})
	setContainersReady(pod, now, "")
}
