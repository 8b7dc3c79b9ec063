package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/internal/benchkit"
	"github.com/replicakit/replicakit/internal/widgetkind"
)

// fleet is k owners of m Pods each, all in one namespace.
type fleet struct{ k, m int }

func (f fleet) String() string { return fmt.Sprintf("%d×%d", f.k, f.m) }

// parseFleets reads "100x5,400x5,1000x2".
func parseFleets(s string) ([]fleet, error) {
	var out []fleet
	for _, part := range strings.Split(s, ",") {
		k, m, ok := strings.Cut(strings.TrimSpace(part), "x")
		kn, err1 := strconv.Atoi(k)
		mn, err2 := strconv.Atoi(m)
		if !ok || err1 != nil || err2 != nil || kn <= 0 || mn <= 0 {
			return nil, fmt.Errorf("owners %q: want KxM, such as 400x5", part)
		}
		out = append(out, fleet{kn, mn})
	}
	return out, nil
}

// fleetOwner makes, scales and deletes named owners of Pods, and tells
// how many owners in a namespace report n replicas for their current spec.
type fleetOwner interface {
	createNamed(ctx context.Context, ns, name string, n int) error
	scaleNamed(ctx context.Context, ns, name string, n int) error
	deleteNamed(ctx context.Context, ns, name string) error
	reporting(ctx context.Context, ns string, n int) (int, error)
}

// fleetRun is one side's figures for one fleet.
type fleetRun struct {
	up, down             time.Duration
	upCPU, downCPU, idle time.Duration
	// upServer and downServer are the CPU the API server and etcd spent
	// meanwhile: the work each side's owners and writes cost them.
	upServer, downServer time.Duration
	upW, downW           benchkit.Writes // the API server's writes, taken after the idle window
}

// owners measures each fleet runs times on each side (the ReplicaSet
// controller, the binding with Widgets, the binding with StatefulSets), at
// 1000/1000, in an order that changes from run to run (runOrder): the time from creating every owner
// until the last Pod exists and every owner's status reports its Pods, the
// controller process's CPU over it, its CPU in an idle window after, and
// the same for scaling every owner to 0.
func (b *bench) owners(ctx context.Context, fleets []fleet, runs int, idle time.Duration) ([]line, error) {
	l := limit{"1000 QPS / burst 1000", 1000, 1000}
	stopKCM, kcmPID, err := b.startReplicaSetController(l)
	if err != nil {
		return nil, err
	}
	defer stopKCM()
	stopMgr, kitPID, err := b.startBinding(l)
	if err != nil {
		return nil, err
	}
	defer stopMgr()

	// Three sides: the ReplicaSet controller, the binding with Widget
	// owners (a custom resource, JSON), and the binding with StatefulSet
	// owners (built in, protobuf, as a ReplicaSet is).
	type side struct {
		name, short string // short names the side's profiles
		owner       fleetOwner
		pid         int
		runs        []fleetRun
	}
	var lines []line
	for _, f := range fleets {
		sides := []*side{
			{name: "ReplicaSet controller", short: "rs", owner: rsOwner{b}, pid: kcmPID},
			{name: "binding", short: "widget", owner: widgetOwner{b}, pid: kitPID},
			{name: "binding, StatefulSet owners", short: "statefulset", owner: setOwner{b}, pid: kitPID},
		}
		for run := range runs {
			for _, s := range runOrder(run, sides[0], sides[1], sides[2]) {
				fmt.Printf("  %s owners, run %d: %s ...\n", f, run+1, s.name)
				prof := ""
				if b.profile != "" && *profilePhase != "" {
					prof = fmt.Sprintf("%s.%dx%d.%s.%d", b.profile, f.k, f.m, s.short, run+1)
				}
				r, err := b.fleetOnce(ctx, s.owner, s.pid, f, idle, prof)
				if err != nil {
					return nil, fmt.Errorf("%s, %s: %w", f, s.name, err)
				}
				fmt.Printf("    up %v (CPU %v, server %v; %v), idle CPU %v, down %v (CPU %v, server %v; %v)\n", r.up.Round(time.Millisecond), r.upCPU, r.upServer, r.upW,
					r.idle, r.down.Round(time.Millisecond), r.downCPU, r.downServer, r.downW)
				s.runs = append(s.runs, r)
			}
		}
		lines = append(lines, fleetLines(f, sides[1].runs, sides[0].runs)...)
		lines = append(lines, builtinLines(f, sides[2].runs, sides[0].runs)...)
	}
	return lines, nil
}

