package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/internal/benchkit"
	"github.com/replicakit/replicakit/internal/testenv"
)

func main() {
	n := flag.Int("n", 500, "Pods per scale-up")
	fastOnly := flag.Bool("fast-only", false, "measure only at 1000/1000")
	runs := flag.Int("runs", 11, "runs at 1000/1000 (medians are reported)")
	serve := flag.Bool("serve-binding", false, "run only the binding's manager (started by the harness itself)")
	kubeconfig := flag.String("api-kubeconfig", "", "with -serve-binding: the API server")
	qps := flag.Float64("qps", 1000, "with -serve-binding: client QPS")
	burst := flag.Int("burst", 1000, "with -serve-binding: client burst")
	profile := flag.String("binding-cpuprofile", "", "write the binding process's CPU profile to this file (.1, .2, … per process)")
	owners := flag.String("owners", "100x5,400x5,1000x2", "many-owner fleets, KxM: K owners of M Pods in one namespace")
	ownerRuns := flag.Int("owner-runs", 3, "runs of each fleet (medians are reported)")
	idle := flag.Duration("idle", 20*time.Second, "the idle window after a fleet converged, for its CPU")
	ownersOnly := flag.Bool("owners-only", false, "measure only the many-owner fleets")
	serveRoll := flag.Bool("serve-rollout", false, "run only the rollouts' binding manager (started by the harness itself)")
	rolloutRuns := flag.Int("rollout-runs", 5, "runs of each rollout side (medians are reported)")
	readyDelay := flag.Duration("kwok-ready-delay", time.Second, "kwok's delay before a rollout's new Pod is Running and Ready")
	deleteDelay := flag.Duration("kwok-delete-delay", 0, "kwok's delay before it removes a rollout's Pod being deleted (its termination)")
	rolloutOnly := flag.Bool("rollout-only", false, "measure only the rollouts")
	flag.Parse()
	fleets, err := parseFleets(*owners)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benche2e:", err)
		os.Exit(2)
	}
	limits := []limit{{"20 QPS / burst 30 (defaults)", 20, 30}, {"1000 QPS / burst 1000", 1000, 1000}}
	if *fastOnly {
		limits = limits[1:]
	}
	// Only the controllers' errors, to standard error.
	ctrl.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	if *serveRoll {
		if err := serveRollout(*kubeconfig, float32(*qps), *burst, *profile); err != nil {
			fmt.Fprintln(os.Stderr, "benche2e -serve-rollout:", err)
			os.Exit(1)
		}
		return
	}
	if *serve {
		if err := serveBinding(*kubeconfig, float32(*qps), *burst, *profile); err != nil {
			fmt.Fprintln(os.Stderr, "benche2e -serve-binding:", err)
			os.Exit(1)
		}
		return
	}
	fo := fleetOptions{fleets: fleets, runs: *ownerRuns, idle: *idle, only: *ownersOnly}
	ro := rolloutOptions{runs: *rolloutRuns, readyDelay: *readyDelay, deleteDelay: *deleteDelay, only: *rolloutOnly}
	if err := run(context.Background(), limits, *runs, *n, *profile, fo, ro); err != nil {
		fmt.Fprintln(os.Stderr, "benche2e:", err)
		os.Exit(1)
	}
}

// limit is a client rate limit both controllers get.
type limit struct {
	name  string
	qps   float32
	burst int
}

// line is one row of the printed table.
type line struct {
	what            string
	kit, ref        time.Duration
	kitWrites, refW benchkit.Writes
	perReplica      int
	refName, goal   string
	runs            string  // per-run ratios, when there were several
	ratio           float64 // the median per-run ratio; 0: kit/ref
}

// fleetOptions say which many-owner fleets to measure, and how.
type fleetOptions struct {
	fleets []fleet
	runs   int
	idle   time.Duration
	only   bool // skip everything else
}

