package main

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/replicakit/replicakit/internal/widgetkind"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// The rollouts run the binding in a process of its own (-serve-rollout),
// apart from the other measurements' (-serve-binding), because its
// adapters differ: they turn rollouts on, read a Pod's readiness (which
// kwok sets), and build Pods that carry the template's version and are
// bound to kwok's Node.

// rolloutStrategy is the strategy of every rollout, the binding's and the
// Deployment's: 25% surge, 25% unavailable (a Deployment's defaults).
var rolloutStrategy = replicaset.Strategy{Type: replicaset.RollingUpdate, MaxSurge: replicaset.Percent(25), MaxUnavailable: replicaset.Percent(25)}

// versionEnv is the environment variable of the rollouts' container that
// carries the template's version: changing it is the rollout.
const versionEnv = "VERSION"

// rolloutPodSpec is the Pod spec of a rollout's template at version: the
// other measurements' Pod, bound to kwok's Node, with the version in its
// environment.
func rolloutPodSpec(version string) corev1.PodSpec {
	s := podSpec()
	s.NodeName = kwokNode
	s.Containers[0].Env = []corev1.EnvVar{{Name: versionEnv, Value: version}}
	return s
}

// podVersion is the version of the template p was made from.
func podVersion(p *corev1.Pod) string {
	for _, c := range p.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == versionEnv {
				return e.Value
			}
		}
	}
	return ""
}

// describeReady fills in a Pod's phase and readiness, as kwok sets them.
func describeReady(p *corev1.Pod, r *replicaset.Replica) {
	r.Phase = replicaset.PhasePending
	if p.Status.Phase == corev1.PodRunning {
		r.Phase = replicaset.PhaseRunning
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			r.Ready, r.ReadySince = true, c.LastTransitionTime.Time
		}
	}
}

// rolloutSets adapts StatefulSets, a built-in kind read and written as
// protobuf as a Deployment is, with rollouts on under rolloutStrategy.
// The Pods are the StatefulSet's template, as for podSets.
type rolloutSets struct{ podSets }

var _ kube.Adapter[*appsv1.StatefulSet, *corev1.Pod] = rolloutSets{}

func (a rolloutSets) Spec(s *appsv1.StatefulSet) (kube.Spec, error) {
	spec, err := a.podSets.Spec(s)
	st := rolloutStrategy // a copy per pass: the binding owns what Spec returns
	spec.Rollout = &st
	return spec, err
}

func (rolloutSets) Describe(p *corev1.Pod, r *replicaset.Replica) { describeReady(p, r) }

// SetStatus writes podSets' status and the rollout's: the updated
// replicas and the revision.
func (a rolloutSets) SetStatus(s *appsv1.StatefulSet, st kube.Status) {
	a.podSets.SetStatus(s, st)
	s.Status.UpdatedReplicas, s.Status.UpdateRevision = st.UpdatedReplicas, st.UpdateRevision
}

// rolloutWidgets adapts Widgets, whose spec.strategy turns rollouts on
// (widgetkind.Spec reads it), making Pods whose version is the template's
// data.version.
type rolloutWidgets struct{ podWidgets }

var _ kube.Adapter[*unstructured.Unstructured, *corev1.Pod] = rolloutWidgets{}

func (rolloutWidgets) NewChild(w *unstructured.Unstructured) (*corev1.Pod, error) {
	l, err := widgetkind.TemplateLabels(w)
	if err != nil {
		return nil, err
	}
	d, err := widgetkind.TemplateData(w)
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: rolloutPodSpec(d["version"])}, err
}

func (rolloutWidgets) Describe(p *corev1.Pod, r *replicaset.Replica) { describeReady(p, r) }

// serveRollout is the rollouts' binding process: serveBinding with the
// rollout adapters (Widgets and StatefulSets owning Pods, rollouts on).
func serveRollout(kubeconfig string, qps float32, burst int, profile string) error {
	return serveManager(kubeconfig, qps, burst, profile, func(mgr ctrl.Manager) error {
		w := newWidgetReconciler()
		w.Adapter = rolloutWidgets{}
		if err := w.SetupWithManager(mgr, "widget"); err != nil {
			return err
		}
		s := newSetReconciler()
		s.Adapter = rolloutSets{}
		return s.SetupWithManager(mgr, "statefulset")
	})
}

// startRolloutBinding starts this program again with -serve-rollout at
// limit l, and waits until its cache has synced.
func (b *bench) startRolloutBinding(l limit) (stop func(), pid int, err error) {
	return b.startServing(l, "-serve-rollout")
}
