package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/rollwatch"
	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// A scenario is one measurement through the example operator, beside the
// same work done straight through the provider (its raw equivalent), both
// on simulators of their own, counted at their gates and, with a latency
// model, timed as a user would feel it.
//
// A scenario without change times 0→replicas: the set created (shaped by
// set) until it is settled; its raw equivalent is replicas provider
// Creates, vsphere.DefaultMaxTasks at a time. A scenario with change
// settles the set first, then times the rollout of change (every VM on
// the new revision, the old ones gone); its raw equivalent replaces
// replicas VMs made beforehand, one at a time as the default strategy
// (one surge VM, none unavailable) does: a provider Create of the new VM
// (shaped by spec after change), then a Delete of the old.
//
// A scenario with inPlace rolls its change out in place (the set's
// strategy method InPlaceIfPossible, its VMs cloned with memory hot-add
// on): the VMs stay, and its raw equivalent is replicas provider Resizes
// of the VMs made beforehand, vsphere.DefaultMaxTasks at a time.
type scenario struct {
	name     string
	replicas int
	// set shapes the set before it is created; nil keeps vmSet's.
	set func(*vmv1.VirtualMachineReplicaSet)
	// change, when not nil, is the change whose rollout is measured.
	change func(*vmv1.VirtualMachineReplicaSet)
	// spec shapes the raw equivalent's provider spec: before change's
	// rollout with old true, after it with old false.
	spec func(s *vmprovider.Spec, old bool)
	// inPlace says the rollout changes the VMs where they run.
	inPlace bool
}

// memory4G and memory8G are the template's memory before and after the
// rollout scenarios' change.
const (
	memory4G = 4096
	memory8G = 8192
)

// memoryRollout is the rollout of a set of n VMs from 4 to 8 GiB, which
// the operator does today by replacement.
func memoryRollout(name string, n int) scenario {
	return scenario{
		name:     name,
		replicas: n,
		set:      func(s *vmv1.VirtualMachineReplicaSet) { s.Spec.Template.Spec.MemoryMiB = memory4G },
		change:   func(s *vmv1.VirtualMachineReplicaSet) { s.Spec.Template.Spec.MemoryMiB = memory8G },
		spec: func(s *vmprovider.Spec, old bool) {
			s.MemoryMiB = memory8G
			if old {
				s.MemoryMiB = memory4G
			}
		},
	}
}

// memoryRolloutInPlace is memoryRollout of VMs cloned with memory hot-add
// on, under the in-place method: each VM takes the memory while it runs.
func memoryRolloutInPlace(name string, n int) scenario {
	sc := memoryRollout(name, n)
	sc.inPlace = true
	sc.set = func(s *vmv1.VirtualMachineReplicaSet) {
		s.Spec.Template.Spec.MemoryMiB, s.Spec.Template.Spec.MemoryHotAdd = memory4G, true
		s.Spec.Strategy.Method = "InPlaceIfPossible"
	}
	spec := sc.spec
	sc.spec = func(s *vmprovider.Spec, old bool) {
		spec(s, old)
		s.MemoryHotAdd = true
	}
	return sc
}

// linkedClones is 0→n with linked clones.
func linkedClones(name string, n int) scenario {
	return scenario{
		name:     name,
		replicas: n,
		set:      func(s *vmv1.VirtualMachineReplicaSet) { s.Spec.CloneMode = controllers.CloneLinked },
		spec:     func(s *vmprovider.Spec, _ bool) { s.LinkedClone = true },
	}
}

// result is one run of a scenario or of its raw equivalent: how long it
// took and what its simulator's gate counted meanwhile; for a rollout
// through the operator, the fewest VirtualMachines an independent watch
// saw available meanwhile.
type result struct {
	took   time.Duration
	counts vcsim.Counts
	fewest int
}

// trailing is how long after the operator settled its calls are still
// counted: calls of a reconcile that came after the state the harness
// saw settle.
const trailing = 2 * time.Second

