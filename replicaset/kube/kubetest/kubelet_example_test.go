package kubetest_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/replicaset/kube/kubetest"
)

// passer returns a function that runs one pass of r for pool and reads
// pool back, as NewFakeClient's example does.
func passer(ctx context.Context, r *kube.Reconciler[*Pool, *corev1.Pod], c client.Client, pool *Pool) func() {
	return func() {
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pool)}); err != nil {
			fmt.Println(err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
			fmt.Println(err)
		}
	}
}

// Play the kubelet for every Pod of a Pool that is not ready: no kubelet
// runs the Pods a test's operator makes, so they stay pending until the
// test marks them ready, when it chooses to.
func ExampleMarkPodsReady() {
	ctx := context.Background()
	r := newReconciler(newScheme())
	pool := newPool("pool", 2)
	c, err := kubetest.NewFakeClient(r, "pool", pool)
	if err != nil {
		fmt.Println(err)
		return
	}
	pass := passer(ctx, r, c, pool)
	pass() // creates pool-0 and pool-1
	pass() // counts them
	fmt.Printf("%d of %d ready\n", pool.Status.ReadyReplicas, pool.Status.Replicas)

	marked, err := kubetest.MarkPodsReady(ctx, c, pool)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("marked ready:", marked)
	pass()
	fmt.Printf("%d of %d ready\n", pool.Status.ReadyReplicas, pool.Status.Replicas)
	// Output:
	// 0 of 2 ready
	// marked ready: [pool-0 pool-1]
	// 2 of 2 ready
}

// Play the kubelet for one Pod: a test that decides the order in which
// Pods become ready marks them one at a time.
func ExampleMarkPodReady() {
	ctx := context.Background()
	r := newReconciler(newScheme())
	pool := newPool("pool", 2)
	c, err := kubetest.NewFakeClient(r, "pool", pool)
	if err != nil {
		fmt.Println(err)
		return
	}
	pass := passer(ctx, r, c, pool)
	pass()

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pool-1"}}
	if err := kubetest.MarkPodReady(ctx, c, pod); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(pod.Name, pod.Status.Phase, "ready:", kubetest.PodReady(pod))
	pass()
	fmt.Printf("%d of %d ready\n", pool.Status.ReadyReplicas, pool.Status.Replicas)
	// Output:
	// pool-1 Running ready: true
	// 1 of 2 ready
}

// Check a rollout's bounds with a watch of its Pods that does not rely on
// the operator: a Pool of 3 rolls to a new image under the default
// strategy, one surge Pod and none unavailable, the test playing the
// kubelet after each pass. The watch saw at most 4 Pods and never fewer
// than 3 ready. On an API server the operator runs in a manager and the
// test marks Pods ready as they appear; the watch is the same.
func ExampleWatchBounds() {
	ctx := context.Background()
	r := newReconciler(newScheme())
	pool := newPool("pool", 3)
	c, err := kubetest.NewFakeClient(r, "pool", pool)
	if err != nil {
		fmt.Println(err)
		return
	}
	pass := passer(ctx, r, c, pool)
	pass()
	if _, err := kubetest.MarkPodsReady(ctx, c, pool); err != nil {
		fmt.Println(err)
		return
	}
	pass()

	w, err := kubetest.WatchBounds(ctx, c, pool, &corev1.PodList{}, kubetest.PodReady)
	if err != nil {
		fmt.Println(err)
		return
	}
	pool.Spec.Template.Spec.Containers[0].Image = "busybox:1.37"
	if err := c.Update(ctx, pool); err != nil {
		fmt.Println(err)
		return
	}
	for range 20 {
		pass()
		if meta.IsStatusConditionTrue(pool.Status.Conditions, kube.ConditionRolledOut) {
			break
		}
		if _, err := kubetest.MarkPodsReady(ctx, c, pool); err != nil {
			fmt.Println(err)
			return
		}
	}
	bounds, err := w.Stop(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(meta.FindStatusCondition(pool.Status.Conditions, kube.ConditionRolledOut).Reason)
	fmt.Println(bounds)
	// Output:
	// RolloutComplete
	// most live 4, fewest ready 3
}
