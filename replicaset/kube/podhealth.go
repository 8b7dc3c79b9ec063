package kube

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PodHealth is a ready [HealthChecker] and [Starter] for Pod children:
// it reads what a Kubernetes user means by an unhealthy Pod. An Adapter
// for Pods embeds it to be both:
//
//	type poolAdapter struct {
//		kube.PodHealth
//		// …
//	}
//
//	var _ kube.HealthChecker[*corev1.Pod] = poolAdapter{}
//	var _ kube.Starter[*corev1.Pod] = poolAdapter{}
//
// With Spec.Remediation, a Pod it finds unhealthy, or one not Ready, is
// remediated once the start-up window (from the Pod's creation, for one
// that has never been healthy: a Pod stuck Pending included) or the
// unhealthy window (for one that was healthy) ends. The reasons it gives,
// in this order:
//   - the Pod's status.reason ("Evicted") or "Failed", for a Pod in phase
//     Failed;
//   - "Unschedulable", while its PodScheduled condition is False for that
//     reason: no node can take it;
//   - a container's waiting reason that a kubelet gives only for a
//     container that cannot run: "CrashLoopBackOff", "ImagePullBackOff",
//     "ErrImagePull", "InvalidImageName", "ErrImageNeverPull",
//     "CreateContainerConfigError", "CreateContainerError" and
//     "RunContainerError", init containers first;
//   - "NotReady", while its Ready condition is not True.
//
// A Pod past them all is healthy. Restarts alone (a restart count that
// rose and a container running again) are not held against it: a Pod
// that crashes again is found crash-looping.
//
// As a Starter, it starts a Pod's start-up window at its creation, as the
// binding does without one, but not while the Pod waits on its scheduling
// gates (PodScheduled False, reason SchedulingGated: a queue such as
// Kueue has not admitted it yet), which a new Pod would wait on as long;
// its window then runs from the first pass that sees it ungated.
type PodHealth struct{}

var (
	_ HealthChecker[*corev1.Pod] = PodHealth{}
	_ Starter[*corev1.Pod]       = PodHealth{}
)

// StartedAt implements Starter for a Pod, as PodHealth says: not started
// while its scheduling gates hold it; else at its creation, or, once it
// was gated, at the first pass that sees it ungated.
func (PodHealth) StartedAt(p *corev1.Pod) (time.Time, bool) {
	if len(p.Spec.SchedulingGates) > 0 {
		return time.Time{}, false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonSchedulingGated {
			return time.Time{}, false
		}
	}
	return time.Time{}, true // the binding's first sight of it started: its creation, if never seen gated
}

// failingWaitReasons are the container waiting reasons PodHealth holds
// against a Pod: those a kubelet gives a container it cannot run, as
// opposed to ContainerCreating or PodInitializing, which pass.
var failingWaitReasons = map[string]bool{
	"CrashLoopBackOff":           true,
	"ImagePullBackOff":           true,
	"ErrImagePull":               true,
	"InvalidImageName":           true,
	"ErrImageNeverPull":          true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
}

// CheckHealth implements HealthChecker for a Pod, with the reasons
// PodHealth lists. p is the cache's own object: CheckHealth only reads
// it.
func (PodHealth) CheckHealth(p *corev1.Pod) (ok bool, reason string) {
	st := &p.Status
	if st.Phase == corev1.PodFailed {
		if st.Reason != "" {
			return false, st.Reason
		}
		return false, string(corev1.PodFailed)
	}
	ready := false
	for _, c := range st.Conditions {
		switch {
		case c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable:
			return false, corev1.PodReasonUnschedulable
		case c.Type == corev1.PodReady:
			ready = c.Status == corev1.ConditionTrue
		}
	}
	for _, list := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for _, cs := range list {
			if w := cs.State.Waiting; w != nil && failingWaitReasons[w.Reason] {
				return false, w.Reason
			}
		}
	}
	if !ready {
		return false, reasonNotReady
	}
	return true, ""
}
