package kube_test

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// resizable adapts Widgets whose ConfigMaps have a size they take in
// place, as VMs take memory: data "size" is what the child asks for,
// "running" what it runs with (set by sizer, the child's controller), and
// "hot" whether it takes an increase live. Any other change of the
// template's data needs a new child.
type resizable struct{ widgets }

var _ kube.InPlaceRollout[*unstructured.Unstructured, *corev1.ConfigMap] = resizable{}

// Describe: a child being power-cycled (data "cycling") is not ready.
func (a resizable) Describe(c *corev1.ConfigMap, r *replicaset.Replica) {
	a.widgets.Describe(c, r)
	if c.Data["cycling"] == "true" {
		r.Ready = false
	}
}

// sizeKeys are the data keys an in-place update or the sizer writes.
var sizeKeys = []string{"size", "running", "cycling", "power-cycle", "owner"}

func (resizable) InPlace(child, want *corev1.ConfigMap) (replicaset.InPlace, string) {
	strip := func(d map[string]string) map[string]string {
		out := maps.Clone(d)
		for _, k := range sizeKeys {
			delete(out, k)
		}
		return out
	}
	if a, b := strip(child.Data), strip(want.Data); !maps.Equal(a, b) {
		return replicaset.InPlaceNone, fmt.Sprintf("template data changed from %v to %v", a, b)
	}
	running, _ := strconv.Atoi(child.Data["running"])
	size, _ := strconv.Atoi(want.Data["size"])
	switch {
	case size > running && child.Data["hot"] == "true", size == running:
		return replicaset.InPlaceLive, ""
	case size < running:
		return replicaset.InPlacePowerCycle, fmt.Sprintf("size lowered from %d to %d", running, size)
	}
	return replicaset.InPlacePowerCycle, fmt.Sprintf("size raised from %d to %d with hot-add off", running, size)
}

func (resizable) ApplyInPlace(child, want *corev1.ConfigMap, powerCycle bool) bool {
	changed := child.Data["size"] != want.Data["size"]
	child.Data["size"] = want.Data["size"]
	if powerCycle && child.Data["power-cycle"] != "allowed" {
		child.Data["power-cycle"] = "allowed"
		changed = true
	}
	return changed
}

func (resizable) ShowsInPlace(child, want *corev1.ConfigMap) bool {
	return child.Data["running"] == want.Data["size"] && child.Data["cycling"] != "true"
}

// sizer plays the children's controller: it makes each child run with
// the size it asks for, live when it takes the change live, else by a
// power cycle of two steps when allowed. It records the most children it
// had cycling at once.
type sizer struct {
	mu      sync.Mutex
	cycling map[string]bool
	most    int
}

