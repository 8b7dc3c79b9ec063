package kubetest_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/replicakit/replicakit/replicaset/kube/kubetest"
)

// ownedPod is a Pod in namespace default whose controller is the Pool
// with UID owner (none when owner is empty).
func ownedPod(name string, owner types.UID) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "worker", Image: "busybox"}}}}
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Pool", Name: "pool", UID: owner, Controller: ptr.To(true)}}
	}
	return p
}

// TestMarkPodsReady: only the owner's Pods that are not ready and not
// being deleted are marked, each Running with Ready, ContainersReady and
// a ready container; others' Pods are left alone; an owner without a UID
// is refused.
func TestMarkPodsReady(t *testing.T) {
	ctx := context.Background()
	pool := newPool("pool", 0)
	pool.UID = "pool-uid"
	done := ownedPod("done", pool.UID)
	done.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	going := ownedPod("going", pool.UID)
	going.Finalizers = []string{"example.com/hold"}
	c := fake.NewClientBuilder().WithScheme(newScheme()).
		WithObjects(ownedPod("b", pool.UID), ownedPod("a", pool.UID), done, going, ownedPod("theirs", "other-uid"), ownedPod("orphan", "")).
		Build()
	if err := c.Delete(ctx, going); err != nil {
		t.Fatal(err)
	}
	marked, err := kubetest.MarkPodsReady(ctx, c, pool)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b"}; !slices.Equal(marked, want) {
		t.Errorf("marked %v, want %v", marked, want)
	}
	for name, want := range map[string]bool{"a": true, "b": true, "done": true, "going": false, "theirs": false, "orphan": false} {
		var p corev1.Pod
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &p); err != nil {
			t.Fatal(err)
		}
		if got := kubetest.PodReady(&p); got != want {
			t.Errorf("Pod %s ready %v, want %v", name, got, want)
		}
		if !want || name == "done" {
			continue
		}
		if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != 1 || !p.Status.ContainerStatuses[0].Ready {
			t.Errorf("Pod %s: phase %s, containers %+v; want Running with a ready container", name, p.Status.Phase, p.Status.ContainerStatuses)
		}
		for _, ct := range []corev1.PodConditionType{corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
			if i := slices.IndexFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == ct }); i < 0 || p.Status.Conditions[i].Status != corev1.ConditionTrue {
				t.Errorf("Pod %s: condition %s not True: %+v", name, ct, p.Status.Conditions)
			}
		}
	}
	if _, err := kubetest.MarkPodsReady(ctx, c, newPool("new", 1)); err == nil || !strings.Contains(err.Error(), "no UID") {
		t.Errorf("owner without a UID: got %v, want an error saying so", err)
	}
}

// TestWatchBounds: the watch counts the owner's children being deleted
// as live and not as ready, ignores others' children, and catches up
// before it stops.
func TestWatchBounds(t *testing.T) {
	ctx := context.Background()
	pool := newPool("pool", 0)
	pool.UID = "pool-uid"
	a, b := ownedPod("a", pool.UID), ownedPod("b", pool.UID)
	a.Finalizers = []string{"example.com/hold"}
	for _, p := range []*corev1.Pod{a, b} {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	c := fake.NewClientBuilder().WithScheme(newScheme()).WithObjects(a, b, ownedPod("theirs", "other-uid")).Build()
	w, err := kubetest.WatchBounds(ctx, c, pool, &corev1.PodList{}, kubetest.PodReady)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := w.Bounds(), (kubetest.Bounds{MostLive: 2, FewestReady: 2}); got != want {
		t.Errorf("at the start: %v, want %v", got, want)
	}
	steps := []func() error{
		func() error { return c.Create(ctx, ownedPod("theirs-2", "other-uid")) },
		func() error { return c.Delete(ctx, a) },                       // being deleted: 2 live, 1 ready
		func() error { return c.Create(ctx, ownedPod("c", pool.UID)) }, // 3 live
		func() error { return kubetest.MarkPodReady(ctx, c, ownedPod("c", "")) },
		func() error { // gone: 2 live, 2 ready
			return c.Patch(ctx, a, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
		},
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	stop, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got, err := w.Stop(stop)
	if want := (kubetest.Bounds{MostLive: 3, FewestReady: 1}); err != nil || got != want {
		t.Errorf("Stop = %v, %v; want %v", got, err, want)
	}
	if _, err := kubetest.WatchBounds(ctx, c, newPool("new", 1), &corev1.PodList{}, kubetest.PodReady); err == nil || !strings.Contains(err.Error(), "no UID") {
		t.Errorf("owner without a UID: got %v, want an error saying so", err)
	}
	wrong, err := kubetest.WatchBounds(ctx, c, pool, &corev1.PodList{}, func(*Pool) bool { return true })
	if err == nil || !strings.Contains(err.Error(), "not a *kubetest_test.Pool") {
		t.Errorf("ready of the wrong kind: got %v, want an error naming the kinds", err)
		if wrong != nil {
			_, _ = wrong.Stop(stop)
		}
	}
}
