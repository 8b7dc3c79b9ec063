package kube_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/widgetkind"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/replicaset/kube/kubetest"
)

// podWidgets adapts the Widget kind as the owner of Pods, whose one
// container runs the template's data.image: Pods are what a rollout
// waits on, ready only when the test, playing the kubelet, says so.
type podWidgets struct{}

var _ kube.Adapter[*unstructured.Unstructured, *corev1.Pod] = podWidgets{}

func (podWidgets) Spec(w *unstructured.Unstructured) (kube.Spec, error) { return widgetkind.Spec(w) }

func (podWidgets) NewChild(w *unstructured.Unstructured) (*corev1.Pod, error) {
	l, err := widgetkind.TemplateLabels(w)
	if err != nil {
		return nil, err
	}
	data, err := widgetkind.TemplateData(w)
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: corev1.PodSpec{
		AutomountServiceAccountToken: ptr.To(false),
		Containers:                   []corev1.Container{{Name: "app", Image: data["image"]}},
	}}, err
}

func (podWidgets) Describe(p *corev1.Pod, r *replicaset.Replica) {
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

func (podWidgets) SetStatus(w *unstructured.Unstructured, s kube.Status) { widgetkind.SetStatus(w, s) }

// startPodManager runs a manager with the Widget reconciler over Pods
// until the test ends, and returns a namespace of the test's own, the only
// one the manager sees (the Widgets other tests leave are not its own).
func startPodManager(t *testing.T) (client.WithWatch, string) {
	t.Helper()
	return startPodWidgets(t, podWidgets{}, "podwidget")
}

// startPodWidgets runs a manager with a reconciler of Widgets over Pods
// through adapter, under the controller name name, until the test ends,
// seeing only a namespace of the test's own, which it returns with a
// client that watches; edit may change the manager's options further.
func startPodWidgets(t *testing.T, adapter kube.Adapter[*unstructured.Unstructured, *corev1.Pod], name string, edit ...func(*ctrl.Options)) (client.WithWatch, string) {
	t.Helper()
	e := env.Require(t)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ns := fmt.Sprintf("t-%d", time.Now().UnixNano())
	createObject(t, e.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	e.StartManager(t, scheme, func(mgr ctrl.Manager) error {
		r := &kube.Reconciler[*unstructured.Unstructured, *corev1.Pod]{Adapter: adapter, OwnerKind: testenv.WidgetGVK}
		return r.SetupWithManager(mgr, name)
	}, append([]func(*ctrl.Options){testenv.OnlyNamespace(ns)}, edit...)...)
	c, err := client.NewWithWatch(e.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c, ns
}

// TestRollout_ConditionsAtEveryStep rolls a Widget's 3 Pods to a new
// image under the default strategy (one surge Pod, none unavailable),
// without zones and over zones a and b, and records every distinct set of
// conditions the Widget passes through, from a watch of it. The test
// plays the kubelet: it makes each new Pod ready only once the Widget's
// status shows the surge Pod up and not ready, so every moment of the
// rollout, the surge held included, is reached and published. A healthy
// rollout pages no one: no set says Ready=False, ZonesBalanced=False,
// ScalingDown=True (there is no scale-down) or RolledOut=False
// RolloutHeld (waiting for the surge Pod is progress), and the surge says
// RolloutSurge. While the rollout waits on the surge Pod no pass runs
// (nothing changes until a Pod does), and an independent watch of the
// Pods holds the bounds: at most 4 live, never fewer than 3 ready.
//
// Before RolloutSurge, every held surge said Ready=False TooManyReplicas
// and ScalingDown=True Scaling, over zones a and b ZonesBalanced=False
// PerPassCap (nothing capped), and a pass ran every millisecond.
func TestRollout_ConditionsAtEveryStep(t *testing.T) {
	for _, zones := range [][]string{nil, {"a", "b"}} {
		t.Run(fmt.Sprintf("zones %v", zones), func(t *testing.T) { rollAndRecord(t, zones) })
	}
}

func rollAndRecord(t *testing.T, zones []string) {
	c, ns := startPodManager(t)
	ctx := t.Context()
	w := widget(ns, "web", 3)
	spec := w.Object["spec"].(map[string]any)
	spec["strategy"] = map[string]any{}
	spec["template"].(map[string]any)["data"] = map[string]any{"image": "app:v1"}
	if zones != nil {
		spec["zones"] = []any{zones[0], zones[1]}
	}
	createObject(t, c, w)
	awaitWidget(t, c, w, "3 Pods", func(st map[string]any) bool { return st["replicas"] == int64(3) })
	if _, err := kubetest.MarkPodsReady(ctx, c, w); err != nil {
		t.Fatal(err)
	}
	awaitWidget(t, c, w, "3 ready, rolled out", func(st map[string]any) bool {
		return st["readyReplicas"] == int64(3) && conditionIs(st, kube.ConditionRolledOut, "True", kube.ReasonRolloutComplete)
	})

	log := recordConditions(t, c, w)
	bounds, err := kubetest.WatchBounds(ctx, c, w, &corev1.PodList{}, kubetest.PodReady)
	if err != nil {
		t.Fatal(err)
	}
	mergePatch(t, c, w, `{"spec":{"template":{"data":{"image":"app:v2"}}}}`)
	for round := int64(1); round <= 3; round++ {
		// The surge Pod is up and not ready, and the status says so:
		// the rollout is held on it.
		awaitWidget(t, c, w, fmt.Sprintf("round %d: the surge Pod up, not ready", round), func(st map[string]any) bool {
			return st["replicas"] == int64(4) && st["readyReplicas"] == int64(3) && st["updatedReplicas"] == round &&
				st["observedGeneration"] == w.GetGeneration()
		})
		if round == 1 {
			// Held, the rollout has nothing to do until the Pod is
			// ready, which a watch event will say: no pass should run
			// meanwhile (the binding used to run one every millisecond).
			before := passes(t)
			time.Sleep(500 * time.Millisecond)
			n := int(passes(t) - before)
			t.Logf("%d passes while the rollout waited 500 ms on the surge Pod", n)
			if n > 10 {
				t.Errorf("%d passes in the 500 ms the rollout waited on the surge Pod, with nothing to do", n)
			}
		}
		pending := notReadyPods(t, c, w)
		if len(pending) != 1 {
			t.Fatalf("round %d: Pods not ready %v, want the surge Pod alone", round, pending)
		}
		if err := kubetest.MarkPodReady(ctx, c, &pending[0]); err != nil {
			t.Fatal(err)
		}
	}
	awaitWidget(t, c, w, "rolled out to app:v2", func(st map[string]any) bool {
		return st["replicas"] == int64(3) && st["readyReplicas"] == int64(3) && st["updatedReplicas"] == int64(3) &&
			conditionIs(st, kube.ConditionRolledOut, "True", kube.ReasonRolloutComplete)
	})
	stop, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	b, err := bounds.Stop(stop)
	if err != nil {
		t.Fatal(err)
	}
	if b.MostLive > 4 || b.FewestReady < 3 {
		t.Errorf("the watch of the Pods saw %v; want at most 4 live and at least 3 ready (3 desired, MaxSurge 1, MaxUnavailable 0)", b)
	}

	sets := log.stop(t, c, w)
	var seen []string
	for _, set := range sets {
		t.Logf("%s", set)
		for _, bad := range []string{"Ready=False", "ZonesBalanced=False", "ScalingDown=True", "RolledOut=False RolloutHeld"} {
			if strings.Contains(set, bad) {
				t.Errorf("a healthy rollout said %s: %s", bad, set)
			}
		}
		seen = append(seen, strings.Split(set, ", ")...)
	}
	want := []string{"ScalingDown=False RolloutSurge", "Ready=True RolloutSurge"}
	if zones != nil {
		want = append(want, "ZonesBalanced=True RolloutSurge")
	}
	for _, c := range want {
		if !slices.Contains(seen, c) {
			t.Errorf("no set said %s", c)
		}
	}
}

// passes is how many passes the podwidget controllers ran, by
// controller-runtime's count.
func passes(t *testing.T) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == "podwidget" {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// awaitWidget polls w's status until ok holds, or fails t after 30 s.
func awaitWidget(t *testing.T, c client.Client, w *unstructured.Unstructured, what string, ok func(status map[string]any) bool) {
	t.Helper()
	var st map[string]any
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got := emptyWidget()
		if err := c.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
			return false, err
		}
		w.SetGeneration(got.GetGeneration())
		st, _, _ = unstructured.NestedMap(got.Object, "status")
		return st != nil && ok(st), nil
	})
	if err != nil {
		t.Fatalf("never %s: status %v", what, st)
	}
}

// conditionIs reports whether status holds condition typ with the status
// and reason.
func conditionIs(status map[string]any, typ, s, reason string) bool {
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == typ {
			return m["status"] == s && m["reason"] == reason
		}
	}
	return false
}

