package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// The healing measurement's windows: short, so that a run takes seconds.
const (
	healUnhealthyWindow = 2 * time.Second
	healStartupWindow   = 5 * time.Second
	healReplicas        = 3
	// healPoll is how often the harness reads the API server (and the
	// simulator's call counts, in this process) while it times a heal.
	healPoll = 10 * time.Millisecond
	// floorSamples is how many resets and creates each run's floor takes
	// the median of.
	floorSamples = 3
	resetMethod  = "ResetVM_Task"
)

// healRun is one timed heal: from the guest hanging (SetHeartbeat red
// returned) to each milestone the harness saw, and the floor's parts
// measured straight through the provider in the same run.
type healRun struct {
	restart bool
	// Milestones, from the hang.
	sick       time.Duration // the VirtualMachine's Healthy condition False
	recorded   time.Duration // the binding's health annotation unhealthy
	reset      time.Duration // the reset done in vCenter (restart only)
	created    time.Duration // the replacement's VirtualMachine created
	ready      time.Duration // the replacement's VirtualMachine Ready
	serving    time.Duration // the set back to all ready and healthy, the hung VM gone
	hangCall   time.Duration // the SetHeartbeat call itself
	rawReset   time.Duration // one provider Reset (median of floorSamples)
	rawCreate  time.Duration // one provider Create, clone and power-on (median)
	resetCalls int64
	// The binding's own clock, from its health annotation: when it took the guest to have become unhealthy, and when
	// it recorded the reset as the start of the new start-up window, each
	// from the hang.
	since, started time.Duration
}

// stampFloor is the floor as the binding counts its windows: from the
// times its health annotation recorded, not
// from the hang and the reset.
func (r healRun) stampFloor() time.Duration {
	if r.restart {
		return r.started + healStartupWindow + r.rawCreate
	}
	return r.since + healUnhealthyWindow + r.rawCreate
}

// floor is the least a heal can take: the unhealthy window, then (with
// restart) one reset and the start-up window, then one clone and power-on.
func (r healRun) floor() time.Duration {
	f := healUnhealthyWindow + r.rawCreate
	if r.restart {
		f += r.rawReset + healStartupWindow
	}
	return f
}

// heal times runs heals of a hung guest through the example operator for
// each of restart on and off, each run beside the floor's parts measured
// in it, and prints each run and the spread over them.
func (b *bench) heal(ctx context.Context, runs int) ([]row, error) {
	byMode := map[bool][]healRun{}
	for i := range runs {
		for _, restart := range []bool{true, false} {
			r, err := b.healOnce(ctx, restart)
			if err != nil {
				return nil, fmt.Errorf("heal run %d (restart %v): %w", i+1, restart, err)
			}
			byMode[restart] = append(byMode[restart], r)
			fmt.Printf("  run %d, restart %-5v: hang→sick %v, recorded %v (since %v), reset done %v (started %v), replacement created %v, Ready %v, set serving %v; floor %v (reset %v, clone+power-on %v), overhead %v, ratio %.2f; by the recorded stamps floor %v, overhead %v\n",
				i+1, restart, ms(r.sick), ms(r.recorded), ms(r.since), ms(r.reset), ms(r.started), ms(r.created), ms(r.ready), ms(r.serving),
				ms(r.floor()), ms(r.rawReset), ms(r.rawCreate), ms(r.serving-r.floor()), float64(r.serving)/float64(r.floor()),
				ms(r.stampFloor()), ms(r.serving-r.stampFloor()))
		}
	}
	var rows []row
	for _, restart := range []bool{true, false} {
		rs := byMode[restart]
		name := "replace only (restart: false)"
		if restart {
			name = "reset, then replace"
		}
		pick := func(f func(healRun) time.Duration) string { return spread(durationsOf(rs, f)) }
		var ratios []float64
		for _, r := range rs {
			ratios = append(ratios, float64(r.serving)/float64(r.floor()))
		}
		fmt.Printf("  %s over %d runs, median [min–max]:\n", name, len(rs))
		fmt.Printf("    hang→Healthy False %s; →health recorded unhealthy %s, its since %s\n", pick(func(r healRun) time.Duration { return r.sick }),
			pick(func(r healRun) time.Duration { return r.recorded }), pick(func(r healRun) time.Duration { return r.since }))
		if restart {
			fmt.Printf("    hang→reset done in vCenter %s (floor: window %v + reset %s)\n", pick(func(r healRun) time.Duration { return r.reset }),
				healUnhealthyWindow, pick(func(r healRun) time.Duration { return r.rawReset }))
		}
		fmt.Printf("    hang→replacement created %s; →its VirtualMachine Ready %s; →set serving %s\n", pick(func(r healRun) time.Duration { return r.created }),
			pick(func(r healRun) time.Duration { return r.ready }), pick(func(r healRun) time.Duration { return r.serving }))
		fmt.Printf("    floor %s (clone+power-on %s); overhead %s; ratio %s\n", pick(healRun.floor),
			pick(func(r healRun) time.Duration { return r.rawCreate }), pick(func(r healRun) time.Duration { return r.serving - r.floor() }), spreadRatio(ratios))
		if restart {
			fmt.Printf("    the restart recorded as started %s from the hang, %s from the reset done\n",
				pick(func(r healRun) time.Duration { return r.started }), pick(func(r healRun) time.Duration { return r.started - r.reset }))
		}
		fmt.Printf("    floor by the binding's recorded stamps %s; overhead beyond it %s\n", pick(healRun.stampFloor),
			pick(func(r healRun) time.Duration { return r.serving - r.stampFloor() }))
		rows = append(rows, row{what: fmt.Sprintf("hang→replacement serving, %s (median of %d)", name, len(rs)),
			took: median(durationsOf(rs, func(r healRun) time.Duration { return r.serving })),
			ref:  median(durationsOf(rs, healRun.floor)), refName: "the floor: windows, reset, clone+power-on", goal: "-"})
	}
	return rows, nil
}

