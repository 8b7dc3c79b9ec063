package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// The hooks measurement: a set of hookReplicas VMs scaled to 0, with a
// drain hook that holds each VM exactly hookDrain from when it began to
// prepare, beside the same scale-down without hooks.
const (
	hookReplicas = 10
	hookDrain    = 5 * time.Second
)

// hookRun is one pair of timed scale-downs: without hooks, and with.
type hookRun struct {
	plain, hooked time.Duration
}

// extra is what the hooks added.
func (r hookRun) extra() time.Duration { return r.hooked - r.plain }

// hooks times runs pairs of scale-downs of hookReplicas VMs to 0 through
// the example operator, without hooks and with a drain hook of hookDrain,
// and prints each run and the spread over them: the extra time should be
// the hook's length once (the VMs drain in parallel), not a multiple of it.
func (b *bench) hooks(ctx context.Context, runs int) ([]row, error) {
	var rs []hookRun
	for i := range runs {
		var r hookRun
		var err error
		if r.plain, err = b.scaleDownOnce(ctx, false); err != nil {
			return nil, fmt.Errorf("hooks run %d, without hooks: %w", i+1, err)
		}
		if r.hooked, err = b.scaleDownOnce(ctx, true); err != nil {
			return nil, fmt.Errorf("hooks run %d, with a drain hook: %w", i+1, err)
		}
		rs = append(rs, r)
		fmt.Printf("  run %d: %d→0 without hooks %v, with a %v drain hook %v: extra %v (%.2f× the hook)\n",
			i+1, hookReplicas, ms(r.plain), hookDrain, ms(r.hooked), ms(r.extra()), float64(r.extra())/float64(hookDrain))
	}
	pick := func(f func(hookRun) time.Duration) []time.Duration {
		out := make([]time.Duration, len(rs))
		for i, r := range rs {
			out[i] = f(r)
		}
		return out
	}
	var ratios []float64
	for _, r := range rs {
		ratios = append(ratios, float64(r.extra())/float64(hookDrain))
	}
	fmt.Printf("  over %d runs, median [min–max]: without hooks %s, with %s, extra %s, extra ÷ hook %s\n", len(rs),
		spread(pick(func(r hookRun) time.Duration { return r.plain })), spread(pick(func(r hookRun) time.Duration { return r.hooked })),
		spread(pick(hookRun.extra)), spreadRatio(ratios))
	return []row{{what: fmt.Sprintf("%d→0 VMs with a %v drain hook (median of %d)", hookReplicas, hookDrain, len(rs)),
		took:    median(pick(func(r hookRun) time.Duration { return r.hooked })),
		ref:     median(pick(func(r hookRun) time.Duration { return r.plain })) + hookDrain,
		refName: fmt.Sprintf("the same without hooks, plus the hook's %v once", hookDrain), goal: "≈ 1, not ×10"}}, nil
}

// scaleDownOnce settles a set of hookReplicas VMs (with a drain hook when
// hooked), scales it to 0 and returns how long until vCenter holds none of
// its VMs. With hooked, a drainer in this process releases each VM
// hookDrain after the time it began to prepare (kube.AnnotationPreparing).
func (b *bench) scaleDownOnce(ctx context.Context, hooked bool) (time.Duration, error) {
	ns, err := b.ns.New(ctx, "hooks")
	if err != nil {
		return 0, err
	}
	op, err := b.startOperator(ctx, true, controllers.WatchedFields, ns)
	if err != nil {
		return 0, err
	}
	defer op.close()
	set := vmSet(ns, "set-000", hookReplicas)
	if hooked {
		set.Spec.Lifecycle = &vmv1.Lifecycle{PreDelete: []string{"drain"}, Timeout: &metav1.Duration{Duration: time.Hour}}
	}
	if err := b.c.Create(ctx, set); err != nil {
		return 0, err
	}
	if err := settleVMs(ctx, b, op.sim, ns, 1, hookReplicas); err != nil {
		return 0, err
	}
	start := time.Now()
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":0}}`))
	if err := b.c.Patch(ctx, set, patch); err != nil {
		return 0, err
	}
	hook := kube.PreDeleteHookAnnotation(controllers.HookDomain, "drain")
	err = pollFor(ctx, 5*time.Minute, func() (bool, error) {
		if hooked {
			if err := releaseDrained(ctx, b.c, ns, hook); err != nil {
				return false, err
			}
		}
		var vms vmv1.VirtualMachineList
		if err := b.c.List(ctx, &vms, client.InNamespace(ns)); err != nil || len(vms.Items) > 0 {
			return false, err
		}
		st, err := vmcheck.Observe(ctx, b.c, op.sim.Config(), ns, "")
		return err == nil && len(st.VCenter) == 0, nil
	})
	if err != nil {
		return 0, fmt.Errorf("%d→0 not done: %w", hookReplicas, err)
	}
	return time.Since(start), nil
}

// releaseDrained removes hook from each VirtualMachine of ns that has
// prepared for hookDrain or longer.
func releaseDrained(ctx context.Context, c client.Client, ns, hook string) error {
	var vms vmv1.VirtualMachineList
	if err := c.List(ctx, &vms, client.InNamespace(ns)); err != nil {
		return err
	}
	for _, vm := range vms.Items {
		since, err := time.Parse(time.RFC3339Nano, vm.Annotations[kube.AnnotationPreparing])
		if _, held := vm.Annotations[hook]; err != nil || !held || time.Since(since) < hookDrain {
			continue
		}
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, hook)
		if err := c.Patch(ctx, &vm, client.RawPatch("application/merge-patch+json", patch)); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}