// run measures at each of limits (runs times at 1000/1000, medians
// reported), then the raw loop, the many-owner fleets, the steady state
// and the rollouts.
func run(ctx context.Context, limits []limit, fastRuns, n int, profile string, fo fleetOptions, ro rolloutOptions) (err error) {
	scheme := newScheme()
	fmt.Println("Starting etcd, kube-apiserver and kube-controller-manager (garbage collector) ...")
	env, err := testenv.Start(testenv.Options{CRDs: []*apiextensionsv1.CustomResourceDefinition{testenv.WidgetCRD()}, Scheme: scheme})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, env.Stop()) }()
	admin := rest.CopyConfig(env.Config)
	// The harness itself is never the bottleneck: its clients are not
	// throttled, and both owners are scaled through equal ones.
	admin.QPS, admin.Burst = -1, 0
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return err
	}
	c, err := client.New(admin, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	b := &bench{env: env, cs: cs, c: c, n: n, scheme: scheme, profile: profile, ns: benchkit.Namespaces{CS: cs}}

	var lines []line
	if ro.only {
		fmt.Printf("Rollouts of %d Pods, 1000 QPS / burst 1000, kwok ready after %v ...\n", n, ro.readyDelay)
		ls, summary, err := b.rollouts(ctx, ro)
		if err != nil {
			return err
		}
		print(ls, nil, n)
		fmt.Print("\n" + summary)
		return nil
	}
	if fo.only {
		fmt.Printf("Many owners, 1000 QPS / burst 1000: %v ...\n", fo.fleets)
		ls, err := b.owners(ctx, fo.fleets, fo.runs, fo.idle)
		if err != nil {
			return err
		}
		print(ls, nil, n)
		return nil
	}
	var fastUp line // the binding's 0→n at 1000/1000, beside the raw loop
	for _, l := range limits {
		fmt.Printf("Client limits %s: ReplicaSet controller and binding, 0→%d→0 ...\n", l.name, n)
		runs := fastRuns
		if l.qps < 1000 {
			runs = 1 // the rate limiter sets the pace: repeats agree
		}
		ls, err := b.compare(ctx, l, runs, l.qps == 1000)
		if err != nil {
			return err
		}
		if l.qps == 1000 {
			fastUp = ls[0]
		}
		lines = append(lines, ls...)
	}
	if fastUp.kit == 0 {
		return errors.New("no binding figure at 1000/1000 to compare with the raw loop")
	}
	fmt.Printf("Raw loop: %d Pod creates from 16 goroutines, no client limit ...\n", n)
	raw, err := b.rawLoop(ctx, fastRuns, fastUp)
	if err != nil {
		return err
	}
	lines = append(lines, raw)
	fmt.Printf("Many owners, 1000 QPS / burst 1000: %v ...\n", fo.fleets)
	fl, err := b.owners(ctx, fo.fleets, fo.runs, fo.idle)
	if err != nil {
		return err
	}
	lines = append(lines, fl...)
	fmt.Println("Steady state ...")
	steady, err := b.steady(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("Rollouts of %d Pods, 1000 QPS / burst 1000, kwok ready after %v ...\n", n, ro.readyDelay)
	rl, summary, err := b.rollouts(ctx, ro)
	if err != nil {
		return err
	}
	print(append(lines, rl...), steady, n)
	fmt.Print("\n" + summary)
	return nil
}

func print(lines []line, steady benchkit.Writes, n int) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "\nmeasurement\treplicakit\tbaseline\tbaseline is\tratio\tper run\tgoal\treplicakit writes/replica\tbaseline writes/replica\treplicakit writes")
	for _, l := range lines {
		ratio := fmt.Sprintf("%.2f", l.ratio)
		switch {
		case l.ratio == 0:
			ratio = fmt.Sprintf("%.2f", float64(l.kit)/float64(l.ref))
		case l.ratio < 0: // a difference, not a ratio
			ratio = fmt.Sprintf("Δ %+.2f s", (l.kit - l.ref).Seconds())
		}
		kw, rw := "-", "-"
		if l.perReplica > 0 {
			kw = fmt.Sprintf("%.3f", l.kitWrites.Total()/float64(l.perReplica))
			if l.refW != nil {
				rw = fmt.Sprintf("%.3f", l.refW.Total()/float64(l.perReplica))
			}
		}
		fmt.Fprintf(w, "%s\t%v\t%v\t%s\t%s\t%s\t%s\t%s\t%s\t%v\n", l.what, l.kit.Round(time.Millisecond), l.ref.Round(time.Millisecond), l.refName, ratio, l.runs, l.goal, kw, rw, l.kitWrites)
	}
	if steady != nil {
		fmt.Fprintf(w, "steady-state pass (5 reconciles of a settled %d-Pod Widget)\t\t\t\t\t\t0 writes\t\t\t%.0f writes: %v\n", n, steady.Total(), steady)
	}
	_ = w.Flush() // stdout, as the Fprintf calls above: nowhere to report
}

