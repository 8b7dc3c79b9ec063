package procs

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// process is a started program in a process group of its own, killed
// should the test process die first.
type process struct {
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
}

// start starts bin with args and env (added to this process's
// environment), its output appended to logPath.
func start(bin, logPath string, env []string, args ...string) (*process, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logf.Close() }() // the child writes through its own descriptor
	p := &process{cmd: exec.Command(bin, args...), log: logPath, exited: make(chan struct{})}
	p.cmd.Env = append(inherited(), env...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	return p, nil
}

// inherited is this process's environment without what would make a
// child depend on the machine it runs on: the vCenter settings and the
// kubeconfig, which the harness gives explicitly.
func inherited() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "VSPHERE_") || strings.HasPrefix(kv, "KUBECONFIG=")
	})
}

// pid is the process's ID.
func (p *process) pid() int { return p.cmd.Process.Pid }

// running reports whether the process has not exited.
func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL to the process group and waits for the exit; a
// process already reaped is left alone (its group ID may be another's).
func (p *process) kill() {
	if !p.running() {
		return
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	<-p.exited
}

// stop sends SIGTERM, then SIGKILL after grace.
func (p *process) stop(grace time.Duration) error {
	if !p.running() {
		return nil
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(grace):
		p.kill()
		return fmt.Errorf("%s did not stop within %v of SIGTERM; killed", p.cmd.Path, grace)
	}
}

// tail returns the last n bytes of the log.
func (p *process) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	return string(b[max(len(b)-n, 0):])
}

// waitFor polls ok every 100 ms until it holds, the process exits or
// within passes.
func (p *process) waitFor(what string, within time.Duration, ok func() bool) error {
	deadline := time.Now().Add(within)
	for !ok() {
		if !p.running() {
			return fmt.Errorf("%s exited before %s: %s", p.cmd.Path, what, p.tail(3000))
		}
		if time.Now().After(deadline) {
			return errors.Join(fmt.Errorf("%s: not %s after %v: %s", p.cmd.Path, what, within, p.tail(3000)), p.stop(5*time.Second))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// freeAddr returns a loopback address no one listened on a moment ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }() // only its port was wanted
	return l.Addr().String(), nil
}
