package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsim"
)

func main() {
	var o options
	flag.StringVar(&o.manager, "manager", "", "the vmset-manager binary (default: vmset-manager in the repository's bin/, where `make manager` builds it)")
	flag.StringVar(&o.config, "config", "vmset/config", "the example operator's config folder (CRDs, samples)")
	flag.BoolVar(&o.keep, "keep", false, "start everything and keep it running until Ctrl-C instead of playing the story")
	flag.Parse()
	// The demo's own clients log nothing worth showing; without a logger
	// controller-runtime prints a warning with a stack trace instead.
	ctrllog.SetLogger(logr.Discard())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o)
	stop() // before os.Exit, which skips deferred calls
	switch {
	case err == nil:
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(os.Stderr, "vmset-demo: interrupted; everything it started is stopped")
		os.Exit(130)
	default:
		fmt.Fprintln(os.Stderr, "vmset-demo: FAILED:", err)
		os.Exit(1)
	}
}

type options struct {
	manager string
	config  string
	keep    bool
}

// run starts the control plane and the operator, plays the story or waits,
// and stops everything.
func run(ctx context.Context, o options) (err error) {
	fmt.Println("Starting etcd, kube-apiserver and kube-controller-manager (garbage collector) from bin/ ...")
	env, err := testenv.Start(testenv.Options{
		CRDDirectoryPaths: []string{filepath.Join(o.config, "crd", "bases")},
		Scheme:            vmcheck.Scheme(),
	})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, env.Stop()) }()
	fmt.Printf("Control plane up in %v; CRDs installed.\n", env.Started.Round(100_000_000))

	dir, err := os.MkdirTemp("", "vmset-demo-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }() // a leftover temporary folder is harmless
	if o.manager == "" {
		bin, err := testenv.BinDir()
		if err != nil {
			return err
		}
		o.manager = filepath.Join(bin, "vmset-manager")
	}
	// The second vCenter, west: a simulator in this process, with
	// credentials of its own, given to the manager as a mounted Secret
	// would give it.
	west, err := vcsim.New(vcsim.Serialized, vcsim.Hotplug, vcsim.Credentials("west-admin@vsphere.local", "west-Secr3t-pw"))
	if err != nil {
		return err
	}
	defer west.Close()
	westDir := filepath.Join(dir, "vcenter-west")
	if err := west.WriteVCenterDir(westDir); err != nil {
		return err
	}
	m, err := startManager(ctx, o.manager, env.Kubeconfig, dir, westDir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, m.stop()) }()
	fmt.Printf("vmset-manager running on the embedded vCenter simulator at %s and on west, a second one at %s (logs: %s).\n\n",
		m.vcenter.URL, west.URL, m.log)

	if o.keep {
		printHowTo(env, m, o, westDir)
		<-ctx.Done()
		fmt.Println("\nStopping ...")
		return nil
	}
	s := &story{env: env, vc: m.vcenter, west: west.Config(), ns: "demo", sample: filepath.Join(o.config, "samples", "vmreplicaset.yaml"), dead: m.exited}
	if err := s.play(ctx); err != nil {
		return fmt.Errorf("%w\n(the manager's logs were in %s; its last lines:)\n%s", err, m.log, m.tail(3000))
	}
	fmt.Println("\nThe demo passed: at every step Kubernetes and vCenter held what the story asked for.")
	return nil
}

func printHowTo(env *testenv.Env, m *manager, o options, westDir string) {
	kubectl := filepath.Join(env.BinDir, "kubectl")
	fmt.Printf(`The example operator is running. In another shell:

  export KUBECONFIG=%s
  alias kubectl=%s
  kubectl create namespace demo
  kubectl apply -n demo -f %s
  kubectl get vmreplicaset,vm -n demo -o wide
  kubectl scale vmreplicaset test-rs -n demo --replicas=5
  kubectl patch vmreplicaset test-rs -n demo --type=merge -p '{"spec":{"template":{"spec":{"memoryMiB":1024}}}}'
  kubectl get vmreplicaset,vm -n demo    # UP-TO-DATE and each VM's REVISION as it rolls
  kubectl delete vmreplicaset test-rs -n demo

Spread over zones zone-a, zone-b and zone-c (the simulator's clusters DC0_C0,
DC0_C1 and DC0_C2; other zones: $VSPHERE_ZONES before make run):

  kubectl apply -n demo -f %s
  kubectl get vmreplicaset spread-rs -n demo -o wide
  kubectl get vm -n demo -l app=spread-rs

Over two vCenters (zone-a and zone-b on the simulator, west-a and west-b on
west, a second simulator with credentials of its own, in %s):

  kubectl apply -n demo -f %s
  kubectl get vmreplicaset vcenters-rs -n demo -o wide

vCenter (the simulator) for govc, if you have it: set -a; . %s; set +a; govc ls /DC0/vm
The manager's logs: %s

Press Ctrl-C to stop everything.
`, env.Kubeconfig, kubectl, filepath.Join(o.config, "samples", "vmreplicaset.yaml"),
		filepath.Join(o.config, "samples", "vmreplicaset-zones.yaml"), westDir,
		filepath.Join(o.config, "samples", "vmreplicaset-vcenters.yaml"), m.govcEnv, m.log)
}
