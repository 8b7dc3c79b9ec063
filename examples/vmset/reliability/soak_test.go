package reliability

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/procs"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/internal/faults"
	"github.com/replicakit/replicakit/internal/soakstat"
)

// SoakVar sets the soak's length (a Go duration); `make soak` passes
// SOAK (30m by default) through it. Unset, TestSoak runs for
// soakShort, too short to judge growth: it exercises the work, the
// watch, the sampling and the report, and checks the end state.
const (
	SoakVar    = "REPLICAKIT_SOAK"
	SoakDirVar = "REPLICAKIT_SOAK_DIR" // where the table and plot go
	soakShort  = 90 * time.Second
	// soakJudged is the shortest soak whose growth is judged: its second
	// half holds at least 10 samples 30 s apart.
	soakJudged = 10 * time.Minute
)

// apiFaults are the soak's API faults.
var apiFaults = faults.Rules{Rate: 0.05, RetryAfter: 1, PerRequest: 1, ExcludeLeases: true}

// soakSets are the sets the soak works on, one per namespace.
var soakSets = []string{"soak-0", "soak-1", "soak-2"}

// TestSoak drives both replicas with random work for the soak's length:
// sets scaled, rolled to another template and back, paused and resumed,
// deleted and made again, zones refusing clones, vCenter failing 5% of its
// tasks (0 to 15% as the work changes it), 5% of the replicas' API writes
// failing (429 with Retry-After, 500, 409), and, in the first half, the
// leader killed and (in a judged soak) the API server restarted. Every
// interval it samples each manager process (soakstat); a watch of its own
// checks the bounds throughout (soakWatch). At the end, with the faults
// lifted, every set must converge with nothing leaked or made twice and
// the foreign objects untouched; some requests answered 429 must have
// come again, each no sooner than its Retry-After; and, in a soak of
// soakJudged or more, no series of a process that lived through the
// second half may grow beyond its tolerance.
func TestSoak(t *testing.T) {
	total := soakShort
	if v := os.Getenv(SoakVar); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive duration such as 30m", SoakVar, v)
		}
		total = d
	}
	every := 30 * time.Second
	if total < soakJudged {
		every = 10 * time.Second
	}
	outDir := os.Getenv(SoakDirVar)
	if outDir == "" {
		outDir = t.TempDir()
	}
	seed := seedOf(t)
	t.Logf("soak for %v, sampling every %v; table and plot in %s", total, every, outDir)
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))

	// The replicas reach the API server through a proxy that fails 5% of
	// their writes, a first attempt each: 429 with Retry-After 1 s as API
	// priority and fairness sheds load, 500, and 409 on updates. Leases
	// are spared: a leader losing its Lease to injected faults would
	// measure the faults, not the replicas.
	proxy, err := faults.NewProxy(env.Require(t).Config, faults.ProxyOptions{Seed: seed, Rules: apiFaults})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := proxy.Kubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	f := startFleetOn(t, kubeconfig, "-task-delay=50ms", "-fault-rate=0.05", fmt.Sprintf("-seed=%d", seed))
	for _, m := range f.ms {
		m.Supervise()
	}
	ctx := context.Background()
	for _, ns := range soakSets {
		f.namespace(ns)
	}
	foreign := plantForeign(t, f, soakSets[0])
	begin := time.Now()
	runCtx, cancel := context.WithDeadline(ctx, begin.Add(total))
	defer cancel()
	// The watch runs until the end, the faults' lifting and the
	// convergence included.
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	w, err := startSoakWatch(watchCtx, f.e.Config)
	if err != nil {
		t.Fatal(err)
	}

	var sampler soakstat.Sampler
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			for _, m := range f.ms {
				if m.Running() {
					// A process that is going away fails to answer; the
					// sample is NaN and the run goes on.
					name, pid, url := m.Target()
					_ = sampler.Sample(runCtx, soakstat.Target{Process: name, PID: pid, MetricsURL: url}, time.Now())
				}
			}
			select {
			case <-runCtx.Done():
				return
			case <-tick.C:
			}
		}
	}()

	work := &soakWork{t: t, f: f, rng: rng}
	kills, restarts := work.run(runCtx, begin, total)
	<-sampled
	t.Logf("work done: %v; %d leader kills, %d API server restarts", work.done, kills, restarts)

	// The end: no faults, every set resumed, at its count.
	proxy.SetRate(0)
	work.calm(ctx)
	t.Logf("API faults: %v", proxy.Stats())
	throttled := 0
	for _, g := range proxy.RetryGaps() {
		if g.Fault != faults.TooManyRequests {
			continue
		}
		throttled++
		// 50 ms of slack for timers and the two clocks' reads.
		if g.Gap < g.RetryAfter-50*time.Millisecond {
			t.Errorf("%s %s came again %v after a 429 that said Retry-After %v", g.Method, g.URL, g.Gap, g.RetryAfter)
		}
	}
	if throttled == 0 {
		t.Error("no request came again after a 429: Retry-After was not exercised")
	}
	t.Logf("%d requests answered 429 came again, each at least Retry-After later", throttled)
	for _, ns := range soakSets {
		set := &vmv1.VirtualMachineReplicaSet{}
		err := f.e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, set)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		f.converge(ns, "web", int(*set.Spec.Replicas), 5*time.Minute)
		if leaked, dups := f.leaksAndDuplicates(ns, "web"); len(leaked)+len(dups) > 0 {
			t.Errorf("%s: leaked vSphere VMs %v, names held twice %v", ns, leaked, dups)
		}
	}
	if changed := foreign.changed(t, f); len(changed) > 0 {
		t.Errorf("foreign objects changed: %v", changed)
	}
	events, breaches, first := w.report()
	t.Logf("the watch checked %d changes: %d broke a bound", events, breaches)
	if events == 0 {
		t.Error("the watch saw no change: nothing was checked")
	}
	if breaches > 0 {
		t.Errorf("the watch saw bounds broken %d times: %v", breaches, first)
	}
	report(t, &sampler, begin.Add(total/2), f.ms, total >= soakJudged, outDir)
}

