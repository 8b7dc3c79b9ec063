package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/replicakit/replicakit/internal/benchkit"
)

// rolloutOptions say how to measure the rollouts.
type rolloutOptions struct {
	runs       int           // runs of each side (medians are reported)
	readyDelay time.Duration // kwok's delay before a new Pod is Running and Ready
	// deleteDelay is kwok's delay before it removes a Pod being deleted:
	// how long a Pod takes to terminate.
	deleteDelay time.Duration
	only        bool // skip everything else
}

// rolloutOwner makes an owner of n Pods at a template version, rolls it to
// another version, and tells when its status reports the rollout done.
type rolloutOwner interface {
	create(ctx context.Context, ns, name string, n int, version string) error
	roll(ctx context.Context, ns, name, version string) error
	// rolledOut reports whether the owner's status, for its current
	// generation, counts n replicas, all updated and available.
	rolledOut(ctx context.Context, ns, name string, n int) (bool, error)
	remove(ctx context.Context, ns, name string) error
	// resource is the owner's resource, on which the harness's own write
	// (the template change) is counted.
	resource() string
}

// rolloutRun is one side's figures for one rollout.
type rolloutRun struct {
	took, cpu, server, kwok time.Duration
	fewestAvailable         int
	mostLive, mostTotal     int
	w, kwokW                benchkit.Writes // the controller's writes, and kwok's
}

// rollouts measures a rolling update of n Pods from one template to
// another (maxSurge 25%, maxUnavailable 25%) by kube-controller-manager's
// Deployment controller (with its ReplicaSet controller), and by the
// binding with a StatefulSet owner (built in) and with a Widget owner (a
// custom resource), at 1000/1000, o.runs times each in an order that
// changes from run to run, with kwok making Pods Running and Ready. It
// returns the table's rows and a summary of what the watches saw.
func (b *bench) rollouts(ctx context.Context, o rolloutOptions) ([]line, string, error) {
	l := limit{"1000 QPS / burst 1000", 1000, 1000}
	stopKwok, kwokPID, err := b.startKwok(ctx, o.readyDelay, o.deleteDelay)
	if err != nil {
		return nil, "", err
	}
	defer stopKwok()
	stopKCM, kcmPID, err := b.startControllerManager(l, "deployment", "replicaset")
	if err != nil {
		return nil, "", err
	}
	defer stopKCM()
	stopMgr, kitPID, err := b.startRolloutBinding(l)
	if err != nil {
		return nil, "", err
	}
	defer stopMgr()

	type side struct {
		name  string
		owner rolloutOwner
		pid   int
		runs  []rolloutRun
	}
	dep := &side{name: "Deployment controller", owner: deployOwner{b}, pid: kcmPID}
	set := &side{name: "binding, StatefulSet owner (built in, protobuf)", owner: rolloutSetOwner{b}, pid: kitPID}
	wid := &side{name: "binding, Widget owner (custom resource, JSON)", owner: rolloutWidgetOwner{b}, pid: kitPID}
	for run := range o.runs {
		for _, s := range runOrder(run, dep, set, wid) {
			r, err := b.rolloutOnce(ctx, s.owner, s.pid, kwokPID)
			if err != nil {
				return nil, "", fmt.Errorf("rollout, %s: %w", s.name, err)
			}
			fmt.Printf("  run %d, %s: %v (CPU %v, API server and etcd %v, kwok %v), fewest available %d, most live %d (%d with those being deleted); writes %v; kwok's %v\n",
				run+1, s.name, r.took.Round(time.Millisecond), r.cpu, r.server, r.kwok, r.fewestAvailable, r.mostLive, r.mostTotal, r.w, r.kwokW)
			s.runs = append(s.runs, r)
		}
	}
	var lines []line
	for _, s := range []*side{set, wid} {
		goal := "≤ 1.0"
		if s == wid {
			goal = "-" // the goals are the built-in owner's
		}
		row := func(what string, get func(rolloutRun) time.Duration) line {
			k, r := pickRollout(s.runs, get), pickRollout(dep.runs, get)
			return line{what: fmt.Sprintf("rollout of %d Pods (25%%/25%%), %s, %s", b.n, strings.TrimPrefix(s.name, "binding, "), what),
				kit: median(k), ref: median(r), refName: dep.name, goal: goal, runs: ratios(k, r), ratio: medianRatio(k, r)}
		}
		t := row("time", func(r rolloutRun) time.Duration { return r.took })
		t.kitWrites, t.refW, t.perReplica = medianWrites(s.runs), medianWrites(dep.runs), b.n
		lines = append(lines, t,
			row("controller CPU", func(r rolloutRun) time.Duration { return r.cpu }),
			row("API server and etcd CPU", func(r rolloutRun) time.Duration { return r.server }))
		lines[len(lines)-1].goal = "-"
	}
	var sum strings.Builder
	bound := b.n - (b.n*25)/100
	fmt.Fprintf(&sum, "Rollouts of %d Pods (kwok: Ready %v after it sees a Pod, removed %v after it sees it being deleted), per run: "+
		"the fewest available Pods a watch saw (bound %d), the most live ones (bound %d), and the most with those being deleted:\n",
		b.n, o.readyDelay, o.deleteDelay, bound, b.n+(b.n*25+99)/100)
	for _, s := range []*side{dep, set, wid} {
		var fewest, live, all []string
		low := b.n
		for _, r := range s.runs {
			fewest, live, all = append(fewest, fmt.Sprint(r.fewestAvailable)), append(live, fmt.Sprint(r.mostLive)), append(all, fmt.Sprint(r.mostTotal))
			low = min(low, r.fewestAvailable)
		}
		verdict := "never below the bound"
		if low < bound {
			verdict = "BELOW THE BOUND"
		}
		fmt.Fprintf(&sum, "  %s: fewest available %s (%s); most live %s; most with those being deleted %s\n",
			s.name, strings.Join(fewest, " "), verdict, strings.Join(live, " "), strings.Join(all, " "))
	}
	return lines, sum.String(), nil
}

