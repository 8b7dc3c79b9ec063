package testenv

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// RequireVar names the environment variable that turns a missing or failed
// control plane into a failure instead of a skip. CI sets it to 1.
const RequireVar = "REPLICAKIT_REQUIRE_ENVTEST"

// ErrMissingBinaries means the binary folder lacks a program; `make tools`
// builds them.
var ErrMissingBinaries = errors.New("testenv: control-plane binaries missing (run `make tools`)")

// Options say what to install before the garbage collector starts watching.
// CRDs must be installed here rather than by a test later: the garbage
// collector discovers new resources only every 30 seconds.
type Options struct {
	// CRDs are installed before kube-controller-manager starts.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// CRDDirectoryPaths are folders of CRD manifests, installed likewise.
	CRDDirectoryPaths []string
	// Scheme is the client's scheme. Nil means client-go's scheme plus
	// apiextensions/v1.
	Scheme *runtime.Scheme
}

// Env is a running control plane.
type Env struct {
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Client is a controller-runtime client for Config, without a cache.
	Client client.Client
	// Kubeconfig is the path of an administrator kubeconfig file, for
	// kubectl and for processes such as an operator under test.
	Kubeconfig string
	// BinDir is the folder the binaries were started from.
	BinDir string
	// Started is how long starting the whole environment took.
	Started time.Duration

	te       *envtest.Environment
	dir      string
	kcm      *exec.Cmd
	kcmLog   *LockedBuffer
	kcmDone  chan struct{}
	watchdog *exec.Cmd
	startErr error // set by Main when the environment could not start

	// restarted are the processes Restart started, by name.
	restarted map[string]*restartedProcess
}

// BinDir returns the folder holding the binaries: $KUBEBUILDER_ASSETS if set,
// otherwise bin/ at the root of the replicakit module containing the working
// directory.
func BinDir() (string, error) {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(mod, []byte("module github.com/replicakit/replicakit\n")) {
			return filepath.Join(dir, "bin"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("testenv: no replicakit go.mod above the working directory; set KUBEBUILDER_ASSETS")
		}
		dir = parent
	}
}

// missing returns the binaries absent from dir.
func missing(dir string) []string {
	var out []string
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kubectl"} {
		if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.Mode()&0o111 == 0 {
			out = append(out, b)
		}
	}
	return out
}

// Start starts etcd, kube-apiserver and kube-controller-manager and returns
// once the garbage collector watches every resource. The caller must Stop
// the environment; should the test process die first, a watchdog stops the
// control plane within a second.
func Start(opts Options) (_ *Env, err error) {
	begin := time.Now()
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	if m := missing(bin); len(m) > 0 {
		return nil, fmt.Errorf("%s has no %s: %w", bin, strings.Join(m, ", "), ErrMissingBinaries)
	}
	scheme := opts.Scheme
	if scheme == nil {
		scheme = runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			return nil, err
		}
		if err := apiextensionsv1.AddToScheme(scheme); err != nil {
			return nil, err
		}
	}
	e := &Env{BinDir: bin, kcmLog: &LockedBuffer{}}
	if e.dir, err = os.MkdirTemp("", "replicakit-testenv-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.Stop())
		}
	}()

	e.te = &envtest.Environment{
		BinaryAssetsDirectory:    bin,
		CRDs:                     opts.CRDs,
		CRDDirectoryPaths:        opts.CRDDirectoryPaths,
		ErrorIfCRDPathMissing:    true,
		Scheme:                   scheme,
		ControlPlaneStartTimeout: 90 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	if e.Config, err = e.te.Start(); err != nil {
		return nil, fmt.Errorf("start etcd and kube-apiserver: %w", err)
	}
	e.Kubeconfig = filepath.Join(e.dir, "kubeconfig")
	if err := os.WriteFile(e.Kubeconfig, e.te.KubeConfig, 0o600); err != nil {
		return nil, err
	}
	if err := e.startControllerManager(); err != nil {
		return nil, err
	}
	if err := e.startWatchdog(); err != nil {
		return nil, err
	}
	if e.Client, err = client.New(e.Config, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	e.Started = time.Since(begin)
	return e, nil
}

// startControllerManager runs kube-controller-manager with the garbage
// collector and the namespace controller, and waits until the garbage
// collector's resource monitors have synced.
func (e *Env) startControllerManager() error {
	e.kcm = exec.Command(filepath.Join(e.BinDir, "kube-controller-manager"),
		"--kubeconfig="+e.Kubeconfig,
		"--controllers=garbagecollector,namespace",
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		"--secure-port=0",
	)
	e.kcm.Stdout, e.kcm.Stderr = e.kcmLog, e.kcmLog
	e.kcm.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := e.kcm.Start(); err != nil {
		return fmt.Errorf("start kube-controller-manager: %w", err)
	}
	e.kcmDone = make(chan struct{})
	go func() { _ = e.kcm.Wait(); close(e.kcmDone) }()

	const synced = "all resource monitors have synced"
	deadline := time.After(90 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-e.kcmDone:
			return fmt.Errorf("kube-controller-manager exited: %s", e.kcmLog.Tail(2000))
		case <-deadline:
			return fmt.Errorf("kube-controller-manager: garbage collector not synced after 90s: %s", e.kcmLog.Tail(2000))
		case <-tick.C:
			if strings.Contains(e.kcmLog.String(), synced) {
				return nil
			}
		}
	}
}

