package kube_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset/kube"
)

// childObjects returns the live ConfigMaps w controls, by name.
func childObjects(t *testing.T, c client.Client, w *unstructured.Unstructured) map[string]corev1.ConfigMap {
	t.Helper()
	var l corev1.ConfigMapList
	if err := c.List(context.Background(), &l, client.InNamespace(w.GetNamespace())); err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.ConfigMap{}
	for _, cm := range l.Items {
		if ref := metav1.GetControllerOf(&cm); ref != nil && ref.UID == w.GetUID() && cm.DeletionTimestamp == nil {
			out[cm.Name] = cm
		}
	}
	return out
}

// mergePatch applies a JSON merge patch to w.
func mergePatch(t *testing.T, c client.Client, w *unstructured.Unstructured, patch string) {
	t.Helper()
	if err := c.Patch(context.Background(), w, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// await polls until ok holds, or fails the test after 30 s saying what.
func await(t *testing.T, what string, ok func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return ok(), nil
	})
	if err != nil {
		t.Fatalf("never: %s", what)
	}
}

// watcher counts w's live ConfigMaps from a watch of the API server,
// independently of the reconciler, and records the fewest and the most it
// saw: ConfigMaps are ready when made, so live is available.
type watcher struct {
	mu     sync.Mutex
	live   map[string]bool
	fewest int
	most   int
	stop   func()
	done   chan struct{}
}

func watchChildren(t *testing.T, w *unstructured.Unstructured, start map[string]corev1.ConfigMap) *watcher {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var l corev1.ConfigMapList
	if err := c.List(context.Background(), &l, client.InNamespace(w.GetNamespace())); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	wi, err := c.Watch(ctx, &corev1.ConfigMapList{}, client.InNamespace(w.GetNamespace()), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: l.ResourceVersion}})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	x := &watcher{live: map[string]bool{}, stop: func() { cancel(); wi.Stop() }, done: make(chan struct{})}
	for name := range start {
		x.live[name] = true
	}
	x.fewest, x.most = len(x.live), len(x.live)
	// The test patches w while the watch runs: read its UID once, here.
	uid := w.GetUID()
	go func() {
		defer close(x.done)
		for ev := range wi.ResultChan() {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				continue
			}
			if ref := metav1.GetControllerOf(cm); ref == nil || ref.UID != uid {
				continue
			}
			x.mu.Lock()
			switch {
			case ev.Type == watch.Deleted || cm.DeletionTimestamp != nil:
				delete(x.live, cm.Name)
			case ev.Type == watch.Added || ev.Type == watch.Modified:
				x.live[cm.Name] = true
			}
			x.fewest, x.most = min(x.fewest, len(x.live)), max(x.most, len(x.live))
			x.mu.Unlock()
		}
	}()
	t.Cleanup(func() { x.stop(); <-x.done })
	return x
}

func (x *watcher) bounds() (fewest, most int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.fewest, x.most
}