// medianWrites returns the writes of the run whose total is the median.
func medianWrites(runs []rolloutRun) benchkit.Writes {
	s := slices.Clone(runs)
	slices.SortFunc(s, func(a, b rolloutRun) int { return cmp.Compare(a.w.Total(), b.w.Total()) })
	return s[len(s)/2].w
}

// pickRollout reads one figure of each run.
func pickRollout(runs []rolloutRun, get func(rolloutRun) time.Duration) []time.Duration {
	out := make([]time.Duration, len(runs))
	for i, r := range runs {
		out[i] = get(r)
	}
	return out
}

// rolloutOnce makes an owner of n Pods at version 1 in a fresh namespace,
// waits until all are available and its status says so, then changes the
// template to version 2 and measures, from the change's acceptance until
// a watch sees n Pods all available on version 2 (no other Pod left) and
// the owner's status reports the same: the time, the controller process's
// CPU, the API server's and etcd's, kwok's, the fewest available and most
// live Pods the watch saw, and the controller's writes and kwok's (split).
// Then it deletes the owner and waits for its Pods to go.
func (b *bench) rolloutOnce(ctx context.Context, o rolloutOwner, pid, kwokPID int) (rolloutRun, error) {
	var r rolloutRun
	ns, err := b.ns.New(ctx, "roll")
	if err != nil {
		return r, err
	}
	x, err := watchRollout(b.cs, ns)
	if err != nil {
		return r, err
	}
	defer x.close()
	const name = "roll"
	if err := o.create(ctx, ns, name, b.n, "1"); err != nil {
		return r, err
	}
	x.track("1")
	if err := await(ctx, fmt.Sprintf("%d Pods available on version 1", b.n), 5*time.Minute, func() bool { return x.settled(b.n) }); err != nil {
		return r, err
	}
	if err := awaitRolledOut(ctx, o, ns, name, b.n); err != nil {
		return r, err
	}
	x.untrack()
	time.Sleep(2 * time.Second) // the controller is idle

	server, err := serverCPU()
	if err != nil {
		return r, err
	}
	cpu0, err := benchkit.CPUOf(pid)
	if err != nil {
		return r, err
	}
	kwok0, _ := benchkit.CPUOf(kwokPID)
	s0 := server()
	w0, err := scrapeRequests(ctx, b.cs)
	if err != nil {
		return r, err
	}
	x.track("2")
	if err := o.roll(ctx, ns, name, "2"); err != nil {
		return r, err
	}
	start := time.Now() // the change is accepted: the controller can see it
	if err := await(ctx, fmt.Sprintf("%d Pods available on version 2", b.n), 5*time.Minute, func() bool { return x.settled(b.n) }); err != nil {
		return r, err
	}
	if err := awaitRolledOut(ctx, o, ns, name, b.n); err != nil {
		return r, err
	}
	r.took = time.Since(start)
	cpu1, err := benchkit.CPUOf(pid)
	if err != nil {
		return r, err
	}
	kwok1, _ := benchkit.CPUOf(kwokPID)
	r.cpu, r.server, r.kwok = cpu1-cpu0, server()-s0, kwok1-kwok0
	time.Sleep(3 * time.Second) // trailing status writes and events
	w1, err := scrapeRequests(ctx, b.cs)
	if err != nil {
		return r, err
	}
	var removed int
	r.fewestAvailable, r.mostLive, r.mostTotal, removed = x.untrack()
	r.w, r.kwokW = w1.split(w0, o.resource(), removed)
	if err := o.remove(ctx, ns, name); err != nil {
		return r, err
	}
	if err := await(ctx, "without Pods", 5*time.Minute, x.empty); err != nil {
		return r, err
	}
	time.Sleep(2 * time.Second) // let the deletes' events settle before the next side
	return r, nil
}

// awaitRolledOut waits until the owner's status reports n replicas, all
// updated and available, for its current generation.
func awaitRolledOut(ctx context.Context, o rolloutOwner, ns, name string, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for {
		ok, err := o.rolledOut(ctx, ns, name, n)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the owner's status never reported %d replicas updated and available", n)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// serverCPU returns what reads the CPU that this harness's kube-apiserver
// and etcd have used so far, together.
func serverCPU() (func() time.Duration, error) {
	servers, err := ownServers()
	if err != nil {
		return nil, err
	}
	return func() time.Duration {
		var sum time.Duration
		for _, p := range servers {
			c, _ := benchkit.CPUOf(p)
			sum += c
		}
		return sum
	}, nil
}

// ownServers lists this harness's kube-apiserver and etcd (its children,
// started by testenv), not those of other runs on the same machine.
func ownServers() ([]int, error) {
	all, err := benchkit.PIDsNamed("kube-apiserver", "etcd")
	if err != nil {
		return nil, err
	}
	var own []int
	for _, pid := range all {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// The parent's pid is the second field after the command name,
		// which is in parentheses.
		s := string(raw)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) {
			own = append(own, pid)
		}
	}
	if len(own) != 2 {
		return nil, fmt.Errorf("found %d of this harness's kube-apiserver and etcd, want 2", len(own))
	}
	return own, nil
}
