package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// manager is a running vmset-manager process.
type manager struct {
	cmd     *exec.Cmd
	log     string // its log file
	govcEnv string // govc's settings for its simulator
	vcenter vsphere.Config
	exited  chan struct{}
}

// startManager starts the binary on its embedded simulator and the second
// vCenter west (a simulator of this process's, whose -vcenter directory is
// westDir), in its own process group (killed should this program die), and
// waits until it is ready.
func startManager(ctx context.Context, bin, kubeconfig, dir, westDir string) (*manager, error) {
	probes, err := freeAddr()
	if err != nil {
		return nil, err
	}
	m := &manager{log: filepath.Join(dir, "manager.log"), govcEnv: filepath.Join(dir, "govc.env"), exited: make(chan struct{})}
	logf, err := os.Create(m.log)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logf.Close() }() // the process writes through its own descriptor
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--vcsim", "--vcsim-env-file=" + m.govcEnv,
		"--vcenter=west=" + westDir,
		"--health-probe-bind-address=" + probes,
		"--metrics-bind-address=0",
		"--log-format=text",
	}
	// The embedded simulator's zones, which -zone replaces, and west's.
	zones := vcsim.Zones()
	for _, name := range slices.Sorted(maps.Keys(zones)) {
		args = append(args, "--zone="+name+":resourcePool="+zones[name].ResourcePool)
	}
	for _, z := range westZones {
		args = append(args, "--zone="+z)
	}
	m.cmd = exec.Command(bin, args...)
	m.cmd.Stdout, m.cmd.Stderr = logf, logf
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w (make demo builds it)", bin, err)
	}
	go func() { _ = m.cmd.Wait(); close(m.exited) }()

	deadline := time.After(60 * time.Second)
	// A probe that hangs must not outlive Ctrl-C or the deadline.
	probe := &http.Client{Timeout: 2 * time.Second}
	for {
		select {
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), m.stop())
		case <-m.exited:
			return nil, fmt.Errorf("vmset-manager exited at start: %s", m.tail(3000))
		case <-deadline:
			return nil, errors.Join(fmt.Errorf("vmset-manager not ready after 60s: %s", m.tail(3000)), m.stop())
		case <-time.After(100 * time.Millisecond):
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+probes+"/readyz", nil)
		if err != nil {
			return nil, errors.Join(err, m.stop())
		}
		res, err := probe.Do(req)
		if err != nil {
			continue
		}
		_ = res.Body.Close() // only the status matters
		if res.StatusCode != http.StatusOK {
			continue
		}
		if m.vcenter, err = vcsim.ReadEnvFile(m.govcEnv); err != nil {
			return nil, errors.Join(err, m.stop())
		}
		return m, nil
	}
}

// stop ends the process: SIGTERM, then SIGKILL after ten seconds.
func (m *manager) stop() error {
	_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-m.exited:
		return nil
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
		<-m.exited
		return errors.New("vmset-manager did not stop within 10s of SIGTERM; killed")
	}
}

// tail returns the last n bytes of the log.
func (m *manager) tail(n int) string {
	b, _ := os.ReadFile(m.log)
	return string(b[max(len(b)-n, 0):])
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }() // only its port was wanted
	return l.Addr().String(), nil
}
