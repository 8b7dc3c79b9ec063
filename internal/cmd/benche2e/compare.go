package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/replicakit/replicakit/internal/benchkit"
)

// compare measures 0→n, n→0 and (when cascade) the garbage collector's
// cascade for the ReplicaSet controller and the binding at limit l: the
// binding with a Widget, and with a StatefulSet for the like-for-like rows
// (0→n and n→0 only).
//
// It measures runs times, in an order of the sides that changes from run
// to run (runOrder), and reports medians; the writes are the last run's.
func (b *bench) compare(ctx context.Context, l limit, runs int, cascade bool) ([]line, error) {
	stopKCM, _, err := b.startReplicaSetController(l)
	if err != nil {
		return nil, err
	}
	defer stopKCM()
	stopMgr, _, err := b.startBinding(l)
	if err != nil {
		return nil, err
	}
	defer stopMgr()

	// Each side makes, scales and deletes one owner of its kind, named
	// after it.
	type side struct {
		o                 fleetOwner
		name              string
		up, down          []time.Duration
		casc              time.Duration
		upW, downW, cascW benchkit.Writes
		accepted          []time.Duration // how long each scale write took
	}
	rs := &side{o: rsOwner{b}, name: "rs"}
	kit := &side{o: widgetOwner{b}, name: "kit"}
	set := &side{o: setOwner{b}, name: "set"} // the binding with a built-in owner: like for like
	for run := range runs {
		for _, s := range runOrder(run, rs, kit, set) {
			ns, pods, err := b.podNamespace(ctx, "bench")
			if err != nil {
				return nil, err
			}
			defer pods.close()
			if err := s.o.createNamed(ctx, ns, s.name, 0); err != nil {
				return nil, err
			}
			time.Sleep(time.Second) // the controller has seen the owner
			scale := func(n int) func() error {
				return func() error {
					t0 := time.Now()
					err := s.o.scaleNamed(ctx, ns, s.name, n)
					s.accepted = append(s.accepted, time.Since(t0))
					return err
				}
			}
			up, upW, err := b.timed(ctx, pods, b.n, true, scale(b.n))
			if err != nil {
				return nil, fmt.Errorf("0→%d: %w", b.n, err)
			}
			down, downW, err := b.timed(ctx, pods, 0, true, scale(0))
			if err != nil {
				return nil, fmt.Errorf("%d→0: %w", b.n, err)
			}
			s.up, s.down, s.upW, s.downW = append(s.up, up), append(s.down, down), upW, downW
			if !cascade || run != runs-1 || s == set {
				continue
			}
			if err := s.o.scaleNamed(ctx, ns, s.name, b.n); err != nil {
				return nil, err
			}
			if err := pods.await(ctx, b.n, 5*time.Minute); err != nil {
				return nil, err
			}
			time.Sleep(2 * time.Second)
			if s.casc, s.cascW, err = b.timed(ctx, pods, 0, true, func() error { return s.o.deleteNamed(ctx, ns, s.name) }); err != nil {
				return nil, fmt.Errorf("cascade: %w", err)
			}
		}
	}
	ref := "ReplicaSet controller"
	lines := []line{
		{what: fmt.Sprintf("0→%d Pods, %s", b.n, l.name), kit: median(kit.up), ref: median(rs.up), kitWrites: kit.upW, refW: rs.upW, perReplica: b.n, refName: ref, goal: "≤ 1.0", runs: ratios(kit.up, rs.up), ratio: medianRatio(kit.up, rs.up)},
		{what: fmt.Sprintf("%d→0 Pods, %s", b.n, l.name), kit: median(kit.down), ref: median(rs.down), kitWrites: kit.downW, refW: rs.downW, perReplica: b.n, refName: ref, goal: "≤ 1.0", runs: ratios(kit.down, rs.down), ratio: medianRatio(kit.down, rs.down)},
	}
	builtin := func(what string, k, r []time.Duration) line {
		return line{what: fmt.Sprintf(what+" Pods, StatefulSet owner (built in, protobuf), %s", b.n, l.name), kit: median(k), ref: median(r),
			refName: ref, goal: "-", runs: ratios(k, r), ratio: medianRatio(k, r)}
	}
	lines = append(lines, builtin("0→%d", set.up, rs.up), builtin("%d→0", set.down, rs.down))
	fmt.Printf("  scale writes accepted by the API server in (median): Widget %v, StatefulSet %v, ReplicaSet %v\n",
		median(kit.accepted).Round(time.Millisecond), median(set.accepted).Round(time.Millisecond), median(rs.accepted).Round(time.Millisecond))
	if cascade {
		lines = append(lines, line{what: fmt.Sprintf("owner deleted, %d Pods cascaded by the garbage collector", b.n), kit: kit.casc, ref: rs.casc,
			kitWrites: kit.cascW, refW: rs.cascW, perReplica: b.n, refName: "the same for a ReplicaSet", goal: "≈ 1"})
	}
	return lines, nil
}

