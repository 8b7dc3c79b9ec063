package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// serve runs the manager with opts until ctx ends, logging to stderr.
func serve(ctx context.Context, opts options, stderr io.Writer) error {
	log := newLogger(opts, stderr)
	ctrl.SetLogger(log)
	klog.SetLogger(log.WithName("client-go"))

	restConfig, err := kubeconfig(opts.kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}

	vc := opts.vsphere
	if opts.vcsim {
		// One call at a time: the simulator races with itself otherwise.
		sim, err := vcsim.New(vcsim.Serialized, vcsim.Hotplug)
		if err != nil {
			return err
		}
		defer sim.Close()
		vc = sim.Config()
		if err := sim.AddCluster(ctx, vcsim.ThirdCluster); err != nil {
			return err
		}
		log.Info("-vcsim: running the embedded vCenter simulator; its VMs exist only in this process", "url", vc.URL, "username", vc.Username)
		if opts.vcsimEnvFile != "" {
			if err := sim.WriteEnvFile(opts.vcsimEnvFile); err != nil {
				return err
			}
			log.Info("wrote govc settings for the simulator", "file", opts.vcsimEnvFile)
		}
	}
	vc.MaxTasks, vc.ShutdownGrace = opts.vsphere.MaxTasks, opts.vsphere.ShutdownGrace
	vms, closeAll, err := connectVCenters(ctx, log, vc, opts.vcenters)
	if err != nil {
		return err
	}
	defer closeAll()

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := vmv1.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsOptions(opts),
		HealthProbeBindAddress:        opts.probeAddr,
		LeaderElection:                opts.leaderElect,
		LeaderElectionID:              opts.leaderElectionID,
		LeaderElectionNamespace:       opts.leaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		Controller:                    ctrlconfig.Controller{MaxConcurrentReconciles: opts.concurrency},
		// Nothing here reads managed fields: the cache drops them, as
		// kube-controller-manager's informers do.
		Cache: cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	vms.Zones = opts.zones
	if len(opts.zones) > 0 {
		log.Info("zones", "zones", formatZones(opts.zones))
	}
	backoff := func(r *kube.Reconciler[*vmv1.VirtualMachineReplicaSet, *vmv1.VirtualMachine]) {
		r.ZoneBackoff = opts.zoneBackoff
	}
	if err := controllers.Setup(mgr, vms, backoff); err != nil {
		return fmt.Errorf("controllers: %w", err)
	}
	stopCounting, err := countCachedObjects(ctx, mgr.GetCache(), metrics.Registry)
	if err != nil {
		return fmt.Errorf("cache metrics: %w", err)
	}
	defer stopCounting()
	log.Info("starting the manager", "leaderElection", opts.leaderElect, "metrics", opts.metricsAddr, "metricsSecure", opts.metricsSecure, "probes", opts.probeAddr)
	return mgr.Start(ctx)
}

// The metrics server asks the API server who a scraper is and whether it
// may GET /metrics:
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// metricsOptions serves metrics on opts.metricsAddr: with metricsSecure,
// over HTTPS (the certificate in metricsCertDir, else a self-signed one)
// to clients the API server authenticates and authorizes for GET
// /metrics, as kubebuilder's scaffold does; HTTP/1.1 only unless
// enableHTTP2.
func metricsOptions(opts options) metricsserver.Options {
	m := metricsserver.Options{BindAddress: opts.metricsAddr, SecureServing: opts.metricsSecure}
	if !opts.enableHTTP2 {
		m.TLSOpts = append(m.TLSOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	if opts.metricsSecure {
		m.FilterProvider = filters.WithAuthenticationAndAuthorization
		m.CertDir = opts.metricsCertDir
	}
	return m
}

// newLogger returns a structured logger writing JSON or text to w.
func newLogger(opts options, w io.Writer) logr.Logger {
	ho := &slog.HandlerOptions{Level: opts.logLevel}
	var h slog.Handler = slog.NewJSONHandler(w, ho)
	if opts.logFormat == "text" {
		h = slog.NewTextHandler(w, ho)
	}
	return logr.FromSlogHandler(h)
}

// kubeconfig loads path if set, else the usual places.
func kubeconfig(path string) (*rest.Config, error) {
	if path != "" {
		return clientcmd.BuildConfigFromFlags("", path)
	}
	return config.GetConfig()
}
