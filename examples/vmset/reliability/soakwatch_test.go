package reliability

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
)

// The soak's watch sees a set's spec and its VirtualMachines through two
// informers, whose events are not ordered against each other or against
// what the operator saw. A bound is therefore checked against every
// replica count the set had from lag before a change to grace after it,
// and only once grace has passed.
const (
	lag   = 5 * time.Second
	grace = 5 * time.Second
)

// soakWatch checks every set's VirtualMachines, as an informer of its own
// delivers them, against two rules the operator must keep whatever the
// faults, each against the loosest replica count the set had around the
// change (see lag and grace), and for sets not being deleted:
//
//   - when a VM of the set appears, the set has no more VMs, counting
//     those being deleted, than that count plus its maxSurge (1);
//   - when the operator deletes an available VM, the set keeps at least
//     that count minus its maxUnavailable (1) available VMs.
//
// Outages and faults may make VMs unavailable and deletions slow; only
// the operator's creates and deletes are held to the bounds.
type soakWatch struct {
	mu       sync.Mutex
	sets     map[types.UID]*setHistory
	vms      map[types.UID]*vmv1.VirtualMachine
	suspects []suspect
	events   int
	breaches int
	first    []string
	// now reads the clock; tests of the rules set it.
	now func() time.Time
}

// suspect is a change that broke a bound when the watch saw it, to be
// judged once grace has passed.
type suspect struct {
	at      time.Time
	set     types.UID
	created bool // a VM appeared (else an available one was deleted)
	n       int  // the set's VMs, or its available VMs, after the change
	vm      string
}

// setHistory is what the watch knows of one set.
type setHistory struct {
	name     string
	deleting bool
	replicas []stamped
}

// stamped is a spec.replicas and when the watch saw it.
type stamped struct {
	at time.Time
	n  int
}

// newSoakWatch returns a watch that has seen nothing, on the real clock.
func newSoakWatch() *soakWatch {
	return &soakWatch{sets: map[types.UID]*setHistory{}, vms: map[types.UID]*vmv1.VirtualMachine{}, now: time.Now}
}

// startSoakWatch starts the informers; they stop with ctx.
func startSoakWatch(ctx context.Context, cfg *rest.Config) (*soakWatch, error) {
	c, err := cache.New(cfg, cache.Options{Scheme: vmcheck.Scheme()})
	if err != nil {
		return nil, err
	}
	w := newSoakWatch()
	sets, err := c.GetInformer(ctx, &vmv1.VirtualMachineReplicaSet{})
	if err != nil {
		return nil, err
	}
	if _, err := sets.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.set(o, false) },
		UpdateFunc: func(_, o any) { w.set(o, false) },
		DeleteFunc: func(o any) { w.set(o, true) },
	}); err != nil {
		return nil, err
	}
	vms, err := c.GetInformer(ctx, &vmv1.VirtualMachine{})
	if err != nil {
		return nil, err
	}
	if _, err := vms.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.vm(o, false) },
		UpdateFunc: func(_, o any) { w.vm(o, false) },
		DeleteFunc: func(o any) { w.vm(o, true) },
	}); err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("soak watch: caches did not sync")
	}
	return w, nil
}

// set records a set's spec.replicas, or that it went.
func (w *soakWatch) set(o any, gone bool) {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	s, ok := o.(*vmv1.VirtualMachineReplicaSet)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.sets[s.UID]
	if h == nil {
		h = &setHistory{name: s.Namespace + "/" + s.Name}
		w.sets[s.UID] = h
	}
	h.deleting = h.deleting || gone || s.DeletionTimestamp != nil
	n := 1
	if s.Spec.Replicas != nil {
		n = int(*s.Spec.Replicas)
	}
	if len(h.replicas) == 0 || h.replicas[len(h.replicas)-1].n != n {
		h.replicas = append(h.replicas, stamped{w.now(), n})
	}
}

