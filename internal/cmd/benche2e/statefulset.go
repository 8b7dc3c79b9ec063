package main

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// The binding also runs with a built-in owner kind, so that one fleet
// compares the binding's work with the ReplicaSet controller's like for
// like: an owner read and written as protobuf, as a ReplicaSet is. A custom
// resource such as the Widget is JSON on every watch event and every
// answer, which the ReplicaSet controller never decodes. The harness's
// kube-controller-manager runs no StatefulSet controller, so StatefulSets
// stand in: typed, protobuf, with replicas, a selector, a template and a
// status. Only the binding makes their Pods.

// podSets adapts apps/v1 StatefulSets as owners of Pods.
type podSets struct{}

var _ kube.Adapter[*appsv1.StatefulSet, *corev1.Pod] = podSets{}

func (podSets) Spec(s *appsv1.StatefulSet) (kube.Spec, error) {
	return kube.Spec{Replicas: int(ptr.Deref(s.Spec.Replicas, 1)), Selector: s.Spec.Selector}, nil
}

func (podSets) NewChild(s *appsv1.StatefulSet) (*corev1.Pod, error) {
	t := s.Spec.Template.DeepCopy()
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: t.Labels, Annotations: t.Annotations}, Spec: t.Spec}, nil
}

func (podSets) Describe(p *corev1.Pod, r *replicaset.Replica) { podWidgets{}.Describe(p, r) }

// SetStatus writes the counts, and the binding's conditions as
// StatefulSet conditions.
func (podSets) SetStatus(s *appsv1.StatefulSet, st kube.Status) {
	conds := make([]metav1.Condition, len(s.Status.Conditions))
	for i, c := range s.Status.Conditions {
		conds[i] = metav1.Condition{Type: string(c.Type), Status: metav1.ConditionStatus(c.Status),
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message}
	}
	st.MergeConditions(&conds)
	s.Status.Conditions = make([]appsv1.StatefulSetCondition, len(conds))
	for i, c := range conds {
		s.Status.Conditions[i] = appsv1.StatefulSetCondition{Type: appsv1.StatefulSetConditionType(c.Type),
			Status: corev1.ConditionStatus(c.Status), LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message}
	}
	s.Status.Replicas, s.Status.ReadyReplicas, s.Status.AvailableReplicas = st.Replicas, st.ReadyReplicas, st.AvailableReplicas
	s.Status.ObservedGeneration = st.ObservedGeneration
}

func newSetReconciler() *kube.Reconciler[*appsv1.StatefulSet, *corev1.Pod] {
	return &kube.Reconciler[*appsv1.StatefulSet, *corev1.Pod]{
		Adapter: podSets{},
	}
}

// setOwner is the fleet side whose owners are StatefulSets, made by the
// binding.
type setOwner struct{ b *bench }

func (s setOwner) createNamed(ctx context.Context, ns, name string, n int) error {
	sel := map[string]string{"app": name}
	_, err := s.b.cs.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(int32(n)),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: podSpec()},
		},
	}, metav1.CreateOptions{})
	return err
}

func (s setOwner) scaleNamed(ctx context.Context, ns, name string, n int) error {
	_, err := s.b.cs.AppsV1().StatefulSets(ns).Patch(ctx, name, types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n), metav1.PatchOptions{})
	return err
}

func (s setOwner) deleteNamed(ctx context.Context, ns, name string) error {
	return s.b.cs.AppsV1().StatefulSets(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
}

func (s setOwner) reporting(ctx context.Context, ns string, n int) (int, error) {
	l, err := s.b.cs.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	got := 0
	for _, it := range l.Items {
		if it.Status.Replicas == int32(n) && it.Status.ObservedGeneration == it.Generation {
			got++
		}
	}
	return got, nil
}
