package vmprovider_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vmprovidertest"
)

// ipWatch is what a property run of in-place rollouts records as the
// Set acts: the faults each resize meets (by the pass's seed), the
// drains PreDelete was asked for, and what the resizes broke.
type ipWatch struct {
	mu        sync.Mutex
	seed      uint64 // this pass's faults; 0: none
	floor     int    // the fewest VMs that must stay on during a power cycle
	drained   map[string]bool
	refused   map[string]bool // "uuid revision": the platform refused it
	cycle     map[string]bool // "uuid revision": a live resize refused as needing the VM off
	broken    []string
	lifecycle bool
}

// fault decides, by the pass's seed, how the resize of name to to fails:
// 0 none, 1 refused, 2 no answer, 3 the answer lost, 4 refused live as
// needing the VM off. Recording zero sizes never fails.
func (w *ipWatch) fault(name string, to vmprovider.Resize) int {
	if w.seed == 0 || to.CPUs == 0 && to.MemoryMiB == 0 {
		return 0
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", w.seed, name)
	switch k := h.Sum64() % 10; {
	case k >= 4:
		return 0
	case k == 3 && to.PowerCycle:
		return 0
	default:
		return int(k) + 1
	}
}

// TestSetInPlace_Properties drives a Set with an in-place method on a
// resizing provider, pass after pass, the Template's size, hot-add and
// template changing at random and resizes failing at random (refused, no
// answer, answer lost, refused live), optionally with a Lifecycle whose
// PreDelete drains at once. At every pass:
//
//   - every VM's recorded revision describes it: its size and base
//     revision are those of the Template of that revision;
//   - a power cycle takes no more VMs off than MaxUnavailable allows, and,
//     with a Lifecycle, comes only after PreDelete was called for the VM,
//     told it prepares for an update;
//   - a resize the platform refused is not asked for again while the
//     revision stands (nor, refused live as needing the VM off, live);
//   - under InPlaceOnly no VM is ever replaced.
//
// Faults then stop; the Set settles at its count with every VM on the
// Template's revision but, under InPlaceOnly, those that cannot be
// changed in place.
func TestSetInPlace_Properties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		rapid.SyncTest(rt, func(t *rapid.T) {
			c := &clock{now}
			desired := rapid.IntRange(1, 4).Draw(t, "desired")
			method := rapid.SampledFrom([]replicaset.UpdateMethod{replicaset.UpdateInPlaceIfPossible, replicaset.UpdateInPlaceOnly}).Draw(t, "method")
			surge, unavailable := rapid.IntRange(0, 1).Draw(t, "surge"), rapid.IntRange(0, 1).Draw(t, "unavailable")
			if surge+unavailable == 0 {
				surge = 1
			}
			strategy := replicaset.Strategy{Method: method, MaxSurge: replicaset.Count(surge), MaxUnavailable: replicaset.Count(unavailable)}
			lim := strategy.Limits(desired)
			w := &ipWatch{floor: desired - lim.Unavailable, drained: map[string]bool{}, refused: map[string]bool{},
				cycle: map[string]bool{}, lifecycle: rapid.Bool().Draw(t, "lifecycle")}
			p := &resizing{Fake: &vmprovidertest.Fake{Now: c.now}}
			p.fail = func(name string, to vmprovider.Resize) (error, bool) {
				w.mu.Lock()
				defer w.mu.Unlock()
				vm, _ := p.Get(context.Background(), name)
				how := "live"
				if to.PowerCycle {
					how = "cycle"
				}
				key := vm.InstanceUUID + " " + to.Revision
				if (to.CPUs != 0 || to.MemoryMiB != 0) && (w.refused[key] || w.cycle[key] && !to.PowerCycle) {
					w.broken = append(w.broken, fmt.Sprintf("%s (%s) asked again for a resize to %s the platform refused", name, how, to.Revision))
				}
				switch w.fault(name, to) {
				case 1:
					w.refused[key] = true
					return errors.New("vCenter refused the reconfigure"), false
				case 2:
					return fmt.Errorf("no answer: %w", vmprovider.ErrUnreachable), false
				case 3:
					return fmt.Errorf("answer lost: %w", vmprovider.ErrUnreachable), true
				case 4:
					w.cycle[key] = true
					return fmt.Errorf("refused while it runs: %w", vmprovider.ErrNeedsPowerCycle), false
				}
				return nil, false
			}
			p.offAt = func(vm vmprovider.VM) {
				vms, _ := p.List(context.Background(), "uid-ip")
				on := 0
				for _, v := range vms {
					if v.Power == vmprovider.PoweredOn {
						on++
					}
				}
				w.mu.Lock()
				defer w.mu.Unlock()
				if on < w.floor {
					w.broken = append(w.broken, fmt.Sprintf("%s power-cycled with %d VMs on, fewer than %d", vm.Name, on, w.floor))
				}
				if w.lifecycle && !w.drained[vm.InstanceUUID] {
					w.broken = append(w.broken, fmt.Sprintf("%s power-cycled without a drain for an update", vm.Name))
				}
				delete(w.drained, vm.InstanceUUID)
			}
			// draw changes prev's size, and now and then what only a new
			// VM takes (the template, hot-add).
			draw := func(prev vmprovider.Spec) vmprovider.Spec {
				s := prev
				if prev.Template == "" || rapid.IntRange(0, 3).Draw(t, "newBase") == 0 {
					s.Template = rapid.SampledFrom([]string{"ubuntu", "rocky"}).Draw(t, "template")
					s.MemoryHotAdd, s.CPUHotAdd = rapid.Bool().Draw(t, "memoryHotAdd"), rapid.Bool().Draw(t, "cpuHotAdd")
				}
				s.CPUs = int32(rapid.IntRange(1, 2).Draw(t, "cpus"))
				s.MemoryMiB = int64(rapid.SampledFrom([]int{512, 1024, 2048}).Draw(t, "memory"))
				return s
			}
			byRevision := map[string]vmprovider.Spec{}
			s := &vmprovider.Set{
				Provider: p,
				Template: draw(vmprovider.Spec{Owner: vmprovider.Owner{UID: "uid-ip"}, PowerOn: true}),
				Policy:   deletionpolicy.Oldest{},
				Names:    naming.Indexed{Base: "web"},
				Rollout:  &strategy,
			}
			if w.lifecycle {
				s.Lifecycle = &vmprovider.Lifecycle{Lifecycle: replicaset.Lifecycle{Timeout: time.Hour}, PreDelete: func(ctx context.Context, vm vmprovider.VM) error {
					if _, ok := vmprovider.PreparingUpdate(ctx); ok {
						w.mu.Lock()
						w.drained[vm.InstanceUUID] = true
						w.mu.Unlock()
					}
					return nil
				}}
			}
			byRevision[vmprovider.TemplateRevision(s.Template)] = s.Template
			var lastRevision string
			var kept map[string]string
			pass := func(seed uint64) replicaset.Plan {
				rev := vmprovider.TemplateRevision(s.Template)
				w.mu.Lock()
				w.seed = seed
				if rev != lastRevision {
					lastRevision = rev
					clear(w.refused)
					clear(w.cycle)
				}
				w.mu.Unlock()
				plan, _, _ := s.Scale(context.Background(), desired, c.t)
				synctest.Wait()
				c.t = c.t.Add(time.Minute)
				w.mu.Lock()
				defer w.mu.Unlock()
				if len(w.broken) > 0 {
					t.Fatalf("%v", w.broken)
				}
				after := map[string]string{}
				for _, vm := range listAll(t, p) {
					after[vm.Name] = vm.InstanceUUID
					want, ok := byRevision[vm.Revision]
					if !ok || vm.CPUs != want.CPUs || vm.MemoryMiB != want.MemoryMiB || vm.BaseRevision != vmprovider.BaseRevision(want) {
						t.Fatalf("%s records revision %s (of %+v) but has %d CPUs, %d MiB and base %s", vm.Name, vm.Revision, want, vm.CPUs, vm.MemoryMiB, vm.BaseRevision)
					}
				}
				if method == replicaset.UpdateInPlaceOnly && kept != nil {
					for name, uuid := range kept {
						if after[name] != uuid {
							t.Fatalf("InPlaceOnly replaced %s: %v", name, plan)
						}
					}
				}
				if len(after) == desired && kept == nil {
					kept = after
				}
				return plan
			}

			steps := rapid.IntRange(3, 25).Draw(t, "steps")
			for range steps {
				if rapid.IntRange(0, 2).Draw(t, "change") == 0 {
					s.SetTemplate(draw(s.Template))
					byRevision[vmprovider.TemplateRevision(s.Template)] = s.Template
				}
				pass(rapid.Uint64Range(0, 1<<20).Draw(t, "faults"))
			}
			quiet := false
			for range 40 {
				if plan := pass(0); plan.IsZero() {
					quiet = true
					break
				}
			}
			vms := listAll(t, p)
			if !quiet || len(vms) != desired {
				t.Fatalf("not settled at %d after 40 passes without faults: %d VMs", desired, len(vms))
			}
			want := vmprovider.TemplateRevision(s.Template)
			for _, vm := range vms {
				if vm.Revision == want {
					continue
				}
				kind, why := vmprovider.InPlaceFor(vm, s.Template)
				key := vm.InstanceUUID + " " + want
				held := method == replicaset.UpdateInPlaceOnly && (kind == replicaset.InPlaceNone || w.refused[key] ||
					(kind == replicaset.InPlacePowerCycle || w.cycle[key]) && lim.Unavailable == 0)
				if !held {
					t.Fatalf("settled with %s on %s, not %s (%v: %s)", vm.Name, vm.Revision, want, kind, why)
				}
			}
		})
	})
}

// listAll returns the VMs of owner uid-ip, sorted by name.
func listAll(t *rapid.T, p vmprovider.Provider) []vmprovider.VM {
	vms, err := p.List(context.Background(), "uid-ip")
	if err != nil {
		t.Fatal(err)
	}
	return vms
}