// vm records a VirtualMachine's change and checks its set's bounds.
func (w *soakWatch) vm(o any, gone bool) {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	vm, ok := o.(*vmv1.VirtualMachine)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events++
	old := w.vms[vm.UID]
	if gone {
		delete(w.vms, vm.UID)
	} else {
		w.vms[vm.UID] = vm
	}
	ref := metav1.GetControllerOfNoCopy(vm)
	if ref == nil {
		return
	}
	h := w.sets[ref.UID]
	if h == nil || h.deleting {
		return // a set the watch has not seen yet, or one being deleted
	}
	existing, available := 0, 0
	for _, v := range w.vms {
		if r := metav1.GetControllerOfNoCopy(v); r == nil || r.UID != ref.UID {
			continue
		}
		existing++
		if v.DeletionTimestamp == nil && meta.IsStatusConditionTrue(v.Status.Conditions, "Ready") {
			available++
		}
	}
	now := w.now()
	created := old == nil && !gone
	deletedAvailable := old != nil && old.DeletionTimestamp == nil && meta.IsStatusConditionTrue(old.Status.Conditions, "Ready") &&
		(gone || vm.DeletionTimestamp != nil)
	switch {
	case created && existing > h.over(now.Add(-lag), now, most)+1:
		w.suspects = append(w.suspects, suspect{at: now, set: ref.UID, created: true, n: existing, vm: vm.Name})
	case deletedAvailable && available < h.over(now.Add(-lag), now, fewest)-1:
		w.suspects = append(w.suspects, suspect{at: now, set: ref.UID, n: available, vm: vm.Name})
	}
	w.judge(now)
}

// judge decides the suspects grace old at now: each is a breach unless
// its set is being deleted by now or a replica count it had within lag
// before and grace after the change allows it.
func (w *soakWatch) judge(now time.Time) {
	kept := w.suspects[:0]
	for _, s := range w.suspects {
		if now.Before(s.at.Add(grace)) {
			kept = append(kept, s)
			continue
		}
		h := w.sets[s.set]
		if h == nil || h.deleting {
			continue
		}
		from, to := s.at.Add(-lag), s.at.Add(grace)
		if s.created {
			if bound := h.over(from, to, most) + 1; s.n > bound {
				w.breach(fmt.Sprintf("%s: %d VMs once %s appeared, above %d (most replicas within %v before and %v after, + maxSurge 1)", h.name, s.n, s.vm, bound, lag, grace))
			}
		} else if bound := h.over(from, to, fewest) - 1; s.n < bound {
			w.breach(fmt.Sprintf("%s: the operator deleted available %s, leaving %d available, below %d (fewest replicas within %v before and %v after, − maxUnavailable 1)", h.name, s.vm, s.n, bound, lag, grace))
		}
	}
	w.suspects = kept
}

func most(a, b int) int   { return max(a, b) }
func fewest(a, b int) int { return min(a, b) }

// over folds pick over the replica counts the set had from from to to:
// the one in force at from and every later one seen by to.
func (h *setHistory) over(from, to time.Time, pick func(int, int) int) int {
	v := -1
	for i, s := range h.replicas {
		switch {
		case s.at.After(to):
			continue
		case s.at.Before(from) && i+1 < len(h.replicas) && !h.replicas[i+1].at.After(from):
			continue // superseded before from
		case v < 0:
			v = s.n
		}
		v = pick(v, s.n)
	}
	return max(v, 0)
}

// breach counts a broken rule and keeps the first ten described.
func (w *soakWatch) breach(s string) {
	w.breaches++
	if len(w.first) < 10 {
		w.first = append(w.first, s)
	}
}

// report judges what grace has passed for and returns how many changes
// the watch checked, how many broke a rule, and the first of those.
func (w *soakWatch) report() (events, breaches int, first []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.judge(w.now())
	return w.events, w.breaches, append([]string(nil), w.first...)
}
