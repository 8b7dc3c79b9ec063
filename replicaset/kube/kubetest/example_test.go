package kubetest_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/replicakit/replicakit/replicaset/kube/kubetest"
)

// Run an operator's passes one at a time on a fake client: the first
// creates the Pool's Pods, the next, seeing them, reports status; after a
// scale-down, a pass deletes the highest ordinals. Pool, its Adapter and
// newReconciler are this package's test code: an importer's own types and
// Reconciler go there.
func ExampleNewFakeClient() {
	ctx := context.Background()
	r := newReconciler(newScheme())
	pool := newPool("pool", 3)
	c, err := kubetest.NewFakeClient(r, "pool", pool)
	if err != nil {
		fmt.Println(err)
		return
	}
	pass := func() {
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pool)}); err != nil {
			fmt.Println(err)
		}
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace("default")); err != nil {
			fmt.Println(err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
			fmt.Println(err)
		}
		var names []string
		for _, p := range pods.Items {
			names = append(names, p.Name)
		}
		fmt.Printf("Pods %v, status.replicas %d\n", names, pool.Status.Replicas)
	}
	pass()
	pass()

	pool.Spec.Replicas = 1
	if err := c.Update(ctx, pool); err != nil {
		fmt.Println(err)
		return
	}
	pass()
	pass()
	// Output:
	// Pods [pool-0 pool-1 pool-2], status.replicas 0
	// Pods [pool-0 pool-1 pool-2], status.replicas 3
	// Pods [pool-0], status.replicas 3
	// Pods [pool-0], status.replicas 1
}