// throughOperator runs sc through the example operator (reading vCenter
// through its watch) on a simulator of its own, with lat (nil for none),
// in a fresh namespace: it returns the time and the gate's counts from
// the set's creation (or the change) until the API server shows it
// settled (or rolled out), plus trailing for the counts; then it checks
// vCenter.
func (b *bench) throughOperator(ctx context.Context, sc scenario, lat *vcsim.Latency) (result, error) {
	ns, err := b.ns.New(ctx, "scenario")
	if err != nil {
		return result{}, err
	}
	op, err := b.startOperatorOn(ctx, &vcsim.Faults{Latency: lat}, true, controllers.WatchedFields, ns)
	if err != nil {
		return result{}, err
	}
	defer op.close()
	set := vmSet(ns, "set-000", sc.replicas)
	if sc.set != nil {
		sc.set(set)
	}
	var from string // the revision rolled out from
	var old []string
	if sc.change != nil {
		if err := b.c.Create(ctx, set); err != nil {
			return result{}, err
		}
		if err := settleVMs(ctx, b, op.sim, ns, 1, sc.replicas); err != nil {
			return result{}, err
		}
		err := pollFor(ctx, time.Minute, func() (bool, error) {
			err := b.c.Get(ctx, client.ObjectKeyFromObject(set), set)
			from = set.Status.UpdateRevision
			return err == nil && from != "" && set.Status.UpdatedReplicas == int32(sc.replicas), err
		})
		if err != nil {
			return result{}, fmt.Errorf("%s: the set's revision before the change: %w", sc.name, err)
		}
		st, err := vmcheck.Observe(ctx, b.c, op.sim.Config(), ns, "")
		if err != nil {
			return result{}, err
		}
		old = st.Live
	}
	var watch *rollwatch.Watcher
	if sc.change != nil {
		bounds, err := rollwatch.BoundsOf(set)
		if err != nil {
			return result{}, err
		}
		if watch, err = rollwatch.Start(ctx, b.env.Config, set, bounds); err != nil {
			return result{}, err
		}
		defer watch.Stop()
	}
	before := op.calls.Counts()
	start := time.Now()
	if sc.change == nil {
		err = b.c.Create(ctx, set)
	} else {
		patch := client.MergeFrom(set.DeepCopy())
		sc.change(set)
		err = b.c.Patch(ctx, set, patch)
	}
	if err != nil {
		return result{}, err
	}
	err = pollFor(ctx, 30*time.Minute, func() (bool, error) {
		return kubernetesSettled(ctx, b, ns, 1, sc.replicas) && (sc.change == nil || rolledOut(ctx, b, ns, from)), nil
	})
	took := time.Since(start)
	if err != nil {
		return result{}, fmt.Errorf("%s: not settled: %w", sc.name, err)
	}
	time.Sleep(trailing)
	r := result{took: took, counts: op.calls.Counts().Minus(before)}
	if watch != nil {
		r.fewest = watch.Stop().FewestAvailable
	}
	// vCenter, to confirm, after the counts: the harness's own reads are
	// not the operator's.
	st, err := vmcheck.Observe(ctx, b.c, op.sim.Config(), ns, "")
	if err == nil && !st.Settled(sc.replicas) {
		err = fmt.Errorf("vCenter: %v", st)
	}
	for _, n := range old {
		if err == nil && slices.Contains(st.Live, n) != sc.inPlace {
			err = fmt.Errorf("%s live after the rollout %v (in place %v): %v", n, slices.Contains(st.Live, n), sc.inPlace, st)
		}
	}
	if err != nil {
		return result{}, fmt.Errorf("%s: %w", sc.name, err)
	}
	return r, nil
}

// rolledOut reports whether ns's set has a revision other than from, all
// its replicas on it, and every VirtualMachine labelled with it.
func rolledOut(ctx context.Context, b *bench, ns, from string) bool {
	var sets vmv1.VirtualMachineReplicaSetList
	if err := b.c.List(ctx, &sets, client.InNamespace(ns)); err != nil || len(sets.Items) != 1 {
		return false
	}
	st := sets.Items[0].Status
	if st.UpdateRevision == from || st.CurrentRevision != st.UpdateRevision || st.UpdatedReplicas != *sets.Items[0].Spec.Replicas {
		return false
	}
	var vms vmv1.VirtualMachineList
	if err := b.c.List(ctx, &vms, client.InNamespace(ns)); err != nil {
		return false
	}
	for _, vm := range vms.Items {
		if vm.Labels[kube.RevisionLabel] != st.UpdateRevision {
			return false
		}
	}
	return true
}

// raw runs sc's raw equivalent on a simulator of its own, with lat (nil
// for none): it returns the time and the gate's counts of the work
// itself, from after the provider's login (and, for a rollout, the old
// VMs made) to the last call done.
func raw(ctx context.Context, sc scenario, lat *vcsim.Latency) (result, error) {
	calls := &vcsim.Faults{Latency: lat}
	sim, err := vcsim.New(calls.Serialized, vcsim.Hotplug)
	if err != nil {
		return result{}, err
	}
	defer sim.Close()
	p, err := vsphere.New(ctx, sim.Config())
	if err != nil {
		return result{}, err
	}
	defer func() { _ = p.Close(context.Background()) }() // logging out of the simulator: nothing to measure
	spec := func(i int, old bool) vmprovider.Spec {
		s := vmprovider.Spec{Name: fmt.Sprintf("raw-%d", i), Owner: vmprovider.Owner{UID: "bench"}, PowerOn: true}
		if !old {
			s.Name = fmt.Sprintf("raw-new-%d", i)
		}
		if sc.spec != nil {
			sc.spec(&s, old)
		}
		return s
	}
	workers := vsphere.DefaultMaxTasks
	each := func(ctx context.Context, i int) error {
		_, err := p.Create(ctx, spec(i, true))
		return err
	}
	if sc.change != nil {
		if err := loop(ctx, sc.replicas, workers, each); err != nil {
			return result{}, err
		}
		if sc.inPlace {
			each = func(ctx context.Context, i int) error {
				to := spec(i, false)
				return p.Resize(ctx, spec(i, true).Name, "bench", vmprovider.Resize{CPUs: to.CPUs, MemoryMiB: to.MemoryMiB,
					Revision: vmprovider.TemplateRevision(to)})
			}
			return timed(ctx, calls, sc.replicas, workers, each)
		}
		workers = 1 // one surge VM at a time
		each = func(ctx context.Context, i int) error {
			if _, err := p.Create(ctx, spec(i, false)); err != nil {
				return err
			}
			return p.Delete(ctx, spec(i, true).Name, "bench")
		}
	}
	return timed(ctx, calls, sc.replicas, workers, each)
}

// timed runs loop(n, workers, each) and returns how long it took and what
// calls counted meanwhile.
func timed(ctx context.Context, calls *vcsim.Faults, n, workers int, each func(context.Context, int) error) (result, error) {
	before := calls.Counts()
	start := time.Now()
	if err := loop(ctx, n, workers, each); err != nil {
		return result{}, err
	}
	return result{took: time.Since(start), counts: calls.Counts().Minus(before)}, nil
}

// loop calls each for 0 to n-1, workers at a time, and returns the
// errors.
func loop(ctx context.Context, n, workers int, each func(context.Context, int) error) error {
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := each(ctx, i); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d failed, the first: %w", len(errs), n, errs[0])
	}
	return nil
}
