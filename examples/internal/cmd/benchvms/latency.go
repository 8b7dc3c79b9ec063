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

// latencyScenarios are the scenarios -latency times under the latency
// model. To come, each a line here (see scenario): 0→20 with linked
// clones beside these full ones, and the rollout in place beside this one
// by replacement.
func latencyScenarios() []scenario {
	return []scenario{
		{name: fmt.Sprintf("0→%d VMs, full clones", latencyVMs), replicas: latencyVMs},
		memoryRollout(fmt.Sprintf("a rollout of %d VMs from 4 to 8 GiB by replacement", latencyVMs), latencyVMs),
	}
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
	for _, sc := range scs {
		fmt.Printf("%s, through the example operator and straight through the provider (%s), %d runs ...\n", sc.name, rawName(sc), runs)
		var ops, raws []time.Duration
		var rs []float64
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
			fmt.Printf("  run %d: operator %v, raw %v, ratio %.2f; unscaled %v and %v; per VM, operator %.2f calls (%.2f beyond its watch), %.2f tasks, raw %.2f calls, %.2f tasks\n",
				i+1, ms(o.took), ms(r.took), rs[i], unscale(o.took, scale), unscale(r.took, scale),
				op.calls, op.beyondWatch(), op.tasks, rw.calls, rw.tasks)
		}
		fmt.Printf("  over %d runs, median [min–max]: operator %s, raw %s, ratio %s; unscaled, operator %v, raw %v\n",
			runs, spread(ops), spread(raws), spreadRatio(rs), unscale(median(ops), scale), unscale(median(raws), scale))
		rows = append(rows, row{what: fmt.Sprintf("%s, vCenter's times ×%g (median of %d)", sc.name, scale, runs),
			took: median(ops), ref: median(raws), refName: "the same straight through the provider", goal: "≈ 1"})
	}
	return rows, nil
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
