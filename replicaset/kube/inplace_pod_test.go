package kube_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/replicakit/replicakit/internal/faults"
	"github.com/replicakit/replicakit/internal/widgetkind"
	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/replicaset/kube/kubetest"
)

// resizingPods adapts Widgets as owners of Pods that change in place as
// the package's Pod example says (podsInPlace): the template's data.image
// is the container's image, data.cpu its CPU request.
type resizingPods struct {
	podWidgets
	podsInPlace
}

var (
	_ kube.InPlaceRollout[*unstructured.Unstructured, *corev1.Pod] = resizingPods{}
	_ kube.InPlaceSubresource[*corev1.Pod]                         = resizingPods{}
)

func (resizingPods) NewChild(w *unstructured.Unstructured) (*corev1.Pod, error) {
	p, err := podWidgets{}.NewChild(w)
	if err != nil {
		return nil, err
	}
	data, _ := widgetkind.TemplateData(w)
	cpu, err := resource.ParseQuantity(data["cpu"])
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: cpu}
	return p, err
}

// startResizingPods runs a manager with the Widget reconciler over Pods
// with the resizingPods Adapter until the test ends, seeing only a
// namespace of the test's own, which it returns; edit may change the
// manager's options.
func startResizingPods(t *testing.T, edit ...func(*ctrl.Options)) (client.Client, string) {
	t.Helper()
	return startPodWidgets(t, resizingPods{}, "resizingpods", edit...)
}

// runningPods creates a Widget of n Pods running app:v1 with 100m of CPU,
// to be updated in place one at a time (MaxUnavailable 1, no surge), plays
// the kubelet until they run, and returns the Widget once rolled out.
func runningPods(t *testing.T, c client.Client, ns string, n int64) *unstructured.Unstructured {
	t.Helper()
	w := widget(ns, "web", n)
	spec := w.Object["spec"].(map[string]any)
	spec["strategy"] = map[string]any{"method": "InPlaceIfPossible", "maxUnavailable": int64(1), "maxSurge": int64(0)}
	spec["template"].(map[string]any)["data"] = map[string]any{"image": "app:v1", "cpu": "100m"}
	createObject(t, c, w)
	awaitWidget(t, c, w, fmt.Sprintf("%d Pods", n), func(st map[string]any) bool { return st["replicas"] == n })
	if _, err := kubetest.MarkPodsReady(t.Context(), c, w); err != nil {
		t.Fatal(err)
	}
	awaitWidget(t, c, w, "ready and rolled out", func(st map[string]any) bool {
		return st["readyReplicas"] == n && conditionIs(st, kube.ConditionRolledOut, "True", kube.ReasonRolloutComplete)
	})
	return w
}

// podsOf returns w's live Pods, read from the API server, by name.
func podsOf(t *testing.T, c client.Client, w *unstructured.Unstructured) map[string]corev1.Pod {
	t.Helper()
	var l corev1.PodList
	if err := c.List(t.Context(), &l, client.InNamespace(w.GetNamespace())); err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range l.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == w.GetUID() && p.DeletionTimestamp == nil {
			out[p.Name] = p
		}
	}
	return out
}

// asks reports the image and CPU request p's spec asks for.
func asks(p corev1.Pod) (string, string) {
	return p.Spec.Containers[0].Image, p.Spec.Containers[0].Resources.Requests.Cpu().String()
}

// writtenThrough reports whether one of p's managed-fields entries, of
// the given subresource ("" for the object itself), owns field (such as
// "f:image") of its container app.
func writtenThrough(p corev1.Pod, subresource, field string) bool {
	return slices.ContainsFunc(p.ManagedFields, func(m metav1.ManagedFieldsEntry) bool {
		if m.Subresource != subresource || m.FieldsV1 == nil {
			return false
		}
		raw := m.FieldsV1.GetRawString()
		_, app, ok := strings.Cut(raw, `"k:{\"name\":\"app\"}"`)
		return ok && strings.Contains(app, `"`+field+`"`)
	})
}

