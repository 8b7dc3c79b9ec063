package testenv

import (
	"context"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// StartManager runs a controller-runtime manager against the environment
// until the test ends, with setup registering its controllers. Metrics and
// probes are off and controller names may repeat across tests; edit may
// change further options (a NewClient with an interceptor, say). The
// returned function stops the manager and waits for it, as the test's end
// does; calling it again does nothing.
func (e *Env) StartManager(t testing.TB, scheme *runtime.Scheme, setup func(ctrl.Manager) error, edit ...func(*ctrl.Options)) (stop func()) {
	t.Helper()
	return e.StartManagerAs(t, e.Config, scheme, setup, edit...)
}

// StartManagerAs is StartManager with the manager's requests made with
// cfg instead of the environment's administrator: a config of
// kubetest.ServiceAccountConfig runs the controllers under the operator's
// own RBAC.
func (e *Env) StartManagerAs(t testing.TB, cfg *rest.Config, scheme *runtime.Scheme, setup func(ctrl.Manager) error, edit ...func(*ctrl.Options)) (stop func()) {
	t.Helper()
	opts := ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	}
	for _, f := range edit {
		f(&opts)
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		t.Fatalf("new manager: %v", err)
	}
	if err := setup(mgr); err != nil {
		t.Fatalf("set up controllers: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// OnlyNamespace is an edit for StartManager that restricts the manager's
// cache, and so its controllers, to namespace ns. The tests of a package
// share one API server, and what one leaves behind (objects whose
// finalizer no controller removes any more) stays: a manager that saw
// every namespace would reconcile all of it, at start and at the same
// priority as its own test's objects, and (in the example operator) make
// VMs for it in its own simulator before coming to its test's. With
// -count=5 a chaos scenario's fifth operator came to its own objects only
// after some 25 left behind; an example test waited 30 s for its one
// VirtualMachine to be reconciled at all.
func OnlyNamespace(ns string) func(*ctrl.Options) {
	return func(o *ctrl.Options) {
		o.Cache.DefaultNamespaces = map[string]cache.Config{ns: {}}
	}
}
