package kubetest_test

import (
	"context"
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// startPoolOperator runs the operator as its main would, in a manager on
// cfg, and returns a client of the API server and a function that stops
// the manager and waits until it has stopped: call it before stopping the
// API server, so that nothing is left talking to it.
func startPoolOperator(ctx context.Context, cfg *rest.Config) (client.WithWatch, func(), error) {
	scheme := newScheme()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, nil, err
	}
	if err := newReconciler(scheme).SetupWithManager(mgr, "pool"); err != nil {
		return nil, nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return c, func() { cancel(); <-done }, nil
}

// Test an operator on a real kube-apiserver and etcd, started by
// controller-runtime's envtest from the folder KUBEBUILDER_ASSETS names
// (setup-envtest fills one; this project builds its own), with the CRD
// controller-gen writes for the Pool type of NewFakeClient's example
// (testdata/example.com_pools.yaml here; config/crd/bases in a kubebuilder
// project). The Reconciler runs as in production: in a manager, through
// SetupWithManager. There is no kubelet, so Pods are made and deleted but
// never run: a test reads what the operator wrote, then polls until the
// Pods and the status are what it expects, plays the kubelet when Pods
// should become ready (MarkPodsReady), and checks a rollout's bounds with
// WatchBounds, as this package's own test does for a Pool scaled 3, 1,
// then 2, made ready, and rolled to a new image.
func Example_envtest() {
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{"testdata"},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: os.Getenv("KUBEBUILDER_ASSETS"),
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = env.Stop() }()

	ctx := context.Background()
	c, stop, err := startPoolOperator(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop() // before env.Stop, deferred above
	if err := c.Create(ctx, newPool("web", 3)); err != nil {
		fmt.Println(err)
		return
	}
	// Then poll with c until the Pods web-0, web-1 and web-2 exist and
	// the Pool's status counts them.
}
