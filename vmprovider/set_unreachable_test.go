package vmprovider_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vmprovidertest"
)

// partitioned is two endpoints, "east" (zones a and b) and "west" (zone
// c), each a fake that can be cut off and lose answers; it counts the
// changes asked of an endpoint while it was cut off.
type partitioned struct {
	e     *vmprovider.Endpoints
	fakes map[string]*vmprovidertest.Fake

	mu      sync.Mutex // the executor calls Fail and Lose concurrently
	cut     map[string]bool
	changes []string        // ops other than get and list asked of a cut endpoint
	losses  map[string]loss // by endpoint: the next answer to lose
	outlive map[string]bool // by endpoint: the next create outlives its call
}

// outliveNext makes the next create on endpoint ep outlive its call
// (vmprovidertest.Fake.Outlive).
func (p *partitioned) outliveNext(ep string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.outlive[ep] = true
}

// loss is an answer an endpoint is to lose: that of the next op (of the
// VM called name, when not empty) that takes effect there, after which
// the endpoint is cut off when cut is set. With before, the op fails
// before it takes effect instead, as one the cut stops on its way.
type loss struct {
	op, name    string
	cut, before bool
}

// loseNext arms l on endpoint ep, replacing what was armed there.
func (p *partitioned) loseNext(ep string, l loss) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.losses[ep] = l
}

// lose is the fake's Lose on endpoint ep (before false), and what its
// Fail adds to cutting off (before true).
func (p *partitioned) lose(ep, op, name string, before bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.loseLocked(ep, op, name, before)
}

// loseLocked is lose with p.mu held.
func (p *partitioned) loseLocked(ep, op, name string, before bool) error {
	l, ok := p.losses[ep]
	if !ok || l.op != op || l.name != "" && l.name != name || l.before != before {
		return nil
	}
	delete(p.losses, ep)
	if l.cut {
		p.cut[ep] = true
	}
	if before {
		return fmt.Errorf("%s %s: dial tcp: i/o timeout", op, name)
	}
	return fmt.Errorf("%s %s: read tcp: i/o timeout (the answer was lost)", op, name)
}

// untilQuiet runs pass until it plans nothing, failing on an error or after
// 20 passes.
func untilQuiet(t interface{ Fatalf(string, ...any) }, pass func() (replicaset.Plan, error)) {
	for i := 0; ; i++ {
		plan, err := pass()
		if err != nil {
			t.Fatalf("healed pass %d: %v", i, err)
		}
		if plan.IsZero() {
			return
		}
		if i > 20 {
			t.Fatalf("not converged after %d healed passes: %v", i, plan)
		}
	}
}

// twoVCenters returns a Set of owner over p's endpoints, east holding
// zone a and west zone b, with naming.Indexed names on base and at most
// 2 creates or deletes a pass.
func twoVCenters(p *partitioned, owner vmprovider.Owner, base string) *vmprovider.Set {
	return &vmprovider.Set{
		Provider: p.e,
		Template: vmprovider.Spec{Owner: owner, PowerOn: true},
		Policy:   deletionpolicy.Random{Seed: 1},
		Spec:     replicaset.Spec{Zones: []string{"a", "b"}, MaxPerPass: 2},
		Zones:    map[string]vmprovider.Placement{"a": {Endpoint: "east"}, "b": {Endpoint: "west"}},
		Names:    naming.Indexed{Base: base},
	}
}

func newPartitioned() *partitioned {
	p := &partitioned{cut: map[string]bool{}, fakes: map[string]*vmprovidertest.Fake{}, losses: map[string]loss{}, outlive: map[string]bool{},
		e: &vmprovider.Endpoints{Providers: map[string]vmprovider.Provider{}}}
	for _, ep := range []string{"east", "west"} {
		f := &vmprovidertest.Fake{Now: func() time.Time { return now }, Fail: func(op, name string) error {
			p.mu.Lock()
			defer p.mu.Unlock()
			if !p.cut[ep] {
				return p.loseLocked(ep, op, name, true)
			}
			if op != "get" && op != "list" {
				p.changes = append(p.changes, op+" "+name+" on "+ep)
			}
			return fmt.Errorf("%s %s: dial tcp: i/o timeout", op, name)
		}, Lose: func(op, name string) error { return p.lose(ep, op, name, false) }, Outlive: func(string) bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			o := p.outlive[ep]
			delete(p.outlive, ep)
			return o
		}}
		p.fakes[ep] = f
		p.e.Providers[ep] = f
	}
	return p
}

func (p *partitioned) setCut(ep string, cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut[ep] = cut
}

// isCut reports whether endpoint ep is cut off.
func (p *partitioned) isCut(ep string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut[ep]
}

