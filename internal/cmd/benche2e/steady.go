package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/internal/benchkit"
	"github.com/replicakit/replicakit/internal/widgetkind"
)

// steady settles a Widget of n Pods, makes the binding reconcile it five
// more times (annotation changes), and returns the writes they caused.
func (b *bench) steady(ctx context.Context) (benchkit.Writes, error) {
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
	if err := (widgetOwner{b}).createNamed(ctx, ns, "kit", b.n); err != nil {
		return nil, err
	}
	if err := pods.await(ctx, b.n, 5*time.Minute); err != nil {
		return nil, err
	}
	time.Sleep(3 * time.Second)
	before, err := benchkit.ScrapeWrites(ctx, b.cs)
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
	after, err := benchkit.ScrapeWrites(ctx, b.cs)
	if err != nil {
		return nil, err
	}
	w := after.Minus(before)
	delete(w, "widgets") // the five nudges
	return w, nil
}
