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

// Windows over which the soak's watch reads a set's spec.replicas: the
// operator and the watch see changes at different moments, so a bound
// holds against the loosest count the set had lately.
const (
	surgeWindow = 2 * time.Minute
	availWindow = 30 * time.Second
)

// soakWatch checks every set's VirtualMachines, as an informer of its own
// delivers them, against two rules the operator must keep whatever the
// faults: a set never has more VMs (counting those being deleted) than
// the most replicas it asked for over surgeWindow plus its maxSurge (1),
// and when the operator deletes an available VM of a set that is not
// being deleted, the set keeps at least the fewest replicas it asked for
// over availWindow minus its maxUnavailable (1) available VMs. Outages
// and faults may make VMs unavailable; only the operator's deletions are
// held to the bound.
type soakWatch struct {
	mu       sync.Mutex
	sets     map[types.UID]*setHistory
	vms      map[types.UID]*vmv1.VirtualMachine
	events   int
	breaches int
	first    []string
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

// startSoakWatch starts the informers; they stop with ctx.
func startSoakWatch(ctx context.Context, cfg *rest.Config) (*soakWatch, error) {
	c, err := cache.New(cfg, cache.Options{Scheme: vmcheck.Scheme()})
	if err != nil {
		return nil, err
	}
	w := &soakWatch{sets: map[types.UID]*setHistory{}, vms: map[types.UID]*vmv1.VirtualMachine{}}
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
		h.replicas = append(h.replicas, stamped{time.Now(), n})
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
	now := time.Now()
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
	if most := h.over(now, surgeWindow, func(a, b int) int { return max(a, b) }) + 1; existing > most {
		w.breach(fmt.Sprintf("%s: %d VMs after %s changed, above %d (most replicas over %v + maxSurge 1)", h.name, existing, vm.Name, most, surgeWindow))
	}
	deletedAvailable := old != nil && old.DeletionTimestamp == nil && meta.IsStatusConditionTrue(old.Status.Conditions, "Ready") &&
		(gone || vm.DeletionTimestamp != nil)
	if fewest := h.over(now, availWindow, func(a, b int) int { return min(a, b) }) - 1; deletedAvailable && available < fewest {
		w.breach(fmt.Sprintf("%s: the operator deleted available %s, leaving %d available, below %d (fewest replicas over %v − maxUnavailable 1)", h.name, vm.Name, available, fewest, availWindow))
	}
}

// over folds pick over the replicas the set asked for within window of
// now, the count in force when the window opened included.
func (h *setHistory) over(now time.Time, window time.Duration, pick func(int, int) int) int {
	from := now.Add(-window)
	v := -1
	for i, s := range h.replicas {
		if s.at.Before(from) && i+1 < len(h.replicas) && !h.replicas[i+1].at.After(from) {
			continue // superseded before the window opened
		}
		if v < 0 {
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

// report returns how many changes the watch checked, how many broke a
// rule, and the first of those.
func (w *soakWatch) report() (events, breaches int, first []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.events, w.breaches, append([]string(nil), w.first...)
}