// TestPod_ResourcesOnlyThroughResize holds the API server to what
// podsInPlace relies on: a Pod's image changes by a patch of the Pod, its
// resources only through its resize subresource (a patch of the Pod that
// changes them is refused), and each raises metadata.generation, which
// status.observedGeneration then reports.
func TestPod_ResourcesOnlyThroughResize(t *testing.T) {
	e := env.Require(t)
	ctx, c := t.Context(), e.Client
	ns := fmt.Sprintf("t-%d", time.Now().UnixNano())
	createObject(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "app", Image: "app:v1", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
	}}}}
	createObject(t, c, pod)
	if err := kubetest.MarkPodReady(ctx, c, pod); err != nil {
		t.Fatal(err)
	}
	if pod.Generation != 1 || pod.Status.ObservedGeneration != 1 {
		t.Fatalf("new Pod: generation %d, observedGeneration %d, want 1 and 1", pod.Generation, pod.Status.ObservedGeneration)
	}
	// Each change is a merge patch from the Pod as read, as the binding
	// sends it (a JSON merge patch replaces the containers list whole).
	change := func(sub string, f func(*corev1.Container)) error {
		to := pod.DeepCopy()
		f(&to.Spec.Containers[0])
		var err error
		if sub == "" {
			err = c.Patch(ctx, to, client.MergeFrom(pod))
		} else {
			err = c.SubResource(sub).Patch(ctx, to, client.MergeFrom(pod))
		}
		if err == nil {
			pod = to
		}
		return err
	}
	if err := change("", func(c *corev1.Container) { c.Image = "app:v2" }); err != nil || pod.Generation != 2 {
		t.Fatalf("patch the image: error %v, generation %d; want none and 2", err, pod.Generation)
	}
	cpu := func(c *corev1.Container) { c.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m") }
	if err := change("", cpu); !apierrors.IsInvalid(err) {
		t.Fatalf("patch the resources in the Pod: error %v, want Invalid", err)
	}
	if err := change("resize", cpu); err != nil {
		t.Fatalf("patch the resources through resize: %v", err)
	}
	if img, got := asks(*pod); img != "app:v2" || got != "200m" || pod.Generation != 3 {
		t.Errorf("after the patch and the resize: image %s, CPU %s, generation %d; want app:v2, 200m, 3", img, got, pod.Generation)
	}
	if err := kubetest.MarkPodUpdated(ctx, c, pod); err != nil {
		t.Fatal(err)
	}
	if pod.Status.ObservedGeneration != 3 {
		t.Errorf("status.observedGeneration %d after the kubelet, want 3", pod.Status.ObservedGeneration)
	}
}

