package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vmcheck"
	"github.com/replicakit/replicakit/internal/widgetkind"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// steady settles a Widget of n Pods, makes the binding reconcile it five
// more times (annotation changes), and returns the writes they caused.
func (b *bench) steady(ctx context.Context) (writes, error) {
	stop, _, err := b.startBinding(limit{qps: 1000, burst: 1000})
	if err != nil {
		return nil, err
	}
	defer stop()
	ns, pods, err := b.podNamespace(ctx, "steady")
	if err != nil {
		return nil, err
	}
	defer pods.close()
	if err := (widgetOwner{b}).create(ctx, ns, b.n); err != nil {
		return nil, err
	}
	if err := pods.await(ctx, b.n, 5*time.Minute); err != nil {
		return nil, err
	}
	time.Sleep(3 * time.Second)
	before, err := scrapeWrites(ctx, b.cs)
	if err != nil {
		return nil, err
	}
	for i := range 5 {
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"bench/nudge":"%d"}}}`, i)
		if err := b.c.Patch(ctx, widgetkind.New(ns, "kit", 0), client.RawPatch(types.MergePatchType, patch)); err != nil {
			return nil, err
		}
		time.Sleep(300 * time.Millisecond)
	}
	time.Sleep(3 * time.Second)
	after, err := scrapeWrites(ctx, b.cs)
	if err != nil {
		return nil, err
	}
	w := after.minus(before)
	delete(w, "widgets") // the five nudges
	return w, nil
}

// vms times 0→n VMs through the example operator on vcsim, against the same
// n clones made directly through the provider at its task concurrency.
func (b *bench) vms(ctx context.Context, n int) (line, error) {
	sim, err := vcsim.New()
	if err != nil {
		return line{}, err
	}
	defer sim.Close()
	p, err := vsphere.New(ctx, sim.Config())
	if err != nil {
		return line{}, err
	}
	defer p.Close(context.Background())
	stop, err := b.runManager(b.env.Config, vsphere.DefaultMaxTasks, func(mgr ctrl.Manager) error {
		return controllers.Setup(mgr, &controllers.VirtualMachineReconciler{Provider: p})
	})
	if err != nil {
		return line{}, err
	}
	defer stop()

	ns, err := b.namespace(ctx, "vms")
	if err != nil {
		return line{}, err
	}
	set := &vmv1.VirtualMachineReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bench"},
		Spec: vmv1.VirtualMachineReplicaSetSpec{
			Replicas: ptr.To(int32(n)),
			Selector: &vmv1.LabelSelector{MatchLabels: map[string]string{"app": "bench"}},
			Template: vmv1.VirtualMachineTemplate{Metadata: vmv1.TemplateMetadata{Labels: map[string]string{"app": "bench"}}},
		},
	}
	start := time.Now()
	if err := b.c.Create(ctx, set); err != nil {
		return line{}, err
	}
	var st vmcheck.State
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		st, err = vmcheck.Observe(ctx, b.c, sim.Config(), ns, "bench")
		return err == nil && st.Settled(n), nil
	}); err != nil {
		return line{}, fmt.Errorf("%d VMs: %v", n, st)
	}
	took := time.Since(start)

	raw, err := rawClones(ctx, n)
	if err != nil {
		return line{}, err
	}
	return line{what: fmt.Sprintf("0→%d VMs through the example operator (%v per VM)", n, (took / time.Duration(n)).Round(time.Millisecond)),
		kit: took, ref: raw, refName: fmt.Sprintf("%d provider clones, %d at a time", n, vsphere.DefaultMaxTasks), goal: "-"}, nil
}

// rawClones creates n powered-on VMs straight through the provider on a
// fresh simulator, DefaultMaxTasks at a time.
func rawClones(ctx context.Context, n int) (time.Duration, error) {
	sim, err := vcsim.New()
	if err != nil {
		return 0, err
	}
	defer sim.Close()
	p, err := vsphere.New(ctx, sim.Config())
	if err != nil {
		return 0, err
	}
	defer p.Close(context.Background())
	start := time.Now()
	sem := make(chan struct{}, vsphere.DefaultMaxTasks)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			_, err := p.Create(ctx, vmprovider.Spec{Name: fmt.Sprintf("raw-%d", i), Owner: vmprovider.Owner{UID: "bench"}, PowerOn: true})
			if err != nil {
				mu.Lock()
				first = err
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return time.Since(start), first
}