// fleetLines turns the runs of one fleet into table rows.
func fleetLines(f fleet, kit, rs []fleetRun) []line {
	row := func(what, goal string, get func(fleetRun) time.Duration) line {
		return fleetRow(f, what, goal, kit, rs, get)
	}
	withWrites := func(l line, kw, rw benchkit.Writes) line {
		l.kitWrites, l.refW, l.perReplica = kw, rw, f.k*f.m
		return l
	}
	last := len(kit) - 1
	pick := pickRuns
	idleK, idleR := pick(kit, func(r fleetRun) time.Duration { return r.idle }), pick(rs, func(r fleetRun) time.Duration { return r.idle })
	return []line{
		withWrites(row("all created, time", "≤ 1.0", func(r fleetRun) time.Duration { return r.up }), kit[last].upW, rs[last].upW),
		row("all created, controller CPU", "≤ 1.0", func(r fleetRun) time.Duration { return r.upCPU }),
		row("all created, API server and etcd CPU", "-", func(r fleetRun) time.Duration { return r.upServer }),
		withWrites(row("all scaled to 0, time", "≤ 1.0", func(r fleetRun) time.Duration { return r.down }), kit[last].downW, rs[last].downW),
		row("all scaled to 0, controller CPU", "≤ 1.0", func(r fleetRun) time.Duration { return r.downCPU }),
		row("all scaled to 0, API server and etcd CPU", "-", func(r fleetRun) time.Duration { return r.downServer }),
		{what: fmt.Sprintf("%s owners, controller CPU in the idle window after creating", f), kit: median(idleK), ref: median(idleR),
			refName: "ReplicaSet controller", goal: "within 0.1 s", runs: durations(idleK) + " / " + durations(idleR), ratio: -1},
	}
}

// builtinLines are the rows of the binding with StatefulSet owners beside
// the ReplicaSet controller: the like-for-like comparison, with no goal of
// their own.
func builtinLines(f fleet, sets, rs []fleetRun) []line {
	row := func(what string, get func(fleetRun) time.Duration) line {
		return fleetRow(f, "StatefulSet owners (built in, protobuf), "+what, "-", sets, rs, get)
	}
	return []line{
		row("all created, time", func(r fleetRun) time.Duration { return r.up }),
		row("all created, controller CPU", func(r fleetRun) time.Duration { return r.upCPU }),
		row("all created, API server and etcd CPU", func(r fleetRun) time.Duration { return r.upServer }),
		row("all scaled to 0, time", func(r fleetRun) time.Duration { return r.down }),
		row("all scaled to 0, controller CPU", func(r fleetRun) time.Duration { return r.downCPU }),
		row("all scaled to 0, API server and etcd CPU", func(r fleetRun) time.Duration { return r.downServer }),
	}
}

// fleetRow is one row of a fleet: what get reads of the binding's runs
// beside the ReplicaSet controller's.
func fleetRow(f fleet, what, goal string, kit, rs []fleetRun, get func(fleetRun) time.Duration) line {
	k, r := pickRuns(kit, get), pickRuns(rs, get)
	return line{what: fmt.Sprintf("%s owners in one namespace, %s", f, what), kit: median(k), ref: median(r),
		refName: "ReplicaSet controller", goal: goal, runs: ratios(k, r), ratio: medianRatio(k, r)}
}

func pickRuns(runs []fleetRun, get func(fleetRun) time.Duration) []time.Duration {
	out := make([]time.Duration, len(runs))
	for i, r := range runs {
		out[i] = get(r)
	}
	return out
}

func durations(ds []time.Duration) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = fmt.Sprintf("%.2f", d.Seconds())
	}
	return strings.Join(s, " ")
}