func (s *sizer) run(ctx context.Context, c client.Client, ns string) {
	s.cycling = map[string]bool{}
	go func() {
		for ctx.Err() == nil {
			var l corev1.ConfigMapList
			if err := c.List(ctx, &l, client.InNamespace(ns)); err == nil {
				for i := range l.Items {
					s.step(ctx, c, &l.Items[i])
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
}

func (s *sizer) step(ctx context.Context, c client.Client, cm *corev1.ConfigMap) {
	d := cm.Data
	if d["size"] == "" || cm.DeletionTimestamp != nil {
		return
	}
	patch := map[string]string{}
	switch {
	case d["running"] == "":
		patch["running"] = d["size"] // a new child runs with its size
	case d["cycling"] == "true":
		patch["running"], patch["cycling"], patch["power-cycle"] = d["size"], "", ""
	case d["running"] == d["size"]:
		return
	case d["hot"] == "true" && atoi(d["size"]) > atoi(d["running"]):
		patch["running"] = d["size"]
	case d["power-cycle"] == "allowed":
		patch["cycling"] = "true"
	default:
		return
	}
	to := cm.DeepCopy()
	for k, v := range patch {
		if v == "" {
			delete(to.Data, k)
		} else {
			to.Data[k] = v
		}
	}
	if c.Patch(ctx, to, client.MergeFrom(cm)) != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cycling[cm.Name] = to.Data["cycling"] == "true"
	n := 0
	for _, on := range s.cycling {
		if on {
			n++
		}
	}
	s.most = max(s.most, n)
}

// mostCycling is the most children it had cycling at once.
func (s *sizer) mostCycling() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.most
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// startResizable runs the Widget reconciler with the resizable Adapter
// and a sizer, and returns the namespace.
func startResizable(t *testing.T) (client.Client, string, *sizer) {
	t.Helper()
	c, ns := startManagerWith(t, func(r *reconciler, _ ctrl.Manager) { r.Adapter = resizable{} })
	s := &sizer{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s.run(ctx, c, ns)
	return c, ns, s
}

// resizableWidget is a Widget of n children of the given size, with
// hot-add on or off, and strategy.
func resizableWidget(t *testing.T, c client.Client, ns, name string, n int64, size string, hot bool, strategy map[string]any) *unstructured.Unstructured {
	t.Helper()
	w := widget(ns, name, n)
	data := map[string]any{"size": size, "hot": strconv.FormatBool(hot)}
	for k, v := range map[string]any{"data": data} {
		if err := unstructured.SetNestedField(w.Object, v, "spec", "template", k); err != nil {
			t.Fatal(err)
		}
	}
	if err := unstructured.SetNestedField(w.Object, strategy, "spec", "strategy"); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	converge(t, c, w, int(n))
	await(t, "every child runs with size "+size, func() bool {
		for _, cm := range childObjects(t, c, w) {
			if cm.Data["running"] != size {
				return false
			}
		}
		return true
	})
	return w
}

// rolledOutInPlace waits until every child of w is labelled revision other
// than before, runs with size, and carries AnnotationUpdatedInPlace, and
// checks that none was replaced.
func rolledOutInPlace(t *testing.T, c client.Client, w *unstructured.Unstructured, before map[string]corev1.ConfigMap, size string) {
	t.Helper()
	await(t, "every child updated in place to size "+size, func() bool {
		now := childObjects(t, c, w)
		if len(now) != len(before) {
			return false
		}
		for _, cm := range now {
			if cm.Data["running"] != size || cm.Labels[kube.RevisionLabel] == before[cm.Name].Labels[kube.RevisionLabel] ||
				cm.Annotations[kube.AnnotationUpdatedInPlace] == "" || cm.Annotations[kube.AnnotationInPlaceRevision] != "" {
				return false
			}
		}
		return true
	})
	if got, want := uidsOf(childObjects(t, c, w)), uidsOf(before); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("children replaced: UIDs %v, were %v", got, want)
	}
}

// TestInPlace_HotAdd: a size raised on children that take it live is
// made where they run: none replaced, none ever unavailable, each
// labelled with the new revision once it runs with the new size.
func TestInPlace_HotAdd(t *testing.T) {
	c, ns, s := startResizable(t)
	w := resizableWidget(t, c, ns, "hot", 3, "4", true, map[string]any{"method": "InPlaceIfPossible"})
	before := childObjects(t, c, w)
	x := watchChildren(t, w, before)
	mergePatch(t, c, w, `{"spec":{"template":{"data":{"size":"8"}}}}`)
	rolledOutInPlace(t, c, w, before, "8")
	if fewest, most := x.bounds(); fewest != 3 || most != 3 || s.mostCycling() != 0 {
		t.Errorf("a hot-add rollout had %d to %d children (3 wanted) and cycled %d at once (0 wanted)", fewest, most, s.mostCycling())
	}
}

// TestInPlace_PowerCycle: a size lowered needs a power cycle, made one
// child at a time within MaxUnavailable 1.
func TestInPlace_PowerCycle(t *testing.T) {
	c, ns, s := startResizable(t)
	w := resizableWidget(t, c, ns, "cold", 3, "8", true, map[string]any{"method": "InPlaceIfPossible", "maxUnavailable": int64(1), "maxSurge": int64(0)})
	before := childObjects(t, c, w)
	mergePatch(t, c, w, `{"spec":{"template":{"data":{"size":"4"}}}}`)
	rolledOutInPlace(t, c, w, before, "4")
	if n := s.mostCycling(); n != 1 {
		t.Errorf("cycled %d children at once, want 1 (MaxUnavailable 1)", n)
	}
}

// TestInPlace_OnlyHolds: under InPlaceOnly, a change that needs a power
// cycle with MaxUnavailable 0 holds the rollout, which says why, and
// replaces nothing.
func TestInPlace_OnlyHolds(t *testing.T) {
	c, ns, _ := startResizable(t)
	w := resizableWidget(t, c, ns, "only", 2, "8", true, map[string]any{"method": "InPlaceOnly"})
	before := childObjects(t, c, w)
	mergePatch(t, c, w, `{"spec":{"template":{"data":{"size":"4"}}}}`)
	await(t, "RolledOut names InPlaceOnly and the size lowered", func() bool {
		got := emptyWidget()
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(w), got); err != nil {
			return false
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, cd := range conds {
			m, _ := cd.(map[string]any)
			msg, _ := m["message"].(string)
			if m["type"] == kube.ConditionRolledOut && strings.Contains(msg, "InPlaceOnly") &&
				strings.Contains(msg, "size lowered from 8 to 4") {
				return true
			}
		}
		return false
	})
	// The pass that wrote the hold replaced nothing.
	if got, want := uidsOf(childObjects(t, c, w)), uidsOf(before); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("InPlaceOnly replaced children: UIDs %v, were %v", got, want)
	}
	for _, cm := range childObjects(t, c, w) {
		if cm.Data["size"] != "8" || cm.Data["running"] != "8" {
			t.Errorf("%s was changed: %v", cm.Name, cm.Data)
		}
	}
}
