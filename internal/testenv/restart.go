package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
)

// Restart stops the control plane's kube-apiserver or etcd (name) as a
// kubelet restarting a static pod does, SIGTERM and then SIGKILL after a
// grace period of 15 s (kube-apiserver, draining its watches, takes longer
// here and is killed), waits down, and starts it again with the same command line, environment and
// files (the same ports, certificates and data), returning once the API
// server answers /readyz again (which checks etcd); clients of the old
// process see their connections drop and must reconnect. Stop stops the new process too. It is meant for
// tests that own the whole environment, one at a time.
func (e *Env) Restart(name string, down time.Duration) error {
	if name != "kube-apiserver" && name != "etcd" {
		return fmt.Errorf("testenv: Restart %q: want kube-apiserver or etcd", name)
	}
	pid, err := e.childNamed(name)
	if err != nil {
		return err
	}
	argv, err := nulFields(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return err
	}
	environ, err := nulFields(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return err
	}
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("testenv: stop %s: %w", name, err)
	}
	if waitGone(pid, 15*time.Second) != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if err := waitGone(pid, 15*time.Second); err != nil {
			return fmt.Errorf("testenv: %s: %w", name, err)
		}
	}
	time.Sleep(down)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = environ, cwd
	logf, err := os.OpenFile(e.restartLogPath(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer func() { _ = logf.Close() }() // the child writes through its own descriptor
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testenv: start %s again: %w", name, err)
	}
	if e.restarted == nil {
		e.restarted = map[string]*restartedProcess{}
	}
	rp := &restartedProcess{cmd: cmd, done: make(chan struct{})}
	// Reaped as soon as it exits, whether Stop or a later Restart ends it.
	go func() { _ = cmd.Wait(); close(rp.done) }()
	e.restarted[name] = rp
	return e.waitReady(90 * time.Second)
}

// waitReady polls the API server's /readyz until it answers ok.
func (e *Env) waitReady(within time.Duration) error {
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var last error
	for {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("testenv: API server not ready %v after a restart: %w", within, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// restartedProcess is a process Restart started, and what closes when it
// has exited.
type restartedProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// restartLogPath is where the processes Restart starts for name log.
func (e *Env) restartLogPath(name string) string {
	return filepath.Join(e.dir, name+"-restarted.log")
}

// RestartLog returns the last 64 KiB of what the processes Restart
// started for name have logged, for failure messages.
func (e *Env) RestartLog(name string) string {
	b, _ := os.ReadFile(e.restartLogPath(name))
	return string(b[max(len(b)-64<<10, 0):])
}

// stopRestarted stops the process Restart started for name, if any.
func (e *Env) stopRestarted(name string) error {
	rp := e.restarted[name]
	if rp == nil {
		return nil
	}
	delete(e.restarted, name)
	_ = rp.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-rp.done:
		return nil
	case <-time.After(30 * time.Second):
		_ = rp.cmd.Process.Kill()
		<-rp.done
		return fmt.Errorf("testenv: restarted %s did not stop within 30s; killed", name)
	}
}

// childNamed returns the process ID of this process's running child named
// name (as restarted, or as envtest started it).
func (e *Env) childNamed(name string) (int, error) {
	if rp := e.restarted[name]; rp != nil {
		select {
		case <-rp.done:
			return 0, fmt.Errorf("testenv: the %s Restart started has exited", name)
		default:
			return rp.cmd.Process.Pid, nil
		}
	}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	self := os.Getpid()
	var found []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		comm, err1 := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		ppid, state, err2 := parentAndState(pid)
		if err1 == nil && err2 == nil && strings.TrimSpace(string(comm)) == name && ppid == self && state != "Z" {
			found = append(found, pid)
		}
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("testenv: %d running children named %s, want 1", len(found), name)
	}
	return found[0], nil
}

// parentAndState reads a process's parent and state from /proc/pid/stat.
func parentAndState(pid int) (int, string, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", err
	}
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 2 {
		return 0, "", fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	ppid, err := strconv.Atoi(fields[1])
	return ppid, fields[0], err
}

// waitGone waits until pid has exited (gone or a zombie).
func waitGone(pid int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		_, state, err := parentAndState(pid)
		if err != nil || state == "Z" {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("still running after " + within.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// nulFields reads a NUL-separated /proc file.
func nulFields(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), nil
}
