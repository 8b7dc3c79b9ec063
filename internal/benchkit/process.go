package benchkit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// PIDsNamed lists the processes whose command name is one of names.
func PIDsNamed(names ...string) ([]int, error) {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err == nil && slices.Contains(names, strings.TrimSpace(string(comm))) {
			out = append(out, pid)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no process named %v", names)
	}
	return out, nil
}

// CPUOf reads the user and system CPU time process pid has used, from
// /proc/pid/stat (in clock ticks of 1/100 s, as Linux reports them).
func CPUOf(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses: state is
	// field 3, utime 14 and stime 15.
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// Namespaces makes fresh namespaces for a benchmark, numbered in the
// order it asks for them.
type Namespaces struct {
	// CS creates them.
	CS  kubernetes.Interface
	seq int
}

// New creates the namespace prefix-N, N counting up from 1, with its
// default service account, and returns its name.
func (n *Namespaces) New(ctx context.Context, prefix string) (string, error) {
	n.seq++
	ns := fmt.Sprintf("%s-%d", prefix, n.seq)
	return ns, Namespace(ctx, n.CS, ns)
}

// Namespace creates the namespace name with its default service account
// (no controller-manager makes one for the benchmarks).
func Namespace(ctx context.Context, cs kubernetes.Interface, name string) error {
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err := cs.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	return err
}

// RunManager starts a manager on cfg, without metrics or probes, with the
// controllers setup registers (concurrency reconciles each, 0 for the
// default), and waits for its cache. Given namespaces, the manager sees
// only those (so that managers measured one after another never reconcile
// what an earlier one left); else all. stop ends it and waits until it has.
func RunManager(cfg *rest.Config, scheme *runtime.Scheme, concurrency int, setup func(ctrl.Manager) error, namespaces ...string) (stop func(), err error) {
	var only map[string]cache.Config
	for _, ns := range namespaces {
		if only == nil {
			only = map[string]cache.Config{}
		}
		only[ns] = cache.Config{}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: concurrency},
		// Managed fields trimmed from every cached object, as
		// kube-controller-manager's informers trim them: no controller
		// here reads them, and they are most of a small object.
		Cache: cache.Options{DefaultNamespaces: only, DefaultTransform: cache.TransformStripManagedFields()},
	})
	if err != nil {
		return nil, err
	}
	if err := setup(mgr); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		cancel()
		if err := <-done; err != nil {
			return nil, fmt.Errorf("manager: cache did not sync: %w", err)
		}
		return nil, errors.New("manager: cache did not sync")
	}
	return func() { cancel(); <-done }, nil //nolint:errcheck // stop only waits: no measurement depends on the shutdown's error
}
