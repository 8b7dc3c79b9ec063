package kubetest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/replicaset/kube/kubetest"
)

// The healing Pool's windows: long enough to start up that a busy
// machine marks a new Pod ready within it (a Pod not ready by then is
// replaced), and a short unhealthy window, which the storm outlasts.
const (
	startupWindow = 8 * time.Second
	healWindow    = 3 * time.Second
)

// healingAdapter is the Pool's Adapter with self-healing, as an importer
// adds it: kube.PodHealth embedded for the health check, and
// Spec.Remediation with short windows.
type healingAdapter struct {
	poolAdapter
	kube.PodHealth
}

var _ kube.HealthChecker[*corev1.Pod] = healingAdapter{}

func (a healingAdapter) Spec(p *Pool) (kube.Spec, error) {
	s, err := a.poolAdapter.Spec(p)
	s.Remediation = &replicaset.Remediation{StartupWindow: startupWindow, UnhealthyWindow: healWindow}
	return s, err
}

// TestPoolHealsUnderRBAC is the importer's healing test on a real API
// server, with the operator running as a service account under exactly
// the ClusterRole its markers generate (ServiceAccountConfig): a Pod whose
// image is never pulled (MarkPodPending ImagePullBackOff) never starts,
// and is replaced once the start-up window from its creation ends; then
// two of three Pods crash-loop (MarkPodCrashLooping), more than the
// default storm guard (40% of 3 is 1) allows, so none is replaced, even
// once the third crashes too after their unhealthy windows ended; and
// once they run again, remediation is allowed again.
func TestPoolHealsUnderRBAC(t *testing.T) {
	admin := rbacEnv(t)
	ctx := t.Context()
	ac, err := client.New(admin, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := kubetest.ServiceAccountConfig(ctx, admin, "default", "pool-healer", poolRole)
	if err != nil {
		t.Fatal(err)
	}
	mgr := rbacManager(t, cfg)
	r := newReconciler(mgr.GetScheme())
	r.Adapter = healingAdapter{}
	if err := r.SetupWithManager(mgr, "pool-heal"); err != nil {
		t.Fatal(err)
	}
	startManager(t, mgr)

	pool := newPool("heal", 3)
	if err := ac.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	pods := awaitPods(t, ac, pool, "3 Pods", func(ps []corev1.Pod) bool { return len(ps) == 3 })
	for _, p := range pods[:2] {
		if err := kubetest.MarkPodReady(ctx, ac, &p); err != nil {
			t.Fatal(err)
		}
	}
	stuck := pods[2]
	if err := kubetest.MarkPodPending(ctx, ac, &stuck, "ImagePullBackOff"); err != nil {
		t.Fatal(err)
	}

	// The stuck Pod is replaced by one of another UID, the others kept.
	kept := map[string]bool{string(pods[0].UID): true, string(pods[1].UID): true}
	pods = awaitPods(t, ac, pool, "the Pod stuck in ImagePullBackOff replaced", func(ps []corev1.Pod) bool {
		return len(ps) == 3 && !slices.ContainsFunc(ps, func(p corev1.Pod) bool { return p.UID == stuck.UID })
	})
	var fresh []corev1.Pod
	for _, p := range pods {
		if !kept[string(p.UID)] {
			fresh = append(fresh, p)
		}
	}
	if len(fresh) != 1 {
		t.Fatalf("%d new Pods (%s), want the stuck Pod's replacement alone", len(fresh), podStates(fresh))
	}
	// Not before the window from the stuck Pod's creation ended (to the
	// second, as the API server stamps creations).
	if due := stuck.CreationTimestamp.Add(startupWindow - time.Second); fresh[0].CreationTimestamp.Time.Before(due) {
		t.Errorf("the replacement was made at %v, before the start-up window of %v from %v ended", fresh[0].CreationTimestamp, startupWindow, stuck.CreationTimestamp)
	}
	if err := kubetest.MarkPodReady(ctx, ac, &fresh[0]); err != nil {
		t.Fatal(err)
	}
	awaitCondition(t, ac, pool, "remediation allowed with 3 ready", func(c metav1.Condition, st PoolStatus) bool {
		return c.Status == metav1.ConditionTrue && st.ReadyReplicas == 3
	})

	// A storm: two of three crash-loop, more than 40% of 3.
	pods = awaitPods(t, ac, pool, "3 Pods", func(ps []corev1.Pod) bool { return len(ps) == 3 })
	uids := map[string]bool{}
	for _, p := range pods {
		uids[string(p.UID)] = true
	}
	for _, p := range pods[:2] {
		if err := kubetest.MarkPodCrashLooping(ctx, ac, &p); err != nil {
			t.Fatal(err)
		}
	}
	crashed := time.Now()
	awaitCondition(t, ac, pool, "the storm guard holding 2", func(c metav1.Condition, _ PoolStatus) bool {
		return c.Reason == "TooManyUnhealthy" && strings.HasPrefix(c.Message, "2 unhealthy") && strings.Contains(c.Message,
			"more than the 1 spec.remediation.maxUnhealthy allows (40% of 3 is 1, its default)")
	})
	// The storm is in the owner's remediation history: the service
	// account may patch the owner (a role without it fails here).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var got Pool
		if err := ac.Get(ctx, client.ObjectKeyFromObject(pool), &got); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(got.Annotations[kube.AnnotationRemediationHistory], `"storming":true`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the storm is not in %s after 30s: %v", kube.AnnotationRemediationHistory, got.Annotations)
		}
	}
	// Make the moment: once their unhealthy windows have ended, the third
	// crashes too, and the pass that counts 3 unhealthy is one after the
	// windows; it replaced none.
	time.Sleep(time.Until(crashed.Add(healWindow + time.Second)))
	if err := kubetest.MarkPodCrashLooping(ctx, ac, &pods[2]); err != nil {
		t.Fatal(err)
	}
	awaitCondition(t, ac, pool, "the storm guard holding 3", func(c metav1.Condition, _ PoolStatus) bool {
		return c.Reason == "TooManyUnhealthy" && strings.HasPrefix(c.Message, "3 unhealthy")
	})
	for _, p := range awaitPods(t, ac, pool, "3 Pods", func(ps []corev1.Pod) bool { return len(ps) == 3 }) {
		if !uids[string(p.UID)] {
			t.Errorf("Pod %s was replaced during the storm", p.Name)
		}
	}

	// They run again: the storm is over, nothing was replaced.
	for _, p := range pods {
		if err := kubetest.MarkPodReady(ctx, ac, &p); err != nil {
			t.Fatal(err)
		}
	}
	awaitCondition(t, ac, pool, "remediation allowed again", func(c metav1.Condition, st PoolStatus) bool {
		return c.Status == metav1.ConditionTrue && st.ReadyReplicas == 3
	})
	for _, p := range awaitPods(t, ac, pool, "3 Pods", func(ps []corev1.Pod) bool { return len(ps) == 3 }) {
		if !uids[string(p.UID)] {
			t.Errorf("Pod %s was replaced after the storm", p.Name)
		}
	}
}

