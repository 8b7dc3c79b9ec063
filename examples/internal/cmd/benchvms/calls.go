package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"text/tabwriter"

	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// rolloutVMs is the size of the set the rollout scenarios roll out.
const rolloutVMs = 20

// callScenarios are the scenarios -calls-only counts: 0→n, and the
// rollout of rolloutVMs VMs from 4 to 8 GiB (by replacement, today).
func callScenarios(n int) []scenario {
	return []scenario{
		{name: fmt.Sprintf("0→%d VMs", n), replicas: n},
		memoryRollout(fmt.Sprintf("a rollout of %d VMs from 4 to 8 GiB (by replacement)", rolloutVMs), rolloutVMs),
		memoryRolloutInPlace(fmt.Sprintf("a rollout of %d VMs from 4 to 8 GiB in place (hot-add)", rolloutVMs), rolloutVMs),
	}
}

// perVM is one run's counts per VM.
type perVM struct {
	calls, watch, tasks float64            // all calls, the watch's, tasks started
	byMethod, watchBy   map[string]float64 // calls (watch included) and the watch's, by method
	tasksBy             map[string]float64
}

// beyondWatch is the calls per VM not counting the watch.
func (p perVM) beyondWatch() float64 { return p.calls - p.watch }

func newPerVM(c vcsim.Counts, n int) perVM {
	per := func(m map[string]int64) map[string]float64 {
		out := map[string]float64{}
		for k, v := range m {
			out[k] = float64(v) / float64(n)
		}
		return out
	}
	return perVM{
		calls: float64(vcsim.Sum(c.Calls)) / float64(n), watch: float64(vcsim.Sum(c.Watch)) / float64(n), tasks: float64(vcsim.Sum(c.Tasks)) / float64(n),
		byMethod: per(c.Calls), watchBy: per(c.Watch), tasksBy: per(c.Tasks),
	}
}

// countCalls runs each scenario runs times through the operator and as
// its raw equivalent, without a latency model, and prints each run's
// calls and tasks per VM, their median [min–max] over the runs, the ratio
// of the operator's calls beyond its watch to the raw equivalent's, and
// the calls by method.
func (b *bench) countCalls(ctx context.Context, scs []scenario, runs int) error {
	for _, sc := range scs {
		fmt.Printf("%s: vCenter calls per VM at the simulator's gate, through the example operator and straight through the provider (%s), %d runs ...\n",
			sc.name, rawName(sc), runs)
		var ops, raws []perVM
		for i := range runs {
			r, err := raw(ctx, sc, nil)
			if err != nil {
				return fmt.Errorf("%s, run %d, raw: %w", sc.name, i+1, err)
			}
			o, err := b.throughOperator(ctx, sc, nil)
			if err != nil {
				return fmt.Errorf("%s, run %d, operator: %w", sc.name, i+1, err)
			}
			op, rw := newPerVM(o.counts, sc.replicas), newPerVM(r.counts, sc.replicas)
			ops, raws = append(ops, op), append(raws, rw)
			fmt.Printf("  run %d: operator %.2f calls per VM, %.2f beyond its watch (watch %.2f), %.2f tasks (%v); raw %.2f calls, %.2f tasks (%v); ratio %.2f\n",
				i+1, op.calls, op.beyondWatch(), op.watch, op.tasks, ms(o.took), rw.calls, rw.tasks, ms(r.took), op.beyondWatch()/rw.calls)
		}
		pick := func(ps []perVM, f func(perVM) float64) []float64 {
			out := make([]float64, len(ps))
			for i, p := range ps {
				out[i] = f(p)
			}
			return out
		}
		var ratios []float64
		for i := range ops {
			ratios = append(ratios, ops[i].beyondWatch()/raws[i].calls)
		}
		fmt.Printf("  over %d runs, median [min–max] per VM:\n", runs)
		fmt.Printf("    operator: calls %s, beyond its watch %s, the watch %s, tasks %s\n",
			spreadF(pick(ops, func(p perVM) float64 { return p.calls })), spreadF(pick(ops, perVM.beyondWatch)),
			spreadF(pick(ops, func(p perVM) float64 { return p.watch })), spreadF(pick(ops, func(p perVM) float64 { return p.tasks })))
		fmt.Printf("    raw: calls %s, tasks %s\n", spreadF(pick(raws, func(p perVM) float64 { return p.calls })), spreadF(pick(raws, func(p perVM) float64 { return p.tasks })))
		fmt.Printf("    operator beyond its watch ÷ raw: %s (goal ≤ 1.2)\n", spreadF(ratios))
		if err := printByMethod(ops, raws); err != nil {
			return err
		}
	}
	return nil
}

// rawName says what a scenario's raw equivalent does.
func rawName(sc scenario) string {
	switch {
	case sc.change == nil:
		return fmt.Sprintf("%d provider creates, %d at a time", sc.replicas, vsphere.DefaultMaxTasks)
	case sc.inPlace:
		return fmt.Sprintf("%d provider resizes, %d at a time", sc.replicas, vsphere.DefaultMaxTasks)
	}
	return fmt.Sprintf("%d provider creates of the new VM and deletes of the old, one at a time", sc.replicas)
}

// printByMethod prints the calls per VM by method, each the median over
// the runs: the operator's beyond its watch and its watch's, the raw
// equivalent's, and the difference, the largest first.
func printByMethod(ops, raws []perVM) error {
	methods := map[string]bool{}
	for _, p := range slices.Concat(ops, raws) {
		for m := range p.byMethod {
			methods[m] = true
		}
	}
	med := func(ps []perVM, f func(perVM) float64) float64 {
		xs := make([]float64, len(ps))
		for i, p := range ps {
			xs[i] = f(p)
		}
		return medianF(xs)
	}
	type line struct {
		method             string
		op, watch, rw, tsk float64
	}
	var lines []line
	for m := range methods {
		l := line{method: m}
		l.op = med(ops, func(p perVM) float64 { return p.byMethod[m] - p.watchBy[m] })
		l.watch = med(ops, func(p perVM) float64 { return p.watchBy[m] })
		l.rw = med(raws, func(p perVM) float64 { return p.byMethod[m] })
		l.tsk = med(ops, func(p perVM) float64 { return p.tasksBy[m] })
		lines = append(lines, l)
	}
	slices.SortFunc(lines, func(a, b line) int {
		return cmp.Or(cmp.Compare(b.op-b.rw, a.op-a.rw), cmp.Compare(a.method, b.method))
	})
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "    method\toperator\tits watch\traw\toperator − raw\toperator's tasks\t")
	for _, l := range lines {
		fmt.Fprintf(w, "    %s\t%.2f\t%.2f\t%.2f\t%+.2f\t%.2f\t\n", l.method, l.op, l.watch, l.rw, l.op-l.rw, l.tsk)
	}
	return w.Flush()
}

// medianF is the middle of xs (the mean of the middle two for an even
// count).
func medianF(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// spreadF spells xs as median [min–max].
func spreadF(xs []float64) string {
	return fmt.Sprintf("%.2f [%.2f–%.2f]", medianF(xs), slices.Min(xs), slices.Max(xs))
}
