package procs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/replicakit/replicakit/internal/soakstat"
)

// LeaseNamespace is where the managers keep their leader election Lease;
// LeaseName is its name (vmset-manager's default).
const (
	LeaseNamespace = "default"
	LeaseName      = "vmset.replicakit.io"
)

// errSuperseded stops a supervisor whose process was replaced, or whose
// replica was killed or stopped on purpose.
var errSuperseded = errors.New("superseded")

// Manager is one vmset-manager replica. Its log is Name+".log" in the
// folder it was started with, kept across restarts.
type Manager struct {
	// Name tells the replicas apart in messages and file names.
	Name string

	bin, kubeconfig, dir string
	vc                   *VCenter
	args                 []string

	mu         sync.Mutex
	metricsURL string // the current process's plain-HTTP /metrics
	p          *process
	starts     int
	supervise  bool // restart when the process exits unasked
	asked      bool // Kill or Stop was called for the current process
}

// StartManager starts a vmset-manager replica with leader election, on
// kubeconfig's API server and vc's vCenter (its environment, with the
// password in a file), metrics over plain HTTP and probes on free loopback
// ports, JSON logs appended to dir/name.log; args are added to its flags.
// It returns once /readyz answers: a standby is ready too.
func StartManager(bin, name, dir, kubeconfig string, vc *VCenter, args ...string) (*Manager, error) {
	m := &Manager{Name: name, bin: bin, dir: dir, kubeconfig: kubeconfig, vc: vc, args: args}
	return m, m.Start()
}

// Start starts the replica again, after Kill or Stop, on new ports.
func (m *Manager) Start() error {
	p, probes, err := m.launch(nil)
	if err != nil {
		return err
	}
	if err := ready(p, probes); err != nil {
		m.current(true) // stopped by ready: no supervisor restarts it
		return err
	}
	return nil
}

// launch starts a process for the replica and returns it and its probe
// address. With replacing, it does so only while that process is still
// the replica's, exited unasked, under supervision.
func (m *Manager) launch(replacing *process) (*process, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if replacing != nil && (m.p != replacing || m.asked || !m.supervise) {
		return nil, "", errSuperseded
	}
	if m.p != nil && m.p.running() {
		return nil, "", fmt.Errorf("manager %s is running", m.Name)
	}
	metrics, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	probes, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	args := append([]string{
		"--kubeconfig=" + m.kubeconfig,
		"--leader-elect",
		"--leader-election-namespace=" + LeaseNamespace,
		"--metrics-bind-address=" + metrics,
		"--metrics-secure=false",
		"--health-probe-bind-address=" + probes,
		"--log-format=json",
	}, m.args...)
	p, err := start(m.bin, filepath.Join(m.dir, m.Name+".log"), m.vc.Env, args...)
	if err != nil {
		return nil, "", err
	}
	m.p, m.asked = p, false
	m.starts++
	m.metricsURL = "http://" + metrics + "/metrics"
	go m.watch(p)
	return p, probes, nil
}

// ready waits until p's /readyz answers.
func ready(p *process, probes string) error {
	probe := &http.Client{Timeout: 2 * time.Second}
	return p.waitFor("ready", 60*time.Second, func() bool {
		res, err := probe.Get("http://" + probes + "/readyz")
		if err != nil {
			return false
		}
		_ = res.Body.Close() // only the status matters
		return res.StatusCode == http.StatusOK
	})
}

// Supervise makes the replica restart, a second after its process exits
// without Kill or Stop having asked, as a kubelet restarts a container
// that exited: a manager that loses its Lease, say while the API server
// restarts, exits on purpose and relies on that.
func (m *Manager) Supervise() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.supervise = true
}

// watch restarts the replica when p exits unasked under supervision,
// retrying every second until a process starts or p is no longer the
// replica's, Kill, Stop or Close having been asked.
func (m *Manager) watch(p *process) {
	<-p.exited
	for {
		time.Sleep(time.Second)
		// A process that starts replaces p, and its own watch takes over
		// whether it becomes ready or not.
		_, _, err := m.launch(p)
		if err == nil || errors.Is(err, errSuperseded) {
			return
		}
	}
}

// current returns the replica's current process, marking that Kill or
// Stop asked it to end when asked.
func (m *Manager) current(asked bool) *process {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked = m.asked || asked
	return m.p
}

// Close stops the replica for good: no supervisor restarts it, whatever
// state its process is in. Tests call it on their way out.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.supervise, m.asked = false, true
	p := m.p
	m.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.stop(20 * time.Second)
}

// Kill sends SIGKILL, as a node that dies or a kubelet that gives up on a
// pod does, and returns once the process is gone. A supervised replica is
// not restarted after it: call Start.
func (m *Manager) Kill() { m.current(true).kill() }

// Stop sends SIGTERM, then SIGKILL after 20 s.
func (m *Manager) Stop() error { return m.current(true).stop(20 * time.Second) }

// Running reports whether the process has not exited.
func (m *Manager) Running() bool {
	p := m.current(false)
	return p != nil && p.running()
}

// PID is the process ID of the replica's current process.
func (m *Manager) PID() int { return m.current(false).pid() }

// Target describes the replica's current process at one moment: its name
// (the replica's and how many processes it has had, such as "a#2"), its
// process ID and its plain-HTTP /metrics URL.
func (m *Manager) Target() (process string, pid int, metricsURL string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return fmt.Sprintf("%s#%d", m.Name, m.starts), m.p.pid(), m.metricsURL
}

// Starts counts the processes started for the replica.
func (m *Manager) Starts() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.starts
}

// Tail returns the last n bytes of its log.
func (m *Manager) Tail(n int) string { return m.current(false).tail(n) }

// Metrics scrapes the replica's /metrics and returns what the tests read
// of it, each family summed over its series: leader_election_master_status
// and controller_runtime_reconcile_total, each absent until the replica
// reports it.
func (m *Manager) Metrics(ctx context.Context) (map[string]float64, error) {
	_, _, u := m.Target()
	e, err := soakstat.Scrape(ctx, scrapeClient, u)
	if err != nil {
		return nil, fmt.Errorf("manager %s: %w", m.Name, err)
	}
	out := map[string]float64{}
	for _, family := range []string{"leader_election_master_status", "controller_runtime_reconcile_total"} {
		if v, ok := e.Sum(family); ok {
			out[family] = v
		}
	}
	return out, nil
}

// scrapeClient scrapes the replicas' metrics.
var scrapeClient = &http.Client{Timeout: 5 * time.Second}

// Leading reports whether the replica says it holds the Lease (its
// leader_election_master_status).
func (m *Manager) Leading(ctx context.Context) (bool, error) {
	v, err := m.Metrics(ctx)
	if err != nil {
		return false, err
	}
	return v["leader_election_master_status"] == 1, nil
}

// Leader waits up to within for exactly one of the running replicas to
// say it leads, and returns it.
func Leader(ctx context.Context, within time.Duration, ms ...*Manager) (*Manager, error) {
	deadline := time.Now().Add(within)
	for {
		var leaders []*Manager
		var errs []error
		for _, m := range ms {
			if !m.Running() {
				continue
			}
			ok, err := m.Leading(ctx)
			if err != nil {
				errs = append(errs, err)
			}
			if ok {
				leaders = append(leaders, m)
			}
		}
		if len(leaders) == 1 {
			return leaders[0], nil
		}
		if len(leaders) > 1 {
			return nil, fmt.Errorf("%d replicas say they lead", len(leaders))
		}
		if time.Now().After(deadline) {
			return nil, errors.Join(append([]error{fmt.Errorf("no replica leads after %v", within)}, errs...)...)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
