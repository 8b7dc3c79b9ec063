package main

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/internal/widgetkind"
)

// The rollouts' three owners: a Deployment (kube-controller-manager's
// Deployment controller), a StatefulSet and a Widget (the binding), each
// with a Pod template whose version is the container's VERSION variable
// (the Widget's template.data.version), all at 25% surge and 25%
// unavailable.

// deployOwner is the side whose owner is a Deployment, rolled by
// kube-controller-manager's Deployment controller.
type deployOwner struct{ b *bench }

func (d deployOwner) create(ctx context.Context, ns, name string, n int, version string) error {
	sel := map[string]string{"app": name}
	_, err := d.b.cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(n)),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: rolloutPodSpec(version)},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxSurge: ptr.To(intstr.FromString("25%")), MaxUnavailable: ptr.To(intstr.FromString("25%"))}},
		},
	}, metav1.CreateOptions{})
	return err
}

func (d deployOwner) roll(ctx context.Context, ns, name, version string) error {
	_, err := d.b.cs.AppsV1().Deployments(ns).Patch(ctx, name, types.StrategicMergePatchType, versionPatch(version), metav1.PatchOptions{})
	return err
}

func (d deployOwner) rolledOut(ctx context.Context, ns, name string, n int) (bool, error) {
	dep, err := d.b.cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	s := dep.Status
	return s.ObservedGeneration == dep.Generation && s.Replicas == int32(n) && s.UpdatedReplicas == int32(n) && s.AvailableReplicas == int32(n), nil
}

func (d deployOwner) remove(ctx context.Context, ns, name string) error {
	return d.b.cs.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
}

func (deployOwner) resource() string { return "deployments" }

// versionPatch is a strategic merge patch of a template's container
// "app" to version.
func versionPatch(version string) []byte {
	return fmt.Appendf(nil, `{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":%q,"value":%q}]}]}}}}`, versionEnv, version)
}

// rolloutSetOwner is the side whose owner is a StatefulSet, rolled by the
// binding (rolloutSets).
type rolloutSetOwner struct{ b *bench }

func (s rolloutSetOwner) create(ctx context.Context, ns, name string, n int, version string) error {
	sel := map[string]string{"app": name}
	_, err := s.b.cs.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(int32(n)),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: rolloutPodSpec(version)},
		},
	}, metav1.CreateOptions{})
	return err
}

func (s rolloutSetOwner) roll(ctx context.Context, ns, name, version string) error {
	_, err := s.b.cs.AppsV1().StatefulSets(ns).Patch(ctx, name, types.StrategicMergePatchType, versionPatch(version), metav1.PatchOptions{})
	return err
}

func (s rolloutSetOwner) rolledOut(ctx context.Context, ns, name string, n int) (bool, error) {
	set, err := s.b.cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	st := set.Status
	return st.ObservedGeneration == set.Generation && st.Replicas == int32(n) && st.UpdatedReplicas == int32(n) && st.AvailableReplicas == int32(n), nil
}

func (s rolloutSetOwner) remove(ctx context.Context, ns, name string) error {
	return s.b.cs.AppsV1().StatefulSets(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
}

func (rolloutSetOwner) resource() string { return "statefulsets" }

// rolloutWidgetOwner is the side whose owner is a Widget with
// spec.strategy, rolled by the binding (rolloutWidgets).
type rolloutWidgetOwner struct{ b *bench }

func (w rolloutWidgetOwner) create(ctx context.Context, ns, name string, n int, version string) error {
	wd := widgetkind.New(ns, name, int64(n))
	spec := wd.Object["spec"].(map[string]any)
	spec["strategy"] = map[string]any{"type": "RollingUpdate", "maxSurge": "25%", "maxUnavailable": "25%"}
	spec["template"].(map[string]any)["data"] = map[string]any{"version": version}
	return w.b.c.Create(ctx, wd)
}

func (w rolloutWidgetOwner) roll(ctx context.Context, ns, name, version string) error {
	return w.b.c.Patch(ctx, widgetkind.New(ns, name, 0), client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"template":{"data":{"version":%q}}}}`, version)))
}

func (w rolloutWidgetOwner) rolledOut(ctx context.Context, ns, name string, n int) (bool, error) {
	wd := widgetkind.Empty()
	if err := w.b.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, wd); err != nil {
		return false, err
	}
	get := func(field string) int64 {
		v, _, _ := unstructured.NestedInt64(wd.Object, "status", field)
		return v
	}
	return get("observedGeneration") == wd.GetGeneration() && get("replicas") == int64(n) && get("updatedReplicas") == int64(n) && get("availableReplicas") == int64(n), nil
}

func (w rolloutWidgetOwner) remove(ctx context.Context, ns, name string) error {
	return w.b.c.Delete(ctx, widgetkind.New(ns, name, 0), client.PropagationPolicy(metav1.DeletePropagationBackground))
}

func (rolloutWidgetOwner) resource() string { return "widgets" }
