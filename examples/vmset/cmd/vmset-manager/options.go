package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// errUsage marks a bad command line; main exits 2 on it.
var errUsage = errors.New("usage")

// options are the manager's settings after flags and environment.
type options struct {
	kubeconfig              string
	metricsAddr             string
	metricsSecure           bool
	metricsCertDir          string
	enableHTTP2             bool
	probeAddr               string
	leaderElect             bool
	leaderElectionID        string
	leaderElectionNamespace string
	concurrency             int
	logFormat               string
	logLevel                slog.Level

	// vsphere is the vCenter to use; its URL is empty only with vcsim.
	vsphere vsphere.Config
	// vcsim runs govmomi's vCenter simulator in process instead.
	vcsim bool
	// vcsimEnvFile receives govc's settings for the embedded simulator.
	vcsimEnvFile string
	// vcenters are the vCenters besides vsphere that zones may name
	// (Placement.Endpoint), by name.
	vcenters map[string]vsphere.Config
	// zones maps each zone VirtualMachines may name to its placement.
	zones map[string]vmprovider.Placement
	// zoneBackoff is how long new VMs avoid a zone whose clone failed.
	zoneBackoff time.Duration
}

// envFlags maps each vCenter flag to the environment variable that supplies
// its default.
var envFlags = []struct{ flag, env, usage string }{
	{"vsphere-url", "VSPHERE_URL", "vCenter SDK URL, such as https://vcenter.example.com/sdk (required unless -vcsim)"},
	{"vsphere-username", "VSPHERE_USERNAME", "vCenter user name"},
	{"vsphere-password-file", "VSPHERE_PASSWORD_FILE", "file holding the vCenter password (else $VSPHERE_PASSWORD)"},
	{"vsphere-extension-key", "VSPHERE_EXTENSION_KEY", "vCenter extension to log in as by client certificate, in place of a user name and password (with -vsphere-client-cert-dir)"},
	{"vsphere-client-cert-dir", "VSPHERE_CLIENT_CERT_DIR", "folder holding tls.crt and tls.key (a kubernetes.io/tls Secret) that -vsphere-extension-key logs in with, read again at each login"},
	{"vsphere-ca-file", "VSPHERE_CA_FILE", "PEM bundle of the authorities that sign vCenter's certificate (else the system's)"},
	{"vsphere-thumbprint", "VSPHERE_THUMBPRINT", "vCenter certificate thumbprint (SHA-1 or SHA-256), for a self-signed certificate"},
	{"vsphere-datacenter", "VSPHERE_DATACENTER", "datacenter (empty: the only one)"},
	{"vsphere-folder", "VSPHERE_FOLDER", "VM folder (empty: the datacenter's VM folder)"},
	{"vsphere-resource-pool", "VSPHERE_RESOURCE_POOL", "resource pool or cluster (empty: the only one)"},
	{"vsphere-datastore", "VSPHERE_DATASTORE", "datastore (empty: the only one)"},
	{"vsphere-template", "VSPHERE_TEMPLATE", "VM or template cloned when a VirtualMachine names none"},
}

