package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	"github.com/replicakit/replicakit/internal/benchkit"
	"github.com/replicakit/replicakit/internal/testenv"
)

func main() {
	n := flag.Int("vms", 100, "VMs in the one set timed from 0")
	sets := flag.String("vm-sets", "100x3", "sets of VMs created at once, KxM: K sets of M VMs")
	cpuprofile := flag.String("cpuprofile", "", "write this process's CPU profile (the example operator and vcsim run in it) to this file")
	crds := flag.String("crds", "vmset/config/crd/bases", "the example operator's CRDs")
	vcOnly := flag.Bool("vcenters-only", false, "measure only 0→N over two zones on two vCenters beside one")
	healOnly := flag.Bool("heal-only", false, "measure only the healing of a hung guest, beside its floor")
	healRuns := flag.Int("heal-runs", 5, "runs of each healing measurement (restart on, restart off)")
	hooksOnly := flag.Bool("hooks-only", false, "measure only a scale-down with a drain hook, beside the same without")
	callsOnly := flag.Bool("calls-only", false, "count only vCenter calls and tasks per VM at the simulator's gate, operator beside raw provider calls: 0→N and a rollout of 20, by replacement and in place")
	callsRuns := flag.Int("calls-runs", 3, "runs of each -calls-only measurement")
	latency := flag.Bool("latency", false, "time only 0→20 (full and linked clones) and a rollout of 20 (by replacement and in place) under the latency model (vcsim.RealWorld scaled by -latency-scale), operator beside raw")
	latencyScale := flag.Float64("latency-scale", 0.05, "the factor on the latency model's times (0.05: a 2-minute full clone takes 6 s)")
	latencyRuns := flag.Int("latency-runs", 3, "runs of each -latency measurement")
	flag.Parse()
	var k, m int
	if _, err := fmt.Sscanf(*sets, "%dx%d", &k, &m); err != nil || k < 1 || m < 1 || *n < 1 || *healRuns < 1 || *callsRuns < 1 || *latencyRuns < 1 || *latencyScale <= 0 {
		fmt.Fprintf(os.Stderr, "benchvms: -vm-sets %q: want KxM, such as 100x3, -vms and the runs at least 1, -latency-scale above 0\n", *sets)
		os.Exit(2)
	}
	// Only the controllers' errors, to standard error.
	ctrl.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchvms:", err)
			os.Exit(2)
		}
	}
	o := only{vcenters: *vcOnly, heal: *healOnly, hooks: *hooksOnly, calls: *callsOnly, latency: *latency}
	err := run(context.Background(), *crds, *n, k, m, o, *healRuns, *callsRuns, latencyRun{scale: *latencyScale, runs: *latencyRuns})
	pprof.StopCPUProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchvms:", err)
		os.Exit(1)
	}
}

// only says which measurements alone to make; none set, the default ones
// (all but calls and latency).
type only struct {
	vcenters, heal, hooks, calls, latency bool
}

// all reports whether no measurement alone was asked for.
func (o only) all() bool { return o == only{} }

// latencyRun is how the latency measurements run.
type latencyRun struct {
	scale float64
	runs  int
}

// run starts the API server, measures and prints the table.
func run(ctx context.Context, crds string, n, sets, per int, o only, healRuns, callsRuns int, lr latencyRun) (err error) {
	fmt.Println("Starting etcd and kube-apiserver ...")
	env, err := testenv.Start(testenv.Options{CRDDirectoryPaths: []string{crds}, Scheme: vmcheck.Scheme()})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, env.Stop()) }()
	admin := rest.CopyConfig(env.Config)
	admin.QPS, admin.Burst = -1, 0 // the harness is never the bottleneck
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return err
	}
	c, err := client.New(admin, client.Options{Scheme: vmcheck.Scheme()})
	if err != nil {
		return err
	}
	b := &bench{env: env, cs: cs, c: c, ns: benchkit.Namespaces{CS: cs}}
	var rows []row
	if o.calls {
		if err := b.countCalls(ctx, callScenarios(n), callsRuns); err != nil {
			return err
		}
	}
	if o.latency {
		lrows, err := b.timeLatency(ctx, latencyScenarios(), lr.scale, lr.runs)
		if err != nil {
			return err
		}
		rows = append(rows, lrows...)
	}
	if o.hooks {
		fmt.Printf("%d→0 VMs through the example operator, without hooks and with a %v drain hook, %d runs ...\n", hookReplicas, hookDrain, healRuns)
		hrows, err := b.hooks(ctx, healRuns)
		if err != nil {
			return err
		}
		rows = append(rows, hrows...)
	}
	if o.all() {
		fmt.Printf("0→%d VMs through the example operator on vcsim ...\n", n)
		if rows, err = b.vms(ctx, n, sets, per); err != nil {
			return err
		}
	}
	if o.all() || o.vcenters {
		fmt.Printf("0→%d VMs over two zones, on one vCenter and on two ...\n", n)
		vc, err := b.vcenters(ctx, n)
		if err != nil {
			return err
		}
		rows = append(rows, vc)
	}
	if o.all() || o.heal {
		fmt.Printf("A hung guest healed through the example operator (%d replicas, unhealthyWindow %v, startupWindow %v), %d runs ...\n",
			healReplicas, healUnhealthyWindow, healStartupWindow, healRuns)
		heal, err := b.heal(ctx, healRuns)
		if err != nil {
			return err
		}
		rows = append(rows, heal...)
	}
	if len(rows) == 0 {
		return nil
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "\nmeasurement\texample operator\tbaseline\tbaseline is\tratio\tgoal")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%v\t%v\t%s\t%.2f\t%s\n", r.what, r.took.Round(time.Millisecond), r.ref.Round(time.Millisecond), r.refName, float64(r.took)/float64(r.ref), r.goal)
	}
	return w.Flush()
}

// row is one line of the printed table.
type row struct {
	what          string
	took, ref     time.Duration
	refName, goal string
}

// bench holds what every measurement shares.
type bench struct {
	env *testenv.Env
	cs  kubernetes.Interface
	c   client.Client       // the harness's own writes, unthrottled like cs
	ns  benchkit.Namespaces // fresh namespaces
}