// runOrder is the order of three sides in run r: each pair of runs
// reverses the one before, and six runs go through every order, so that
// over the runs no side goes first, or right after another, more than the
// others.
func runOrder[T any](r int, a, b, c T) []T {
	orders := [6][3]int{{0, 1, 2}, {2, 1, 0}, {1, 2, 0}, {0, 2, 1}, {2, 0, 1}, {1, 0, 2}}
	sides := [3]T{a, b, c}
	o := orders[r%6]
	return []T{sides[o[0]], sides[o[1]], sides[o[2]]}
}

// startReplicaSetController runs kube-controller-manager with only the
// ReplicaSet controller, at limit l.
func (b *bench) startReplicaSetController(l limit) (stop func(), pid int, err error) {
	return b.startControllerManager(l, "replicaset")
}

// startLogged starts cmd in a process group of its own, killed with the
// harness, its output going to logf, and returns what kills the group,
// waits for cmd, closes logf and then calls cleanup.
func startLogged(cmd *exec.Cmd, logf *os.File, cleanup func()) (stop func(), err error) {
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		_ = logf.Close()
		cleanup()
	}, nil
}

// startControllerManager runs kube-controller-manager with only the named
// controllers, at limit l, and waits until each has synced its informers.
func (b *bench) startControllerManager(l limit, controllers ...string) (stop func(), pid int, err error) {
	logf, err := os.CreateTemp("", "benche2e-kcm-*.log")
	if err != nil {
		return nil, 0, err
	}
	cmd := exec.Command(filepath.Join(b.env.BinDir, "kube-controller-manager"),
		"--kubeconfig="+b.env.Kubeconfig,
		"--controllers="+strings.Join(controllers, ","),
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		"--secure-port=0",
		fmt.Sprintf("--kube-api-qps=%g", l.qps),
		fmt.Sprintf("--kube-api-burst=%d", l.burst),
	)
	// Teardown of a temporary log: a leftover file is harmless.
	stop, err = startLogged(cmd, logf, func() { _ = os.Remove(logf.Name()) })
	if err != nil {
		return nil, 0, err
	}
	// Ready when its informers have synced.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		log, _ := os.ReadFile(logf.Name())
		synced := strings.Contains(string(log), "Caches are synced")
		for _, c := range controllers {
			synced = synced && strings.Contains(string(log), c)
		}
		if synced {
			return stop, cmd.Process.Pid, nil
		}
	}
	stop()
	return nil, 0, fmt.Errorf("kube-controller-manager's %s controllers did not sync in 60s", strings.Join(controllers, ", "))
}

// median returns the middle of ds (the upper one of an even count).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// ratios lists the per-run ratios a[i]/b[i], to show the spread behind a
// median.
func ratios(a, b []time.Duration) string {
	if len(a) < 2 {
		return ""
	}
	var out []string
	for i := range a {
		out = append(out, fmt.Sprintf("%.2f", float64(a[i])/float64(b[i])))
	}
	return strings.Join(out, " ")
}

// medianRatio is the median of the per-run ratios a[i]/b[i]: runs are
// paired (same minute, changing order), so this is steadier than a ratio
// of medians.
func medianRatio(a, b []time.Duration) float64 {
	r := make([]float64, len(a))
	for i := range a {
		r[i] = float64(a[i]) / float64(b[i])
	}
	slices.Sort(r)
	return r[len(r)/2]
}