// processName names a replica's current process in the series: its name
// and how many processes it has had, such as "a#2".
func processName(m *procs.Manager) string {
	name, _, _ := m.Target()
	return name
}

// report judges the series of the processes that lived through the second
// half (from mid), writes the table and the plot of every series to dir,
// and logs the table.
func report(t *testing.T, s *soakstat.Sampler, mid time.Time, ms []*procs.Manager, judge bool, dir string) {
	t.Helper()
	all := s.Series()
	var judged []soakstat.Series
	for _, sr := range all {
		if len(sr.Points) > 0 && !sr.Points[0].T.After(mid) && slices.ContainsFunc(ms, func(m *procs.Manager) bool { return processName(m) == sr.Process }) {
			judged = append(judged, sr)
		}
	}
	// Every quantity must have been read from every process running at
	// the end: a metric renamed or gone would otherwise pass unseen.
	want := []string{"rss", "fds", "heap_inuse", "heap_live", "goroutines", "expectations", "zone_backoff",
		"cache_objects/virtualmachines", "cache_objects/virtualmachinereplicasets"}
	read := map[string]bool{}
	for _, sr := range all {
		if slices.ContainsFunc(sr.Points, func(p soakstat.Point) bool { return !math.IsNaN(p.V) }) {
			read[sr.Process+" "+sr.Name] = true
		}
	}
	for _, m := range ms {
		for _, name := range want {
			if !read[processName(m)+" "+name] {
				t.Errorf("%s: no sample of %s", processName(m), name)
			}
		}
	}
	results := soakstat.EvaluateFrom(judged, nil, mid)
	var table bytes.Buffer
	if err := soakstat.WriteTable(&table, results); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var svg bytes.Buffer
	if err := soakstat.WriteSVG(&svg, all, results); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"soak.txt": table.Bytes(), "soak.svg": svg.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d series, %d of processes that lived through the second half:\n%s", len(all), len(judged), table.String())
	switch {
	case len(judged) == 0:
		t.Error("no process lived through the second half: nothing to judge")
	case !judge:
		t.Logf("a soak shorter than %v: growth reported, not judged", soakJudged)
	case soakstat.Failed(results):
		t.Error("a series grew beyond its tolerance over the second half (table above)")
	}
}