// notReadyPods lists w's live Pods that are not ready.
func notReadyPods(t *testing.T, c client.Client, w *unstructured.Unstructured) []corev1.Pod {
	t.Helper()
	var l corev1.PodList
	if err := c.List(t.Context(), &l, client.InNamespace(w.GetNamespace())); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == w.GetUID() && p.DeletionTimestamp == nil && !kubetest.PodReady(&p) {
			out = append(out, p)
		}
	}
	return out
}

// conditionLog records, from a watch of one Widget, each distinct set of
// its conditions ("Ready=True RolloutSurge, ..."), in the order the Widget
// passed through them.
type conditionLog struct {
	mu     sync.Mutex
	sets   []string
	rv     string // of the last event
	cancel func()
	done   chan struct{}
}

func recordConditions(t *testing.T, c client.WithWatch, w *unstructured.Unstructured) *conditionLog {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	wi, err := c.Watch(ctx, widgetkind.EmptyList(), client.InNamespace(w.GetNamespace()),
		client.MatchingFields{"metadata.name": w.GetName()})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	l := &conditionLog{cancel: func() { cancel(); wi.Stop() }, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for ev := range wi.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || ev.Type == watch.Bookmark {
				continue
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			var parts []string
			for _, cd := range conds {
				m, _ := cd.(map[string]any)
				parts = append(parts, fmt.Sprintf("%s=%s %s", m["type"], m["status"], m["reason"]))
			}
			set := strings.Join(parts, ", ")
			l.mu.Lock()
			if len(l.sets) == 0 || l.sets[len(l.sets)-1] != set {
				l.sets = append(l.sets, set)
			}
			l.rv = u.GetResourceVersion()
			l.mu.Unlock()
		}
	}()
	t.Cleanup(func() { l.cancel(); <-l.done })
	return l
}

// stop waits until the log has seen the Widget as the API server holds it
// now, stops the watch, and returns the sets.
func (l *conditionLog) stop(t *testing.T, c client.Client, w *unstructured.Unstructured) []string {
	t.Helper()
	got := emptyWidget()
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(w), got); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.rv == got.GetResourceVersion(), nil
	})
	if err != nil {
		t.Fatalf("the watch of %s never saw resource version %s", w.GetName(), got.GetResourceVersion())
	}
	l.cancel()
	<-l.done
	return slices.Clone(l.sets)
}
