package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/replicakit/replicakit/internal/vcsim"
)

// latencyVMs is the size of the sets the latency scenarios make.
const latencyVMs = 20

// The latency scenarios, by name: 0→20 with full clones and with linked
// ones, and a rollout of 20 from 4 to 8 GiB by replacement and in place.
var (
	fullClones    = fmt.Sprintf("0→%d VMs, full clones", latencyVMs)
	linked        = fmt.Sprintf("0→%d VMs, linked clones", latencyVMs)
	byReplacing   = fmt.Sprintf("a rollout of %d VMs from 4 to 8 GiB by replacement", latencyVMs)
	inPlaceHotAdd = fmt.Sprintf("a rollout of %d VMs from 4 to 8 GiB in place (memory hot-add)", latencyVMs)
)

// latencyScenarios are the scenarios -latency times under the latency
// model.
func latencyScenarios() []scenario {
	return []scenario{
		{name: fullClones, replicas: latencyVMs},
		linkedClones(linked, latencyVMs),
		memoryRollout(byReplacing, latencyVMs),
		memoryRolloutInPlace(inPlaceHotAdd, latencyVMs),
	}
}

// latencyStats are a scenario's medians through the operator over the
// runs, and the fewest VMs a watch saw available in any run.
type latencyStats struct {
	took   time.Duration
	tasks  float64 // per VM
	work   time.Duration
	fewest int
}

// taskWork is what the tasks of p keep vCenter busy for per VM, at the
// model's unscaled times: a clone is minutes of copying, a reconfigure
// seconds, which a count of tasks does not tell apart.
func taskWork(p perVM) time.Duration {
	lat := vcsim.RealWorld()
	var d time.Duration
	for m, n := range p.tasksBy {
		d += time.Duration(n * float64(lat.TaskTime(m, nil)))
	}
	return d
}

// timeLatency times each scenario runs times through the operator and as
// its raw equivalent, on simulators playing vcsim.RealWorld scaled by
// scale, and prints each run, the median [min–max] and what the times
// come to unscaled.
func (b *bench) timeLatency(ctx context.Context, scs []scenario, scale float64, runs int) ([]row, error) {
	lat := vcsim.RealWorld()
	lat.Scale = scale
	fmt.Printf("The latency model (vcsim.RealWorld) at scale %g: a call's round trip %v; tasks %v; a linked clone %v\n",
		scale, lat.CallTime(), scaledTasks(lat), lat.TaskTime("CloneVM_Task", []byte(">createNewChildDiskBacking<")))
	var rows []row
	stats := map[string]latencyStats{}
	for _, sc := range scs {
		fmt.Printf("%s, through the example operator and straight through the provider (%s), %d runs ...\n", sc.name, rawName(sc), runs)
		var ops, raws []time.Duration
		var rs, tasks []float64
		var work []time.Duration
		fewest := sc.replicas
		for i := range runs {
			r, err := raw(ctx, sc, &lat)
			if err != nil {
				return nil, fmt.Errorf("%s, run %d, raw: %w", sc.name, i+1, err)
			}
			o, err := b.throughOperator(ctx, sc, &lat)
			if err != nil {
				return nil, fmt.Errorf("%s, run %d, operator: %w", sc.name, i+1, err)
			}
			ops, raws = append(ops, o.took), append(raws, r.took)
			rs = append(rs, float64(o.took)/float64(r.took))
			op, rw := newPerVM(o.counts, sc.replicas), newPerVM(r.counts, sc.replicas)
			tasks, work = append(tasks, op.tasks), append(work, taskWork(op))
			if sc.change != nil {
				fewest = min(fewest, o.fewest)
			}
			fmt.Printf("  run %d: operator %v, raw %v, ratio %.2f; unscaled %v and %v; per VM, operator %.2f calls (%.2f beyond its watch), %.2f tasks, raw %.2f calls, %.2f tasks\n",
				i+1, ms(o.took), ms(r.took), rs[i], unscale(o.took, scale), unscale(r.took, scale),
				op.calls, op.beyondWatch(), op.tasks, rw.calls, rw.tasks)
		}
		fmt.Printf("  over %d runs, median [min–max]: operator %s, raw %s, ratio %s; unscaled, operator %v, raw %v\n",
			runs, spread(ops), spread(raws), spreadRatio(rs), unscale(median(ops), scale), unscale(median(raws), scale))
		if sc.change != nil {
			fmt.Printf("  the fewest VirtualMachines an independent watch saw available during the rollout, over the runs: %d of %d\n", fewest, sc.replicas)
		}
		rows = append(rows, row{what: fmt.Sprintf("%s, vCenter's times ×%g (median of %d)", sc.name, scale, runs),
			took: median(ops), ref: median(raws), refName: "the same straight through the provider", goal: "≈ 1"})
		stats[sc.name] = latencyStats{took: median(ops), tasks: medianF(tasks), work: median(work), fewest: fewest}
	}
	return append(rows, compareLatency(stats, scale)...), nil
}

// compareLatency prints and returns, through the operator, the rollout
// in place beside the same by replacement (goals: at most 0.1 of the time
// and of the tasks, no VM unavailable) and 0→20 with linked clones beside
// full ones, when both of a pair were measured.
func compareLatency(stats map[string]latencyStats, scale float64) []row {
	var rows []row
	if in, rep := stats[inPlaceHotAdd], stats[byReplacing]; in.took > 0 && rep.took > 0 {
		fmt.Printf("In place ÷ by replacement, through the operator: time %.3f (goal ≤ 0.1; unscaled %v and %v), vCenter tasks per VM %.2f ÷ %.2f = %.3f (goal ≤ 0.1), the tasks' work per VM at vCenter's times %v ÷ %v = %.3f, the fewest available during the rollout %d of %d (goal %d)\n",
			float64(in.took)/float64(rep.took), unscale(in.took, scale), unscale(rep.took, scale),
			in.tasks, rep.tasks, in.tasks/rep.tasks, in.work, rep.work, float64(in.work)/float64(rep.work), in.fewest, latencyVMs, latencyVMs)
		rows = append(rows, row{what: inPlaceHotAdd + ", through the operator", took: in.took, ref: rep.took,
			refName: "the same by replacement", goal: "≤ 0.1"})
	}
	if l, f := stats[linked], stats[fullClones]; l.took > 0 && f.took > 0 {
		fmt.Printf("Linked ÷ full clones, 0→%d through the operator: time %.3f (unscaled %v and %v)\n",
			latencyVMs, float64(l.took)/float64(f.took), unscale(l.took, scale), unscale(f.took, scale))
		rows = append(rows, row{what: linked + ", through the operator", took: l.took, ref: f.took,
			refName: "the same with full clones", goal: "-"})
	}
	return rows
}

// scaledTasks lists the model's task times, scaled.
func scaledTasks(l vcsim.Latency) string {
	var methods []string
	for m := range l.Tasks {
		methods = append(methods, m)
	}
	slices.Sort(methods)
	out := ""
	for _, m := range methods {
		if out != "" {
			out += ", "
		}
		out += fmt.Sprintf("%s %v", m, l.TaskTime(m, nil))
	}
	return out
}

// unscale is what d, measured at scale, comes to at a vCenter's own
// times: an upper bound, as the operator's and the harness's own time is
// multiplied too.
func unscale(d time.Duration, scale float64) time.Duration {
	return time.Duration(float64(d) / scale).Round(time.Second)
}
