package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// Injector decides and counts faults. Its zero value injects nothing.
type Injector struct {
	// Rate is the probability that a create, delete, patch or status
	// patch fails instead of reaching the API server.
	Rate float64
	// Only, when set, limits write faults to the objects it accepts.
	Only func(client.Object) bool

	// Counts of what was injected.
	Create, Delete, Patch, Status atomic.Int64

	mu  sync.Mutex
	rng *rand.Rand
}

// New returns an injector failing writes with probability rate, seeded for
// repeatable runs.
func New(rate float64, seed uint64) *Injector {
	return &Injector{Rate: rate, rng: rand.New(rand.NewPCG(seed, seed^0x5eed))}
}

// Injected is the number of failed writes injected.
func (in *Injector) Injected() int64 {
	return in.Create.Load() + in.Delete.Load() + in.Patch.Load() + in.Status.Load()
}

// String summarizes the counts.
func (in *Injector) String() string {
	return fmt.Sprintf("%d create, %d delete, %d patch, %d status failures",
		in.Create.Load(), in.Delete.Load(), in.Patch.Load(), in.Status.Load())
}

// roll reports whether to inject with probability p, counting it in n.
func (in *Injector) roll(p float64, obj client.Object, n *atomic.Int64) bool {
	if p <= 0 || in.rng == nil || (in.Only != nil && !in.Only(obj)) {
		return false
	}
	in.mu.Lock()
	hit := in.rng.Float64() < p
	in.mu.Unlock()
	if hit {
		n.Add(1)
	}
	return hit
}

// fault returns a conflict, an internal error or a timeout at random.
func (in *Injector) fault(obj client.Object) error {
	in.mu.Lock()
	pick := in.rng.IntN(3)
	in.mu.Unlock()
	switch pick {
	case 0:
		return apierrors.NewConflict(schema.GroupResource{Resource: reflect.TypeOf(obj).Elem().Name()}, obj.GetName(), errors.New("injected conflict"))
	case 1:
		return apierrors.NewInternalError(errors.New("injected"))
	}
	return apierrors.NewTimeoutError("injected timeout", 1)
}

// Funcs returns interceptor functions that inject the faults.
func (in *Injector) Funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if in.roll(in.Rate, obj, &in.Create) {
				return in.fault(obj)
			}
			return c.Create(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if in.roll(in.Rate, obj, &in.Delete) {
				return in.fault(obj)
			}
			return c.Delete(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if in.roll(in.Rate, obj, &in.Patch) {
				return in.fault(obj)
			}
			return c.Patch(ctx, obj, p, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if in.roll(in.Rate, obj, &in.Status) {
				return in.fault(obj)
			}
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	}
}

// NewClient returns a ctrl.Options.NewClient that wraps the manager's
// client (reads from its cache included) in funcs.
func NewClient(funcs interceptor.Funcs) client.NewClientFunc {
	return func(cfg *rest.Config, opts client.Options) (client.Client, error) {
		c, err := client.NewWithWatch(cfg, opts)
		if err != nil {
			return nil, err
		}
		return interceptor.NewClient(c, funcs), nil
	}
}