// Stop stops kube-controller-manager, kube-apiserver and etcd and removes
// the environment's files. It is safe to call on a partly started Env.
func (e *Env) Stop() error {
	var errs []error
	if e.kcm != nil && e.kcm.Process != nil {
		_ = syscall.Kill(-e.kcm.Process.Pid, syscall.SIGTERM)
		select {
		case <-e.kcmDone:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-e.kcm.Process.Pid, syscall.SIGKILL)
			<-e.kcmDone
		}
	}
	// A restarted API server stops before etcd, as envtest stops its own;
	// envtest's processes that Restart replaced have exited already.
	errs = append(errs, e.stopRestarted("kube-apiserver"))
	if e.te != nil {
		if err := e.te.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop etcd and kube-apiserver: %w", err))
		}
	}
	errs = append(errs, e.stopRestarted("etcd"))
	if e.watchdog != nil && e.watchdog.Process != nil {
		_ = e.watchdog.Process.Kill()
		_ = e.watchdog.Wait()
	}
	if e.dir != "" {
		errs = append(errs, os.RemoveAll(e.dir))
	}
	return errors.Join(errs...)
}

// Kubectl runs bin/kubectl with the environment's kubeconfig and returns its
// standard output; a failure's error includes standard error.
func (e *Env) Kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(e.BinDir, "kubectl"), append([]string{"--kubeconfig=" + e.Kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// ControllerManagerLog returns what kube-controller-manager has logged so
// far, for failure messages.
func (e *Env) ControllerManagerLog() string { return e.kcmLog.String() }

// Main starts the environment for a test binary, runs its tests and stops
// it, then exits. It stores the environment in *env (also when it could not
// start, so that Require can say why). With REPLICAKIT_REQUIRE_ENVTEST=1, a
// failed start fails the test binary without running its tests.
//
// Main starts nothing when the binary runs no test that could use the
// control plane: when it only lists tests (go test -list), when it is a
// fuzzing worker (go test -fuzz starts one process per worker, each running
// TestMain again, and each would otherwise start its own control plane),
// and when it coordinates fuzzing with -run '^$' and no -bench (the
// coordinator then runs only the fuzz target's seed corpus). There *env
// says why, so a fuzz target that calls Require is skipped (or fails with
// REPLICAKIT_REQUIRE_ENVTEST=1) alike in the coordinator and in its
// workers: fuzz targets must not need the control plane.
func Main(m *testing.M, env **Env, opts Options) {
	os.Exit(run(m, env, opts))
}

// errNotStarted is why a binary that runs no test needing the control plane
// did not start it.
var errNotStarted = errors.New("testenv: the control plane is not started for listing or fuzzing (go test -list, or -fuzz with -run '^$'); fuzz targets cannot use it")

func run(m *testing.M, env **Env, opts Options) int {
	flag.Parse() // for testing.Verbose; m.Run would parse them anyway
	if !needed() {
		*env = &Env{startErr: errNotStarted}
		return m.Run()
	}
	e, err := Start(opts)
	if err != nil {
		if os.Getenv(RequireVar) == "1" || !errors.Is(err, ErrMissingBinaries) {
			fmt.Fprintf(os.Stderr, "testenv: the real control plane did not start: %v\n", err)
			return 1
		}
		*env = &Env{startErr: err}
		return m.Run()
	}
	*env = e
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "testenv: control plane up in %v (etcd, kube-apiserver, kube-controller-manager with the garbage collector synced)\n", e.Started.Round(10*time.Millisecond))
	}
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: stop: %v\n", err)
		return max(code, 1)
	}
	return code
}

// needed says whether the test binary's flags ask for a test or benchmark
// that may use the control plane. It is false for -test.list, for a fuzzing
// worker (-test.fuzzworker, which go test passes to the processes it
// starts), and for a fuzzing coordinator whose -test.run is '^$' and which
// runs no benchmark; it is true otherwise, and whenever a flag is missing.
func needed() bool {
	value := func(name string) string {
		if f := flag.Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	switch {
	case value("test.list") != "":
		return false
	case value("test.fuzzworker") == "true":
		return false
	case value("test.fuzz") != "" && value("test.run") == "^$" && value("test.bench") == "":
		return false
	}
	return true
}

// Require returns e when the control plane is running. Otherwise it skips the
// test with the reason (run `make tools`), or fails it when
// REPLICAKIT_REQUIRE_ENVTEST=1.
func (e *Env) Require(t testing.TB) *Env {
	t.Helper()
	switch {
	case e == nil:
		t.Fatal("testenv: no environment; call testenv.Main from TestMain")
	case e.startErr != nil && os.Getenv(RequireVar) == "1":
		t.Fatalf("testenv: %v (%s=1)", e.startErr, RequireVar)
	case e.startErr != nil:
		t.Skipf("needs the real control plane: %v", e.startErr)
	}
	return e
}
