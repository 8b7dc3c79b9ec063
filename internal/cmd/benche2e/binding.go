package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/replicakit/replicakit/internal/benchkit"
)

// The binding runs in a process of its own, as kube-controller-manager
// does: sharing the harness's process would make the harness's own Pod
// informer, which times both sides, wait on the binding's goroutines.
const bindingReady = "binding ready"

// startBinding starts this program again as the binding's manager for
// Widgets and StatefulSets owning Pods (two reconcilers in one manager,
// sharing its Pod informer), at limit l, and waits until its cache has
// synced.
func (b *bench) startBinding(l limit) (stop func(), pid int, err error) {
	return b.startServing(l, "-serve-binding")
}

// startServing starts this program again with serve (-serve-binding or
// -serve-rollout) at limit l, and waits until its cache has synced.
func (b *bench) startServing(l limit, serve string) (stop func(), pid int, err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, 0, err
	}
	cmd := exec.Command(self, serve, "-api-kubeconfig="+b.env.Kubeconfig,
		fmt.Sprintf("-qps=%g", l.qps), fmt.Sprintf("-burst=%d", l.burst))
	if b.profile != "" && *profilePhase == "" {
		// One file per process: the first limits' run, then the next.
		b.profiles++
		cmd.Args = append(cmd.Args, fmt.Sprintf("-binding-cpuprofile=%s.%d", b.profile, b.profiles))
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, 0, err
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, 0, err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	ready := make(chan bool, 1)
	acks := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := false
		for sc.Scan() {
			switch {
			case !ok && sc.Text() == bindingReady:
				ok = true
				ready <- true
			case ok:
				acks <- sc.Text()
			}
		}
		if !ok {
			ready <- false
		}
		close(acks)
	}()
	select {
	case ok := <-ready:
		if ok {
			bindings.Store(cmd.Process.Pid, &bindingControl{in: in, acks: acks})
			return stop, cmd.Process.Pid, nil
		}
		stop()
		return nil, 0, fmt.Errorf("the binding's process exited before its cache synced")
	case <-time.After(60 * time.Second):
		stop()
		return nil, 0, fmt.Errorf("the binding's cache did not sync in 60s")
	}
}

// serveBinding is the binding's process: a manager at the given limits on
// the API server of kubeconfig, until SIGTERM or SIGINT, writing a CPU
// profile to profile if it is set.
func serveBinding(kubeconfig string, qps float32, burst int, profile string) error {
	return serveManager(kubeconfig, qps, burst, profile, func(mgr ctrl.Manager) error {
		if err := newWidgetReconciler().SetupWithManager(mgr, "widget"); err != nil {
			return err
		}
		return newSetReconciler().SetupWithManager(mgr, "statefulset")
	})
}

// serveManager runs a manager that setup fills in, as serveBinding says.
func serveManager(kubeconfig string, qps float32, burst int, profile string, setup func(ctrl.Manager) error) (err error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = qps, burst
	// Protobuf for built-in kinds, as kube-controller-manager speaks by
	// default (--kube-api-content-type); custom resources stay JSON.
	cfg.ContentType = runtime.ContentTypeProtobuf
	// Uncompressed responses, as kube-controller-manager asks for (its
	// options set DisableCompression): on a fast link, gzip costs the
	// client CPU for every watch event.
	cfg.DisableCompression = true
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	stop, err := benchkit.RunManager(cfg, newScheme(), 0, setup)
	if err != nil {
		return err
	}
	if profile != "" {
		f, ferr := os.Create(profile)
		if ferr != nil {
			return ferr
		}
		// Runs after StopCPUProfile has written the profile's end.
		defer func() { err = errors.Join(err, f.Close()) }()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	fmt.Println(bindingReady)
	if profile == "" {
		go profileOnRequest(os.Stdin, os.Stdout)
	}
	<-ctx.Done()
	stop()
	return nil
}

// profilePhase, with -binding-cpuprofile, narrows the binding's profile to
// one step of the many-owner fleets. It is registered here rather than in
// main, beside the only code that reads it.
var profilePhase = flag.String("binding-cpuprofile-phase", "",
	"with -binding-cpuprofile and -owners: profile the binding only while its owners are created (up) or scaled to 0 (down), "+
		"one file per fleet, side and run (PREFIX.400x5.statefulset.1.down); merge them with go tool pprof -proto")

// bindings holds, per binding process id, how the harness asks that
// process for a profile of one window.
var bindings sync.Map // int -> *bindingControl

// bindingControl writes requests to a binding process's standard input
// and reads its answers, one line each.
type bindingControl struct {
	in   io.Writer
	acks <-chan string
}

// window starts a CPU profile into path in the binding process pid and
// returns what stops it; with no such process (the ReplicaSet controller)
// it does nothing.
func window(pid int, path string) (end func() error, err error) {
	v, ok := bindings.Load(pid)
	if !ok {
		return func() error { return nil }, nil
	}
	c := v.(*bindingControl)
	ask := func(req string) error {
		if _, err := fmt.Fprintln(c.in, req); err != nil {
			return err
		}
		if ack, ok := <-c.acks; !ok || ack != "ok" {
			return fmt.Errorf("binding process: %q answered %q", req, ack)
		}
		return nil
	}
	if err := ask("profile " + path); err != nil {
		return nil, err
	}
	return func() error { return ask("stop") }, nil
}

// profileOnRequest serves the harness's profile requests on the binding's
// side: "profile PATH" starts a CPU profile into PATH, "stop" ends it, and
// each is answered "ok" or with the error, on a line of its own.
func profileOnRequest(in io.Reader, out io.Writer) {
	var f *os.File
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		req, path, _ := strings.Cut(sc.Text(), " ")
		var err error
		switch {
		case req == "profile" && f == nil:
			if f, err = os.Create(path); err == nil {
				if err = pprof.StartCPUProfile(f); err != nil {
					_ = f.Close() // the error above is the one to report
					f = nil
				}
			}
		case req == "stop" && f != nil:
			pprof.StopCPUProfile()
			err = f.Close()
			f = nil
		default:
			err = fmt.Errorf("unexpected request %q", sc.Text())
		}
		if err != nil {
			fmt.Fprintln(out, err)
			continue
		}
		fmt.Fprintln(out, "ok")
	}
}