// on returns the names of owner's VMs on endpoint ep, from the fake
// itself, cut off or not. Scale must not be running.
func (p *partitioned) on(t interface{ Fatal(...any) }, ep, owner string) []string {
	cut := p.isCut(ep)
	p.setCut(ep, false)
	defer p.setCut(ep, cut)
	vms, err := p.fakes[ep].List(context.Background(), owner)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, vm := range vms {
		out = append(out, vm.Name)
	}
	return out
}

// TestSet_UnreachableEndpoints scales a Set over two endpoints, pass after
// pass, while either is cut off and comes back and the count changes. At
// every pass: no change is asked of a cut endpoint; what it held is still
// there when it answers again; the plan sets its VMs aside; no name is
// held twice; and the Set holds no more than the larger of the desired
// and the unknown count plus one (MaxSurge's default). Once both answer,
// the Set converges on the count, with zones balanced (Rebalance).
func TestSet_UnreachableEndpoints(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ctx := context.Background()
		p := newPartitioned()
		owner := vmprovider.Owner{UID: "uid-1", Name: "ns/web"}
		set := &vmprovider.Set{
			Provider: p.e,
			Template: vmprovider.Spec{Owner: owner, PowerOn: true},
			Policy:   deletionpolicy.Random{Seed: 1},
			Spec:     replicaset.Spec{Zones: []string{"a", "b", "c"}, Rebalance: true, MaxPerPass: 100},
			Zones: map[string]vmprovider.Placement{
				"a": {Endpoint: "east"}, "b": {Endpoint: "east"}, "c": {Endpoint: "west"},
			},
			Names: naming.Random{Base: "web", Source: rand.NewPCG(1, 2)},
		}
		desired := rapid.IntRange(0, 9).Draw(t, "desired")
		var was map[string][]string // each cut endpoint's VMs when it was cut
		for pass := range rapid.IntRange(1, 20).Draw(t, "passes") {
			switch rapid.IntRange(0, 3).Draw(t, "event") {
			case 0:
				ep := rapid.SampledFrom([]string{"east", "west"}).Draw(t, "cut")
				if !p.cut[ep] {
					if was == nil {
						was = map[string][]string{}
					}
					was[ep] = p.on(t, ep, owner.UID)
					p.setCut(ep, true)
				}
			case 1:
				ep := rapid.SampledFrom([]string{"east", "west"}).Draw(t, "heal")
				p.setCut(ep, false)
				delete(was, ep)
			case 2:
				desired = rapid.IntRange(0, 9).Draw(t, "desired")
			}
			plan, _, err := set.Scale(ctx, desired, now)
			anyCut := p.cut["east"] || p.cut["west"]
			switch {
			case anyCut && !errors.Is(err, vmprovider.ErrUnreachable):
				t.Fatalf("pass %d with %v cut off: error %v, want ErrUnreachable", pass, p.cut, err)
			case !anyCut && err != nil:
				t.Fatalf("pass %d: %v", pass, err)
			}
			if len(p.changes) > 0 {
				t.Fatalf("pass %d: changes asked of a cut-off endpoint: %v", pass, p.changes)
			}
			unknown := 0
			for ep, vms := range was {
				if got := p.on(t, ep, owner.UID); !slices.Equal(got, vms) {
					t.Fatalf("pass %d: %s held %v when cut off, now %v", pass, ep, vms, got)
				}
				unknown += len(vms)
				for _, name := range vms {
					if !slices.ContainsFunc(plan.Unknown, func(r replicaset.Replica) bool { return r.Name == name }) {
						t.Fatalf("pass %d: %s on cut-off %s is not in the plan's unknown replicas: %v", pass, name, ep, plan)
					}
				}
			}
			east, west := p.on(t, "east", owner.UID), p.on(t, "west", owner.UID)
			for _, name := range east {
				if slices.Contains(west, name) {
					t.Fatalf("pass %d: %s is on both endpoints", pass, name)
				}
			}
			if total, bound := len(east)+len(west), max(desired, unknown)+1; total > bound {
				t.Fatalf("pass %d: %d VMs (east %v, west %v), over %d (desired %d, %d unknown)", pass, total, east, west, bound, desired, unknown)
			}
		}
		p.setCut("east", false)
		p.setCut("west", false)
		untilQuiet(t, func() (replicaset.Plan, error) {
			plan, _, err := set.Scale(ctx, desired, now)
			return plan, err
		})
		zs, err := set.ZoneStatus(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi, total := desired, 0, 0
		for _, z := range zs {
			lo, hi, total = min(lo, z.Replicas), max(hi, z.Replicas), total+z.Replicas
		}
		if total != desired || hi-lo > 1 {
			t.Fatalf("settled with zones %+v, want %d balanced", zs, desired)
		}
	})
}
