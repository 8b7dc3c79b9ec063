package kube_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// healthyWidgets is the Widget adapter with a health check: a ConfigMap
// whose data says health: bad is unhealthy (the tests' stand-in for a
// guest whose heartbeat stopped).
type healthyWidgets struct{ widgets }

var _ kube.HealthChecker[*corev1.ConfigMap] = healthyWidgets{}

func (healthyWidgets) CheckHealth(c *corev1.ConfigMap) (bool, string) {
	if c.Data["health"] == "bad" {
		return false, "HealthBad"
	}
	return true, ""
}

// TestHeal_ReplacesUnhealthyHoldsStorm: a Widget of 3 healing with an
// unhealthy window of 1s. One child turning bad is replaced by a new one,
// and the owner says so (an event Remediating naming it, RemediationAllowed
// True). Then, with MaxUnhealthy 1, two of the three turning bad is a
// storm: RemediationAllowed says TooManyUnhealthy, and nothing is replaced
// for seconds after their window ended; once they are good again,
// remediation is allowed again.
func TestHeal_ReplacesUnhealthyHoldsStorm(t *testing.T) {
	reg := prometheus.NewRegistry()
	c, ns := startManagerWith(t, func(r *reconciler, _ ctrl.Manager) {
		r.Adapter = healthyWidgets{}
		m, err := kube.NewMetrics(reg)
		if err != nil {
			t.Error(err)
		}
		r.Metrics = m
	})
	ctx := t.Context()
	w := widget(ns, "heal", 3)
	// The start-up window is long: a replacement that a busy machine takes
	// more than a moment to make healthy is not what is tested here, and
	// must not be replaced in turn.
	_ = unstructured.SetNestedMap(w.Object, map[string]any{"unhealthyWindowSeconds": int64(1), "startupWindowSeconds": int64(3600)},
		"spec", "remediation")
	createObject(t, c, w)
	live := converge(t, c, w, 3)
	waitHealthy(t, c, ns, live)

	sick := live[1]
	setHealth(t, c, ns, sick, "bad")
	var now []string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		now, _ = children(t, c, w)
		return len(now) == 3 && !slices.Contains(now, sick), nil
	})
	if err != nil {
		t.Fatalf("%s, unhealthy, was not replaced: children %v", sick, now)
	}
	waitEvents(t, c, w, "Remediating")
	// The status of a pass before the replacement may still show; the
	// one after says the set is healthy again.
	var st, reason, msg string
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		st, reason, msg = condition(t, c, w, kube.ConditionRemediationAllowed)
		return st == "True" && reason == kube.ConditionRemediationAllowed && strings.HasPrefix(msg, "0 unhealthy"), nil
	})
	if err != nil {
		t.Errorf("RemediationAllowed is %s/%s %q once the child is replaced, want True/RemediationAllowed with 0 unhealthy", st, reason, msg)
	}
	live = converge(t, c, w, 3)
	waitHealthy(t, c, ns, live)
	if n := labelCounter(t, reg, "replicakit_remediations_total", "action", "replace"); n != 1 {
		t.Errorf("replicakit_remediations_total{action=replace} is %v after one replacement, want 1", n)
	}

	// A storm: two of three unhealthy, more than MaxUnhealthy. The window
	// is an hour until the set sees both, so that a pass between the two
	// writes cannot remediate the first; then it is 1s again.
	patch := []byte(`{"spec":{"remediation":{"maxUnhealthy":1,"unhealthyWindowSeconds":3600}}}`)
	if err := c.Patch(ctx, w, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	setHealth(t, c, ns, live[0], "bad")
	setHealth(t, c, ns, live[1], "bad")
	waitCondition(t, c, w, kube.ConditionRemediationAllowed, "False", replicaset.HoldTooManyUnhealthy.String())
	patch = []byte(`{"spec":{"remediation":{"unhealthyWindowSeconds":1}}}`)
	if err := c.Patch(ctx, w, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	msg = waitCondition(t, c, w, kube.ConditionRemediationAllowed, "False", replicaset.HoldTooManyUnhealthy.String())
	if !strings.Contains(msg, "2 unhealthy") {
		t.Errorf("TooManyUnhealthy says %q, want 2 unhealthy", msg)
	}
	if n, _, _ := unstructured.NestedInt64(get(t, c, w).Object, "status", "unhealthyReplicas"); n != 2 {
		t.Errorf("status.unhealthyReplicas is %d in the storm, want 2", n)
	}
	// The window (1s) ends; for 3s more, nothing may be replaced.
	deadline := time.Now().Add(4 * time.Second)
	for time.Now().Before(deadline) {
		now, deleting := children(t, c, w)
		slices.Sort(now)
		if deleting > 0 || !slices.Equal(now, sorted(live)) {
			t.Fatalf("in the storm, children went from %v to %v (%d deleting)", live, now, deleting)
		}
		if s, r, _ := condition(t, c, w, kube.ConditionRemediationAllowed); s != "False" || r != replicaset.HoldTooManyUnhealthy.String() {
			t.Fatalf("in the storm, RemediationAllowed is %s/%s, want False/TooManyUnhealthy", s, r)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Two objects cannot turn good at once: a pass between the two
	// patches sees the storm over and one child unhealthy, whose window
	// then runs again from the storm's end (1 s here); a busy machine may
	// let it pass before the second patch. So the end is only:
	// remediation allowed, 3 children.
	setHealth(t, c, ns, live[0], "good")
	setHealth(t, c, ns, live[1], "good")
	waitCondition(t, c, w, kube.ConditionRemediationAllowed, "True", kube.ConditionRemediationAllowed)
	converge(t, c, w, 3)
}

// labelCounter reads the counter family's value whose label name has value
// (summed over its other labels) from reg; 0 when there is none.
func labelCounter(t *testing.T, reg prometheus.Gatherer, family, name, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != family {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == name && l.GetValue() == value {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// setHealth sets the data key health of the ConfigMap ns/name.
func setHealth(t *testing.T, c client.Client, ns, name, health string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	patch := []byte(`{"data":{"health":"` + health + `"}}`)
	if err := c.Patch(context.Background(), cm, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
}

// waitHealthy waits until each of names carries a health annotation
// saying it has been healthy.
func waitHealthy(t *testing.T, c client.Client, ns string, names []string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			var cm corev1.ConfigMap
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, &cm); err != nil {
				return false, err
			}
			if last = cm.Annotations[kube.AnnotationHealth]; !strings.Contains(last, `"healthy":true`) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("children %v not all recorded healthy (last %s=%q): %v", names, kube.AnnotationHealth, last, err)
	}
}

// get reads w from the API server.
func get(t *testing.T, c client.Client, w *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got := emptyWidget()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(w), got); err != nil {
		t.Fatal(err)
	}
	return got
}

// sorted returns a sorted copy of s.
func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// restartingWidgets is healthyWidgets that restarts children, recording
// each restart by name.
type restartingWidgets struct {
	healthyWidgets
	mu       *sync.Mutex
	restarts map[string]int
}

var _ kube.Restarter[*unstructured.Unstructured, *corev1.ConfigMap] = restartingWidgets{}

func (a restartingWidgets) Restart(_ context.Context, _ *unstructured.Unstructured, c *corev1.ConfigMap) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.restarts[c.Name]++
	return nil
}

func (a restartingWidgets) count(name string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.restarts[name]
}

// TestHeal_RestartAskedFor: with Restart, a child annotated remediate is
// restarted once by the Adapter, not replaced; the binding records the
// restart in the child's health, removes the annotation, and says so in
// an event Restarting.
func TestHeal_RestartAskedFor(t *testing.T) {
	a := restartingWidgets{mu: &sync.Mutex{}, restarts: map[string]int{}}
	reg := prometheus.NewRegistry()
	c, ns := startManagerWith(t, func(r *reconciler, _ ctrl.Manager) {
		r.Adapter = a
		m, err := kube.NewMetrics(reg)
		if err != nil {
			t.Error(err)
		}
		r.Metrics = m
	})
	ctx := t.Context()
	w := widget(ns, "restart", 3)
	_ = unstructured.SetNestedMap(w.Object, map[string]any{"restart": true, "unhealthyWindowSeconds": int64(1), "startupWindowSeconds": int64(2)},
		"spec", "remediation")
	createObject(t, c, w)
	live := converge(t, c, w, 3)
	waitHealthy(t, c, ns, live)

	annotate(t, c, ns, live[0], kube.AnnotationRemediate, "true")
	var cm corev1.ConfigMap
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: live[0]}, &cm); err != nil {
			return false, err
		}
		_, asked := cm.Annotations[kube.AnnotationRemediate]
		return a.count(live[0]) > 0 && !asked, nil
	})
	if err != nil {
		t.Fatalf("%s not restarted (%d restarts) or still annotated %v", live[0], a.count(live[0]), cm.Annotations)
	}
	waitEvents(t, c, w, "Restarting")
	// The child is healthy: the next pass records it healthy again.
	waitHealthy(t, c, ns, live[:1])
	time.Sleep(time.Second)
	if n := a.count(live[0]); n != 1 {
		t.Errorf("%s restarted %d times, want 1", live[0], n)
	}
	if n := labelCounter(t, reg, "replicakit_remediations_total", "action", "restart"); n != 1 {
		t.Errorf("replicakit_remediations_total{action=restart} is %v, want 1", n)
	}
	if now, deleting := children(t, c, w); !slices.Equal(sorted(now), sorted(live)) || deleting > 0 {
		t.Errorf("a restart replaced children: %v (%d deleting), want %v", now, deleting, live)
	}
}