// parse reads args, with getenv supplying the vCenter defaults. A bad
// command line returns an error wrapping errUsage; -help returns
// flag.ErrHelp after printing the usage to stderr.
func parse(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("vmset-manager", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (else $KUBECONFIG, in-cluster, ~/.kube/config)")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443", `metrics address; "0" turns metrics off`)
	fs.BoolVar(&o.metricsSecure, "metrics-secure", true, "serve metrics over HTTPS to clients the API server authenticates (TokenReview) and authorizes for GET /metrics (SubjectAccessReview); false: plain HTTP to anyone")
	fs.StringVar(&o.metricsCertDir, "metrics-cert-dir", "", "folder holding tls.crt and tls.key for the metrics server, reloaded when they change (empty: controller-runtime's $TMPDIR/k8s-metrics-server/serving-certs if it holds them, else a self-signed certificate made at start)")
	fs.BoolVar(&o.enableHTTP2, "enable-http2", false, "with -metrics-secure, serve metrics over HTTP/2 too (off: HTTP/2's rapid-reset and stream-cancellation attacks, CVE-2023-44487 and CVE-2023-39325)")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", `address of /healthz and /readyz; "0" turns them off`)
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "elect a leader so that only one replica of the operator reconciles")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", "vmset.replicakit.io", "name of the leader election Lease")
	fs.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "", "namespace of the Lease (default: the pod's namespace)")
	fs.IntVar(&o.concurrency, "max-concurrent-reconciles", 4, "reconciles each controller runs at once")
	fs.StringVar(&o.logFormat, "log-format", "json", "log format: json or text")
	level := fs.String("log-level", "info", "log level: debug, info, warn or error")
	fs.BoolVar(&o.vcsim, "vcsim", false, "run govmomi's vCenter simulator in process instead of using a vCenter (demos and tests: its VMs exist nowhere else)")
	fs.StringVar(&o.vcsimEnvFile, "vcsim-env-file", "", "with -vcsim, write govc's settings for the simulator to this file")
	vals := make(map[string]*string, len(envFlags))
	for _, f := range envFlags {
		vals[f.flag] = fs.String(f.flag, getenv(f.env), f.usage+" [$"+f.env+"]")
	}
	fs.BoolVar(&o.vsphere.Insecure, "vsphere-insecure", getenv("VSPHERE_INSECURE") == "true", "skip vCenter TLS verification (tests only) [$VSPHERE_INSECURE]")
	fs.IntVar(&o.vsphere.MaxTasks, "vsphere-max-tasks", vsphere.DefaultMaxTasks, "vCenter tasks in flight at once")
	fs.DurationVar(&o.vsphere.ShutdownGrace, "vsphere-shutdown-grace", vsphere.DefaultShutdownGrace,
		"how long deleting a running VM waits for its guest to shut down (asked through VMware Tools) before powering it off; negative: power off at once")
	var zones zoneFlag
	var vcenters vcenterFlag
	fs.Var(&vcenters, "vcenter", "another vCenter zones may name (vcenter=NAME), repeated: NAME=DIR, DIR holding one file per setting as a mounted Secret does: url, username and password, and optionally ca.crt, thumbprint, insecure, datacenter, folder, resourcePool, datastore and template [$VSPHERE_VCENTERS: entries separated by ';']")
	fs.DurationVar(&o.zoneBackoff, "zone-backoff", replicaset.DefaultZoneBackoff, "how long a set's new VMs avoid a zone after a clone there failed")
	fs.Var(&zones, "zone", "a zone sets may spread over, repeated: NAME:resourcePool=PATH[,folder=PATH][,datastore=NAME][,vcenter=NAME] (a cluster or resource pool, and optionally a folder, datastore and -vcenter; none: the -vsphere-url one) [$VSPHERE_ZONES: entries separated by ';'; with -vcsim and none given: zone-a, zone-b and zone-c, one per simulated cluster]")

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if err := o.logLevel.UnmarshalText([]byte(*level)); err != nil {
		return o, fmt.Errorf("%w: -log-level %q: want debug, info, warn or error", errUsage, *level)
	}
	if o.logFormat != "json" && o.logFormat != "text" {
		return o, fmt.Errorf("%w: -log-format %q: want json or text", errUsage, o.logFormat)
	}
	if o.concurrency < 1 {
		return o, fmt.Errorf("%w: -max-concurrent-reconciles %d: want at least 1", errUsage, o.concurrency)
	}
	if !o.metricsSecure && (o.metricsCertDir != "" || o.enableHTTP2) {
		return o, fmt.Errorf("%w: -metrics-cert-dir and -enable-http2 apply only with -metrics-secure", errUsage)
	}
	if o.metricsCertDir != "" {
		// controller-runtime would fall back to a self-signed certificate,
		// hiding a bad mount.
		if _, _, err := tlsPair(o.metricsCertDir); err != nil {
			return o, fmt.Errorf("%w: -metrics-cert-dir: %w", errUsage, err)
		}
	}
	o.zones = zones.zones
	if env := getenv("VSPHERE_ZONES"); env != "" && o.zones == nil {
		var err error
		if o.zones, err = parseZones(env); err != nil {
			return o, fmt.Errorf("%w: $VSPHERE_ZONES: %w", errUsage, err)
		}
	}
	dirs := vcenters.dirs
	if env := getenv("VSPHERE_VCENTERS"); env != "" && dirs == nil {
		var err error
		if dirs, err = parseVCenters(env); err != nil {
			return o, fmt.Errorf("%w: $VSPHERE_VCENTERS: %w", errUsage, err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(dirs)) {
		c, err := readVCenter(name, dirs[name])
		if err != nil {
			return o, fmt.Errorf("%w: -vcenter: %w", errUsage, err)
		}
		if o.vcenters == nil {
			o.vcenters = map[string]vsphere.Config{}
		}
		o.vcenters[name] = c
	}
	for _, z := range slices.Sorted(maps.Keys(o.zones)) {
		if ep := o.zones[z].Endpoint; ep != "" && ep != defaultVCenter && o.vcenters[ep].URL == "" {
			return o, fmt.Errorf("%w: zone %s: vcenter %q is not given (-vcenter %s=DIR)", errUsage, z, ep, ep)
		}
	}
	if o.zoneBackoff <= 0 {
		return o, fmt.Errorf("%w: -zone-backoff %v: want a positive duration", errUsage, o.zoneBackoff)
	}
	if o.vsphere.MaxTasks < 1 {
		return o, fmt.Errorf("%w: -vsphere-max-tasks %d: want at least 1", errUsage, o.vsphere.MaxTasks)
	}
	if o.vsphere.ShutdownGrace > vsphere.MaxShutdownGrace {
		return o, fmt.Errorf("%w: -vsphere-shutdown-grace %v: want at most %v", errUsage, o.vsphere.ShutdownGrace, vsphere.MaxShutdownGrace)
	}
	for name, c := range o.vcenters {
		c.MaxTasks, c.ShutdownGrace = o.vsphere.MaxTasks, o.vsphere.ShutdownGrace
		o.vcenters[name] = c
	}

	v := &o.vsphere
	v.URL, v.Username = *vals["vsphere-url"], *vals["vsphere-username"]
	v.CAFile, v.Thumbprint = *vals["vsphere-ca-file"], *vals["vsphere-thumbprint"]
	v.Datacenter, v.Folder = *vals["vsphere-datacenter"], *vals["vsphere-folder"]
	v.ResourcePool, v.Datastore = *vals["vsphere-resource-pool"], *vals["vsphere-datastore"]
	v.Template = *vals["vsphere-template"]
	v.Password = getenv("VSPHERE_PASSWORD")
	if f := *vals["vsphere-password-file"]; f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return o, fmt.Errorf("%w: vCenter password: %w", errUsage, err)
		}
		v.Password = strings.TrimRight(string(b), "\r\n")
		// Read again at each login: a rotated Secret is taken with no
		// restart.
		v.Credentials = fileCredentials(v.Username, f)
	}
	if key, dir := *vals["vsphere-extension-key"], *vals["vsphere-client-cert-dir"]; key != "" || dir != "" {
		if key == "" || dir == "" {
			return o, fmt.Errorf("%w: -vsphere-extension-key and -vsphere-client-cert-dir go together", errUsage)
		}
		cert, err := clientCertificate(dir)
		if err != nil {
			return o, fmt.Errorf("%w: -vsphere-client-cert-dir: %w", errUsage, err)
		}
		v.ExtensionKey, v.ClientCertificate = key, cert
	}
	byPassword := v.Username != "" || v.Password != ""
	switch {
	case byPassword && v.ExtensionKey != "":
		return o, fmt.Errorf("%w: a user name or password given with -vsphere-extension-key: log in by password or by certificate, not both", errUsage)
	case o.vcsim && v.URL != "":
		return o, fmt.Errorf("%w: -vcsim and -vsphere-url ($VSPHERE_URL) both given: use one vCenter", errUsage)
	case o.vcsim && (byPassword || v.ExtensionKey != ""):
		return o, fmt.Errorf("%w: vCenter credentials given with -vcsim, which needs none", errUsage)
	case o.vcsim:
		if o.zones == nil {
			o.zones = simulatorZones()
		}
		return o, nil
	case o.vcsimEnvFile != "":
		return o, fmt.Errorf("%w: -vcsim-env-file applies only with -vcsim", errUsage)
	case v.URL == "" && (byPassword || v.ExtensionKey != ""):
		return o, fmt.Errorf("%w: vCenter credentials given without -vsphere-url ($VSPHERE_URL)", errUsage)
	case v.URL == "":
		return o, fmt.Errorf("%w: no vCenter: give -vsphere-url (or $VSPHERE_URL) with a user name and password, or -vcsim to run the in-process simulator for a demo", errUsage)
	case v.ExtensionKey == "" && (v.Username == "" || v.Password == ""):
		return o, fmt.Errorf("%w: -vsphere-url needs a user name (-vsphere-username, $VSPHERE_USERNAME) and a password ($VSPHERE_PASSWORD, -vsphere-password-file), or an extension and its certificate (-vsphere-extension-key, -vsphere-client-cert-dir)", errUsage)
	}
	return o, nil
}
