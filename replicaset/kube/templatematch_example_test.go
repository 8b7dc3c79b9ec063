package kube_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/replicaset/kube/kubetest"
)

// rollingPools is the package example's Adapter with rollouts on and a
// TemplateMatcher. A Pod's spec as the API server keeps it never equals
// its template whole (the server fills in defaults, the scheduler the
// node), so it compares what this operator's templates change: the
// containers' images.
type rollingPools struct{ poolAdapter }

var _ kube.TemplateMatcher[*WorkerPool, *corev1.Pod] = rollingPools{}

func (a rollingPools) Spec(p *WorkerPool) (kube.Spec, error) {
	s, err := a.poolAdapter.Spec(p)
	s.Rollout = &replicaset.Strategy{} // one surge Pod, none unavailable
	return s, err
}

func (rollingPools) MatchesTemplate(p *WorkerPool, pod *corev1.Pod) bool {
	return slices.Equal(images(pod.Spec), images(p.Spec.Template.Spec))
}

// ready is the status of a Pod the kubelet runs and finds ready.
func ready() corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Minute))}}}
}

func images(s corev1.PodSpec) []string {
	var out []string
	for _, c := range s.Containers {
		out = append(out, c.Image)
	}
	return out
}

// A pool whose template changed to worker:2 while its operator did not
// roll (rollouts off, or a replicakit without them) still runs two Pods of
// worker:1, ready, with no revision label. The Adapter's TemplateMatcher says
// they do not match, so they count as on an older revision and are rolled,
// one surge Pod at a time; without it they would be labelled as current
// and RolledOut would say True on worker:1. Passes run on a fake client,
// and after each the test marks every Pod ready, as the kubelet would.
func ExampleTemplateMatcher() {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	scheme.AddKnownTypes(poolGV, &WorkerPool{}, &WorkerPoolList{})
	metav1.AddToGroupVersion(scheme, poolGV)

	labels := map[string]string{"pool": "web"}
	pod := func(image string) corev1.PodSpec {
		return corev1.PodSpec{Containers: []corev1.Container{{Name: "worker", Image: image}}}
	}
	pool := &WorkerPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-web"},
		Spec: WorkerPoolSpec{Replicas: 2, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod("worker:2")}},
	}
	ref := metav1.OwnerReference{APIVersion: poolGV.String(), Kind: "WorkerPool", Name: "web", UID: "uid-web", Controller: ptr.To(true)}
	objs := []client.Object{pool}
	for _, name := range []string{"web-0", "web-1"} {
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{ref}}, Spec: pod("worker:1"), Status: ready()})
	}

	r := &kube.Reconciler[*WorkerPool, *corev1.Pod]{
		Scheme:  scheme,
		Adapter: rollingPools{},
		Naming:  kube.OrdinalNames,
	}
	c, err := kubetest.NewFakeClient(r, "workerpool", objs...)
	if err != nil {
		fmt.Println(err)
		return
	}
	for pass := 1; pass <= 20; pass++ {
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pool)}); err != nil {
			fmt.Println(err)
			return
		}
		var pods corev1.PodList
		if err := c.List(ctx, &pods); err != nil {
			fmt.Println(err)
			return
		}
		var line []string
		for i := range pods.Items {
			p := &pods.Items[i]
			labelled := "unlabelled"
			if p.Labels[kube.RevisionLabel] != "" {
				labelled = "labelled"
			}
			line = append(line, fmt.Sprintf("%s %s", p.Spec.Containers[0].Image, labelled))
			if p.Status.Phase != corev1.PodRunning {
				p.Status = ready()
				_ = c.Status().Update(ctx, p)
			}
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
			fmt.Println(err)
			return
		}
		rolled := meta.FindStatusCondition(pool.Status.Conditions, kube.ConditionRolledOut)
		if pass == 1 {
			fmt.Println("first pass:", strings.Join(line, ", "))
		}
		if rolled != nil && rolled.Status == metav1.ConditionTrue {
			fmt.Println("rolled out:", strings.Join(line, ", "))
			fmt.Println("RolledOut", rolled.Status, rolled.Reason)
			return
		}
	}
	// Output:
	// first pass: worker:1 unlabelled, worker:1 unlabelled, worker:2 labelled
	// rolled out: worker:2 labelled, worker:2 labelled
	// RolledOut True RolloutComplete
}