// bench holds what every measurement shares.
type bench struct {
	env *testenv.Env
	cs  kubernetes.Interface
	c   client.Client // the harness's own writes, unthrottled like cs
	n   int
	ns  benchkit.Namespaces // fresh namespaces
	// scheme knows the built-in kinds and CRDs.
	scheme *runtime.Scheme
	// profile, when set, is where binding processes write CPU profiles,
	// numbered by profiles.
	profile  string
	profiles int
}

// podNamespace creates a namespace and follows its Pods.
func (b *bench) podNamespace(ctx context.Context, prefix string) (string, *podCount, error) {
	ns, err := b.ns.New(ctx, prefix)
	if err != nil {
		return "", nil, err
	}
	pods, err := countPods(b.cs, ns)
	return ns, pods, err
}

// timed runs do, waits until the namespace holds want Pods, then lets
// trailing writes (status, events) land before counting the writes. The
// clock starts before do, or, with fromAccepted, once do's write has been
// accepted: an owner's scale or delete is then timed from the change the
// controller can see, not from how long the API server took to take it
// (printed as "scale writes accepted in").
func (b *bench) timed(ctx context.Context, pods *podCount, want int, fromAccepted bool, do func() error) (time.Duration, benchkit.Writes, error) {
	before, err := benchkit.ScrapeWrites(ctx, b.cs)
	if err != nil {
		return 0, nil, err
	}
	start := time.Now()
	if err := do(); err != nil {
		return 0, nil, err
	}
	if fromAccepted {
		start = time.Now()
	}
	if err := pods.await(ctx, want, 5*time.Minute); err != nil {
		return 0, nil, err
	}
	took := time.Since(start)
	time.Sleep(3 * time.Second)
	after, err := benchkit.ScrapeWrites(ctx, b.cs)
	if err != nil {
		return 0, nil, err
	}
	w := after.Minus(before)
	delete(w, "widgets") // the harness's own spec writes
	delete(w, "replicasets")
	delete(w, "namespaces")
	return took, w, nil
}

// rawLoop creates n Pods from 16 goroutines with no client limit, runs
// times, and reports the median beside kit, the binding's 0→n.
func (b *bench) rawLoop(ctx context.Context, runs int, kit line) (line, error) {
	var tooks []time.Duration
	var w benchkit.Writes
	for range runs {
		took, ww, err := b.rawOnce(ctx)
		if err != nil {
			return line{}, err
		}
		tooks, w = append(tooks, took), ww
	}
	return line{what: fmt.Sprintf("0→%d Pods, 1000/1000, against a raw loop", b.n), kit: kit.kit, kitWrites: kit.kitWrites, ref: median(tooks), refW: w,
		perReplica: b.n, refName: "16 goroutines, no limit", goal: "≤ 1.3"}, nil
}

func (b *bench) rawOnce(ctx context.Context) (time.Duration, benchkit.Writes, error) {
	ns, pods, err := b.podNamespace(ctx, "raw")
	if err != nil {
		return 0, nil, err
	}
	defer pods.close()
	return b.timed(ctx, pods, b.n, false, func() error {
		var wg sync.WaitGroup
		errs := make([]error, 16)
		for g := range 16 {
			wg.Go(func() {
				for i := g; i < b.n; i += 16 {
					p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("raw-%d", i), Labels: map[string]string{"app": "raw"}}, Spec: podSpec()}
					if _, err := b.cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
						errs[g] = err
						return
					}
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	})
}

// newScheme knows client-go's kinds and CRDs.
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}