// fleetOnce creates f's owners at once in a fresh namespace, waits for
// every Pod, lets the controller idle, scales every owner to 0, and
// deletes them, reading the controller process's CPU around each step.
// With prof set, the binding's process profiles the step that
// -binding-cpuprofile-phase names into prof plus ".up" or ".down".
func (b *bench) fleetOnce(ctx context.Context, o fleetOwner, pid int, f fleet, idle time.Duration, prof string) (fleetRun, error) {
	var r fleetRun
	profiled := func(phase string) (func() error, error) {
		if prof == "" || *profilePhase != phase {
			return func() error { return nil }, nil
		}
		return window(pid, prof+"."+phase)
	}
	ns, pods, err := b.podNamespace(ctx, "fleet")
	if err != nil {
		return r, err
	}
	defer pods.close()
	name := func(i int) string { return fmt.Sprintf("o%d", i) }
	each := func(do func(i int) error) error {
		var wg sync.WaitGroup
		errs := make([]error, 16)
		for g := range 16 {
			wg.Go(func() {
				for i := g; i < f.k; i += 16 {
					if err := do(i); err != nil {
						errs[g] = err
						return
					}
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	server, err := serverCPU()
	if err != nil {
		return r, err
	}
	cpu0, err := benchkit.CPUOf(pid)
	if err != nil {
		return r, err
	}
	s0 := server()
	w0, err := benchkit.ScrapeWrites(ctx, b.cs)
	if err != nil {
		return r, err
	}
	endUp, err := profiled("up")
	if err != nil {
		return r, err
	}
	start := time.Now()
	if err := each(func(i int) error { return o.createNamed(ctx, ns, name(i), f.m) }); err != nil {
		return r, err
	}
	if err := pods.await(ctx, f.k*f.m, 10*time.Minute); err != nil {
		return r, err
	}
	if err := awaitReports(ctx, o, ns, f.k, f.m); err != nil {
		return r, err
	}
	r.up = time.Since(start)
	cpu1, err := benchkit.CPUOf(pid)
	if err != nil {
		return r, err
	}
	if err := endUp(); err != nil {
		return r, err
	}
	r.upServer = server() - s0
	time.Sleep(idle)
	cpu2, err := benchkit.CPUOf(pid)
	if err != nil {
		return r, err
	}
	s2 := server()
	w1, err := benchkit.ScrapeWrites(ctx, b.cs)
	if err != nil {
		return r, err
	}
	endDown, err := profiled("down")
	if err != nil {
		return r, err
	}
	start = time.Now()
	if err := each(func(i int) error { return o.scaleNamed(ctx, ns, name(i), 0) }); err != nil {
		return r, err
	}
	if err := pods.await(ctx, 0, 10*time.Minute); err != nil {
		return r, err
	}
	if err := awaitReports(ctx, o, ns, f.k, 0); err != nil {
		return r, err
	}
	r.down = time.Since(start)
	cpu3, err := benchkit.CPUOf(pid)
	if err != nil {
		return r, err
	}
	if err := endDown(); err != nil {
		return r, err
	}
	r.downServer = server() - s2
	r.upCPU, r.idle, r.downCPU = cpu1-cpu0, cpu2-cpu1, cpu3-cpu2
	time.Sleep(3 * time.Second) // trailing status writes and events
	w2, err := benchkit.ScrapeWrites(ctx, b.cs)
	if err != nil {
		return r, err
	}
	r.upW, r.downW = ownWrites(w1.Minus(w0)), ownWrites(w2.Minus(w1))
	if err := each(func(i int) error { return o.deleteNamed(ctx, ns, name(i)) }); err != nil {
		return r, err
	}
	time.Sleep(2 * time.Second) // let the deletes' events settle before the next side
	return r, nil
}

// awaitReports waits until all k owners in ns report n replicas for their
// current spec: the controller has converged, status included, and what
// follows is idle.
func awaitReports(ctx context.Context, o fleetOwner, ns string, k, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for {
		got, err := o.reporting(ctx, ns, n)
		if err != nil || got == k {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d owners report %d replicas", got, k, n)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// rsOwner is the side whose owners are ReplicaSets, made by
// kube-controller-manager's ReplicaSet controller.
type rsOwner struct{ b *bench }

// widgetOwner is the side whose owners are Widgets, made by the binding.
type widgetOwner struct{ b *bench }

func (r rsOwner) createNamed(ctx context.Context, ns, name string, n int) error {
	sel := map[string]string{"app": name}
	_, err := r.b.cs.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(int32(n)),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: podSpec()},
		},
	}, metav1.CreateOptions{})
	return err
}

func (r rsOwner) scaleNamed(ctx context.Context, ns, name string, n int) error {
	_, err := r.b.cs.AppsV1().ReplicaSets(ns).Patch(ctx, name, types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n), metav1.PatchOptions{})
	return err
}

func (r rsOwner) deleteNamed(ctx context.Context, ns, name string) error {
	return r.b.cs.AppsV1().ReplicaSets(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
}

func (r rsOwner) reporting(ctx context.Context, ns string, n int) (int, error) {
	l, err := r.b.cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	got := 0
	for _, rs := range l.Items {
		if rs.Status.Replicas == int32(n) && rs.Status.ObservedGeneration == rs.Generation {
			got++
		}
	}
	return got, nil
}

func (w widgetOwner) reporting(ctx context.Context, ns string, n int) (int, error) {
	l := widgetkind.EmptyList()
	if err := w.b.c.List(ctx, l, client.InNamespace(ns)); err != nil {
		return 0, err
	}
	got := 0
	for _, it := range l.(*unstructured.UnstructuredList).Items {
		replicas, _, _ := unstructured.NestedInt64(it.Object, "status", "replicas")
		observed, _, _ := unstructured.NestedInt64(it.Object, "status", "observedGeneration")
		if replicas == int64(n) && observed == it.GetGeneration() {
			got++
		}
	}
	return got, nil
}

func (w widgetOwner) createNamed(ctx context.Context, ns, name string, n int) error {
	return w.b.c.Create(ctx, widgetkind.New(ns, name, int64(n)))
}

func (w widgetOwner) scaleNamed(ctx context.Context, ns, name string, n int) error {
	return w.b.c.Patch(ctx, widgetkind.New(ns, name, 0), client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n)))
}

func (w widgetOwner) deleteNamed(ctx context.Context, ns, name string) error {
	return w.b.c.Delete(ctx, widgetkind.New(ns, name, 0), client.PropagationPolicy(metav1.DeletePropagationBackground))
}

// ownWrites leaves out the harness's own writes to the owners.
func ownWrites(w benchkit.Writes) benchkit.Writes {
	delete(w, "widgets")
	delete(w, "replicasets")
	delete(w, "statefulsets")
	delete(w, "namespaces")
	delete(w, "serviceaccounts")
	return w
}