// healOnce measures the floor's parts on a simulator of their own, then
// starts the operator on another, settles a healing set, hangs one guest
// for good and times the heal.
func (b *bench) healOnce(ctx context.Context, restart bool) (healRun, error) {
	r := healRun{restart: restart}
	var err error
	if r.rawReset, r.rawCreate, err = floorParts(ctx); err != nil {
		return r, err
	}
	ns, err := b.ns.New(ctx, "heal")
	if err != nil {
		return r, err
	}
	op, err := b.startOperator(ctx, true, controllers.WatchedFields, ns)
	if err != nil {
		return r, err
	}
	defer op.close()
	set := vmSet(ns, "set-000", healReplicas)
	set.Spec.Remediation = &vmv1.Remediation{
		UnhealthyWindow: &metav1.Duration{Duration: healUnhealthyWindow},
		StartupWindow:   &metav1.Duration{Duration: healStartupWindow},
		Restart:         ptr.To(restart),
	}
	if err := b.c.Create(ctx, set); err != nil {
		return r, err
	}
	if err := settleVMs(ctx, b, op.sim, ns, 1, healReplicas); err != nil {
		return r, err
	}
	var live []string
	if err := pollFor(ctx, time.Minute, func() (bool, error) {
		var ok bool
		live, ok = allHealthy(ctx, b, ns)
		return ok, nil
	}); err != nil {
		return r, fmt.Errorf("set not healthy before the hang: %w", err)
	}
	sick := live[0]
	vm := &vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sick}}
	if err := b.c.Get(ctx, client.ObjectKeyFromObject(vm), vm); err != nil {
		return r, err
	}

	called := time.Now()
	if err := vcsim.SetHeartbeat(ctx, op.sim.Config(), controllers.VSphereName(vm), vmprovider.HeartbeatRed); err != nil {
		return r, err
	}
	hung := time.Now()
	r.hangCall = hung.Sub(called)
	seen := func(d *time.Duration) {
		if *d == 0 {
			*d = time.Since(hung)
		}
	}
	var sawSince, sawStarted bool
	err = pollFor(ctx, 2*time.Minute, func() (bool, error) {
		if restart && r.reset == 0 && op.calls.Calls()[resetMethod] > 0 {
			// The gate holds a call until the tasks it started end: the
			// reset is done once the gate serves something else.
			if m, _ := op.calls.Serving(); m != resetMethod {
				seen(&r.reset)
			}
		}
		var vms vmv1.VirtualMachineList
		if err := b.c.List(ctx, &vms, client.InNamespace(ns)); err != nil {
			return false, err
		}
		sickGone := true
		var fresh *vmv1.VirtualMachine
		for i, v := range vms.Items {
			if v.Name == sick {
				sickGone = false
				if c := meta.FindStatusCondition(v.Status.Conditions, controllers.ConditionHealthy); c != nil && c.Status == metav1.ConditionFalse {
					seen(&r.sick)
				}
				h, ok := healthOf(&v)
				if ok && h.Unhealthy && !sawSince {
					sawSince = true
					if at, err := time.Parse(time.RFC3339, h.Since); err == nil {
						r.since = at.Sub(hung)
					}
					seen(&r.recorded)
				}
				if ok && h.Restarted && !sawStarted {
					sawStarted = true
					if at, err := time.Parse(time.RFC3339, h.Started); err == nil {
						r.started = at.Sub(hung)
					}
				}
				continue
			}
			if !slices.Contains(live, v.Name) {
				fresh = &vms.Items[i]
			}
		}
		if fresh == nil {
			return false, nil
		}
		seen(&r.created)
		if !meta.IsStatusConditionTrue(fresh.Status.Conditions, "Ready") {
			return false, nil
		}
		seen(&r.ready)
		if !sickGone {
			return false, nil
		}
		if _, ok := allHealthy(ctx, b, ns); !ok {
			return false, nil
		}
		seen(&r.serving)
		return true, nil
	})
	if err != nil {
		return r, fmt.Errorf("%s not replaced: %w", sick, err)
	}
	// Confirm in vCenter: the set's VMs and no other, the hung one gone,
	// and one reset (with restart) or none.
	st, err := vmcheck.Observe(ctx, b.c, op.sim.Config(), ns, "")
	if err != nil {
		return r, err
	}
	if !st.Settled(healReplicas) || slices.Contains(st.VCenter, controllers.VSphereName(vm)) {
		return r, fmt.Errorf("after the heal: %v", st)
	}
	r.resetCalls = op.calls.Calls()[resetMethod]
	want := int64(0)
	if restart {
		want = 1
	}
	if r.resetCalls != want {
		return r, fmt.Errorf("%d resets, want %d", r.resetCalls, want)
	}
	return r, nil
}