// awaitPods polls pool's live Pods, by name, until ok holds of them, for
// up to 30 seconds.
func awaitPods(t *testing.T, c client.Client, pool *Pool, what string, ok func([]corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	var live []corev1.Pod
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var pods corev1.PodList
		if err := c.List(context.Background(), &pods, client.InNamespace(pool.Namespace), client.MatchingLabels(pool.Spec.Selector.MatchLabels)); err != nil {
			t.Fatal(err)
		}
		live = slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
		slices.SortFunc(live, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
		if ok(live) {
			return live
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not %s after 30s: %s", pool.Name, what, podStates(live))
		}
	}
}

// awaitCondition polls pool until ok holds of its RemediationAllowed
// condition and its status, for up to 30 seconds.
func awaitCondition(t *testing.T, c client.Client, pool *Pool, what string, ok func(metav1.Condition, PoolStatus) bool) {
	t.Helper()
	var got Pool
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(pool), &got); err != nil {
			t.Fatal(err)
		}
		if cond := meta.FindStatusCondition(got.Status.Conditions, kube.ConditionRemediationAllowed); cond != nil && ok(*cond, got.Status) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not %s after 30s: %+v", pool.Name, what, got.Status)
		}
	}
}

// podStates says of each Pod its name, UID and phase, for failures.
func podStates(pods []corev1.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, fmt.Sprintf("%s(%s, %s)", p.Name, p.UID, p.Status.Phase))
	}
	return strings.Join(out, " ")
}