// TestRollout_UpgradeReplacesNothing: children made before the owner's
// rollouts were turned on (as after an importer upgrades) are labelled
// with the current revision in place, not replaced; then a change of the
// template's data rolls them one at a time under the default strategy (one
// surge child, none unavailable), which an independent watch of the API
// server checks, and a change of the template's labels and annotations
// reaches every child in place.
func TestRollout_UpgradeReplacesNothing(t *testing.T) {
	c, ns := startManager(t)
	w := widget(ns, "roll", 3)
	if err := c.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	converge(t, c, w, 3)
	before := childObjects(t, c, w)
	for name, cm := range before {
		if _, ok := cm.Labels[kube.RevisionLabel]; ok {
			t.Fatalf("%s has a revision before rollouts were turned on: %v", name, cm.Labels)
		}
	}

	// Turn rollouts on.
	mergePatch(t, c, w, `{"spec":{"strategy":{}}}`)
	var rev string
	await(t, "every child labelled with one revision", func() bool {
		now := childObjects(t, c, w)
		revs := map[string]bool{}
		for _, cm := range now {
			revs[cm.Labels[kube.RevisionLabel]] = true
		}
		if len(now) != 3 || len(revs) != 1 || revs[""] {
			return false
		}
		for r := range revs {
			rev = r
		}
		return true
	})
	after := childObjects(t, c, w)
	for name, cm := range before {
		if after[name].UID != cm.UID {
			t.Errorf("%s was replaced when rollouts were turned on", name)
		}
	}
	awaitStatus(t, c, w, 3, rev, "RolloutComplete")

	// Change the template: a rolling update.
	x := watchChildren(t, w, after)
	mergePatch(t, c, w, `{"spec":{"template":{"data":{"version":"2"}}}}`)
	var rev2 string
	await(t, "every child on the new template", func() bool {
		now := childObjects(t, c, w)
		if len(now) != 3 {
			return false
		}
		for _, cm := range now {
			if cm.Data["version"] != "2" || cm.Labels[kube.RevisionLabel] == rev {
				return false
			}
			rev2 = cm.Labels[kube.RevisionLabel]
		}
		return true
	})
	awaitStatus(t, c, w, 3, rev2, "RolloutComplete")
	if fewest, most := x.bounds(); fewest < 3 || most > 4 {
		t.Errorf("the watch saw between %d and %d live children; want 3 to 4 (Desired 3, MaxSurge 1, MaxUnavailable 0)", fewest, most)
	}
	for name := range after {
		if _, ok := childObjects(t, c, w)[name]; ok {
			t.Errorf("%s, made from the old template, is still there", name)
		}
	}

	// Labels and annotations of the template reach the children in place.
	rolled := childObjects(t, c, w)
	mergePatch(t, c, w, `{"spec":{"template":{"metadata":{"labels":{"tier":"web"},"annotations":{"note":"hello"}}}}}`)
	await(t, "the template's labels and annotations on every child", func() bool {
		now := childObjects(t, c, w)
		for _, cm := range now {
			if cm.Labels["tier"] != "web" || cm.Annotations["note"] != "hello" {
				return false
			}
		}
		return len(now) == 3
	})
	if now := childObjects(t, c, w); !slices.Equal(uidsOf(now), uidsOf(rolled)) {
		t.Errorf("changing labels and annotations replaced children: %v → %v", uidsOf(rolled), uidsOf(now))
	}
}

// awaitStatus waits until w's status reports n updated children on
// revision rev and its RolledOut condition has reason.
func awaitStatus(t *testing.T, c client.Client, w *unstructured.Unstructured, n int64, rev, reason string) {
	t.Helper()
	await(t, fmt.Sprintf("status: %d updated on %s, RolledOut %s", n, rev, reason), func() bool {
		got := emptyWidget()
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(w), got); err != nil {
			return false
		}
		updated, _, _ := unstructured.NestedInt64(got.Object, "status", "updatedReplicas")
		r, _, _ := unstructured.NestedString(got.Object, "status", "updateRevision")
		cur, _, _ := unstructured.NestedString(got.Object, "status", "currentRevision")
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, cd := range conds {
			m, _ := cd.(map[string]any)
			if m["type"] == kube.ConditionRolledOut && m["reason"] == reason {
				// A complete rollout is current on its own revision.
				return updated == n && r == rev && (reason != kube.ReasonRolloutComplete || cur == rev)
			}
		}
		return false
	})
}

func uidsOf(cms map[string]corev1.ConfigMap) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(cms)) {
		out = append(out, string(cms[k].UID))
	}
	return out
}

// TestRollout_ProgressDeadline: a rollout whose new children fail (the
// Widget's stand-in: data phase Failed) holds at MaxUnavailable 0, and
// once it has not moved for the progress deadline its RolledOut
// condition says ProgressDeadlineExceeded; nothing is rolled back.
func TestRollout_ProgressDeadline(t *testing.T) {
	c, ns := startManager(t)
	w := widget(ns, "stall", 2)
	if err := unstructured.SetNestedField(w.Object, int64(2), "spec", "progressDeadlineSeconds"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(w.Object, map[string]any{}, "spec", "strategy"); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	converge(t, c, w, 2)
	before := childObjects(t, c, w)
	mergePatch(t, c, w, `{"spec":{"template":{"data":{"phase":"Failed"}}}}`)
	await(t, "RolledOut says ProgressDeadlineExceeded", func() bool {
		got := emptyWidget()
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(w), got); err != nil {
			return false
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, cd := range conds {
			m, _ := cd.(map[string]any)
			if m["type"] == kube.ConditionRolledOut {
				return m["reason"] == kube.ReasonProgressDeadlineExceeded
			}
		}
		return false
	})
	now := childObjects(t, c, w)
	for name, cm := range before {
		if now[name].UID != cm.UID {
			t.Errorf("%s, on the old template and available, was replaced although the new children fail", name)
		}
	}
}