// allHealthy reports whether ns's one set reports all its replicas ready
// and none unhealthy, with remediation allowed, and each of its
// VirtualMachines is Ready, Healthy and recorded healthy by the binding;
// it returns their names.
func allHealthy(ctx context.Context, b *bench, ns string) ([]string, bool) {
	var set vmv1.VirtualMachineReplicaSet
	if err := b.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "set-000"}, &set); err != nil {
		return nil, false
	}
	st := set.Status
	if st.ObservedGeneration != set.Generation || st.Replicas != healReplicas || st.ReadyReplicas != healReplicas ||
		st.UnhealthyReplicas == nil || *st.UnhealthyReplicas != 0 ||
		!meta.IsStatusConditionTrue(st.Conditions, kube.ConditionRemediationAllowed) {
		return nil, false
	}
	var vms vmv1.VirtualMachineList
	if err := b.c.List(ctx, &vms, client.InNamespace(ns)); err != nil || len(vms.Items) != healReplicas {
		return nil, false
	}
	var names []string
	for _, v := range vms.Items {
		h, ok := healthOf(&v)
		if v.DeletionTimestamp != nil || !ok || !h.Healthy || h.Unhealthy ||
			!meta.IsStatusConditionTrue(v.Status.Conditions, "Ready") ||
			!meta.IsStatusConditionTrue(v.Status.Conditions, controllers.ConditionHealthy) {
			return nil, false
		}
		names = append(names, v.Name)
	}
	return names, true
}

// health is what the harness reads of the binding's health annotation.
type health struct {
	Healthy   bool   `json:"healthy"`
	Unhealthy bool   `json:"unhealthy"`
	Restarted bool   `json:"restarted"`
	Since     string `json:"since"`
	Started   string `json:"started"`
}

// healthOf reads vm's kube.AnnotationHealth.
func healthOf(vm *vmv1.VirtualMachine) (health, bool) {
	var h health
	v, ok := vm.Annotations[kube.AnnotationHealth]
	return h, ok && json.Unmarshal([]byte(v), &h) == nil
}

// floorParts measures, on a simulator of their own serving one call at a
// time as the operator's does, one provider Create of the operator's
// template (a clone, then a power-on: vcsim boots nothing, so the power-on
// is the boot) and one provider Reset of the VM made, each the median of
// floorSamples.
func floorParts(ctx context.Context) (reset, create time.Duration, err error) {
	sim, err := vcsim.New(vcsim.Serialized)
	if err != nil {
		return 0, 0, err
	}
	defer sim.Close()
	p, err := vsphere.New(ctx, sim.Config())
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = p.Close(context.Background()) }()
	var creates, resets []time.Duration
	for i := range floorSamples {
		name := fmt.Sprintf("floor-%d", i)
		start := time.Now()
		if _, err := p.Create(ctx, vmprovider.Spec{Name: name, Owner: vmprovider.Owner{UID: "bench"}, PowerOn: true}); err != nil {
			return 0, 0, err
		}
		creates = append(creates, time.Since(start))
		start = time.Now()
		if err := p.Reset(ctx, name, "bench"); err != nil {
			return 0, 0, err
		}
		resets = append(resets, time.Since(start))
	}
	return median(resets), median(creates), nil
}

// pollFor calls done every healPoll until it reports true, fails, or
// timeout passes.
func pollFor(ctx context.Context, timeout time.Duration, done func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(healPoll)
	defer t.Stop()
	for {
		ok, err := done()
		if ok || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func durationsOf(rs []healRun, f func(healRun) time.Duration) []time.Duration {
	var ds []time.Duration
	for _, r := range rs {
		ds = append(ds, f(r))
	}
	return ds
}

// median is the middle of ds (the mean of the middle two for an even
// count).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// spread spells ds as median [min–max].
func spread(ds []time.Duration) string {
	return fmt.Sprintf("%v [%v–%v]", ms(median(ds)), ms(slices.Min(ds)), ms(slices.Max(ds)))
}

// spreadRatio spells rs as median [min–max].
func spreadRatio(rs []float64) string {
	s := slices.Clone(rs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return fmt.Sprintf("%.2f [%.2f–%.2f]", m, s[0], s[len(s)-1])
}

func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