// TestInPlace_PodImageAndResources rolls a Widget's 2 Pods from app:v1
// with 100m of CPU to app:v2 with 200m, in place: an image change
// restarts the container, a power cycle, so one Pod at a time
// (MaxUnavailable 1). Each Pod gets its image through a patch of the Pod
// and its CPU through the resize subresource (the API server's managed
// fields say through which), while the other is left alone; the test
// plays its kubelet then, and the rollout finishes with no Pod replaced.
func TestInPlace_PodImageAndResources(t *testing.T) {
	c, ns := startResizingPods(t)
	w := runningPods(t, c, ns, 2)
	before := podsOf(t, c, w)
	mergePatch(t, c, w, `{"spec":{"template":{"data":{"image":"app:v2","cpu":"200m"}}}}`)

	var updated []string
	for range before {
		var p corev1.Pod
		await(t, "a Pod changed in place", func() bool {
			for name, q := range podsOf(t, c, w) {
				if img, cpu := asks(q); !slices.Contains(updated, name) && (img != "app:v1" || cpu != "100m") {
					p = q
					return img == "app:v2" && cpu == "200m"
				}
			}
			return false
		})
		if !writtenThrough(p, "", "f:image") || !writtenThrough(p, "resize", "f:resources") {
			t.Errorf("%s: the image should come by a patch of the Pod and the resources through resize; managed fields %+v", p.Name, p.ManagedFields)
		}
		if p.Generation != 3 {
			t.Errorf("%s: generation %d after a patch and a resize, want 3", p.Name, p.Generation)
		}
		for name, q := range podsOf(t, c, w) {
			if img, cpu := asks(q); name != p.Name && !slices.Contains(updated, name) && (img != "app:v1" || cpu != "100m") {
				t.Errorf("%s changed (%s, %s) while %s was: MaxUnavailable 1 allows one container restart at a time", name, img, cpu, p.Name)
			}
		}
		if err := kubetest.MarkPodUpdated(t.Context(), c, &p); err != nil {
			t.Fatal(err)
		}
		updated = append(updated, p.Name)
	}
	awaitWidget(t, c, w, "rolled out in place", func(st map[string]any) bool {
		return st["readyReplicas"] == int64(2) && st["updatedReplicas"] == int64(2) &&
			conditionIs(st, kube.ConditionRolledOut, "True", kube.ReasonRolloutComplete)
	})
	after := podsOf(t, c, w)
	for name, p := range before {
		q, ok := after[name]
		if !ok || q.UID != p.UID || q.Annotations[kube.AnnotationUpdatedInPlace] == "" || q.Labels[kube.RevisionLabel] == p.Labels[kube.RevisionLabel] {
			t.Errorf("%s (UID %s) was not updated in place: now %v", name, p.UID, q.ObjectMeta)
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d Pods after the rollout, want %d", len(after), len(before))
	}
}

// TestInPlace_PodResizeFails: while the API server refuses the resize,
// the image still arrives by its own patch, and the pass's error names the
// Pod and the subresource; once it takes it, the next pass resizes the
// Pod and the rollout finishes.
func TestInPlace_PodResizeFails(t *testing.T) {
	refused := errors.New("resize refused by the test")
	var refusing atomic.Bool
	refusing.Store(true)
	sink := newRecordingSink()
	c, ns := startResizingPods(t, func(o *ctrl.Options) {
		o.Logger = logr.New(sink)
		o.NewClient = faults.NewClient(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				if sub == "resize" && refusing.Load() {
					return refused
				}
				return c.SubResource(sub).Patch(ctx, obj, p, opts...)
			},
		})
	})
	w := runningPods(t, c, ns, 1)
	mergePatch(t, c, w, `{"spec":{"template":{"data":{"image":"app:v2","cpu":"200m"}}}}`)

	var name string
	await(t, "a reconcile error naming the Pod and resize", func() bool {
		for _, e := range sink.about("Reconciler error") {
			for n := range podsOf(t, c, w) {
				if errors.Is(e.err, refused) && strings.Contains(e.err.Error(), "update "+n+" in place through subresource resize: ") {
					name = n
					return true
				}
			}
		}
		return false
	})
	p := podsOf(t, c, w)[name]
	if img, cpu := asks(p); img != "app:v2" || cpu != "100m" {
		t.Errorf("with resize refused: %s asks for %s with %s CPU, want app:v2 (patched) with 100m", name, img, cpu)
	}
	refusing.Store(false)
	await(t, "the CPU through resize once it is taken", func() bool {
		p = podsOf(t, c, w)[name]
		_, cpu := asks(p)
		return cpu == "200m"
	})
	if err := kubetest.MarkPodUpdated(t.Context(), c, &p); err != nil {
		t.Fatal(err)
	}
	awaitWidget(t, c, w, "rolled out in place", func(st map[string]any) bool {
		return st["updatedReplicas"] == int64(1) && conditionIs(st, kube.ConditionRolledOut, "True", kube.ReasonRolloutComplete)
	})
	if q, ok := podsOf(t, c, w)[name]; !ok || q.UID != p.UID {
		t.Errorf("%s was replaced", name)
	}
}

// TestInPlace_PodResizeLive: a CPU change alone, which the container's
// resize policy (NotRequired by default) takes without a restart, is
// live: both Pods are resized at once, before either kubelet reports it,
// their images left alone, and the rollout finishes once they do.
func TestInPlace_PodResizeLive(t *testing.T) {
	c, ns := startResizingPods(t)
	w := runningPods(t, c, ns, 2)
	before := podsOf(t, c, w)
	mergePatch(t, c, w, `{"spec":{"template":{"data":{"cpu":"200m"}}}}`)
	await(t, "both Pods resized at once", func() bool {
		for _, p := range podsOf(t, c, w) {
			if _, cpu := asks(p); cpu != "200m" {
				return false
			}
		}
		return true
	})
	for name, p := range podsOf(t, c, w) {
		if img, _ := asks(p); img != "app:v1" || p.UID != before[name].UID || !writtenThrough(p, "resize", "f:resources") {
			t.Errorf("%s: image %s, UID %s (was %s), resized through resize %v; want app:v1, the same UID, true",
				name, img, p.UID, before[name].UID, writtenThrough(p, "resize", "f:resources"))
		}
		if err := kubetest.MarkPodUpdated(t.Context(), c, &p); err != nil {
			t.Fatal(err)
		}
	}
	awaitWidget(t, c, w, "rolled out in place", func(st map[string]any) bool {
		return st["updatedReplicas"] == int64(2) && conditionIs(st, kube.ConditionRolledOut, "True", kube.ReasonRolloutComplete)
	})
}
