package main

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// vCenterEnv are the environment variables parse may read, all of them.
var vCenterEnv = []string{
	"VSPHERE_URL", "VSPHERE_USERNAME", "VSPHERE_PASSWORD", "VSPHERE_PASSWORD_FILE", "VSPHERE_CA_FILE",
	"VSPHERE_THUMBPRINT", "VSPHERE_DATACENTER", "VSPHERE_FOLDER", "VSPHERE_RESOURCE_POOL",
	"VSPHERE_DATASTORE", "VSPHERE_TEMPLATE", "VSPHERE_INSECURE", "VSPHERE_ZONES", "VSPHERE_VCENTERS",
	"VSPHERE_EXTENSION_KEY", "VSPHERE_CLIENT_CERT_DIR",
}

// fuzzFiles are the only files a fuzzed command line may name: parse reads
// the password file and looks into the metrics certificate folder, so
// every such flag is pointed at one of these.
type fuzzFiles struct {
	password string // written with each input's file content
	certs    string // holds tls.crt and tls.key
	noCerts  string // holds nothing
	vcenter  string // a -vcenter directory: url, username and password
}

// newFuzzFiles makes the files in a temporary folder of f's.
func newFuzzFiles(f *testing.F) fuzzFiles {
	dir := f.TempDir()
	ff := fuzzFiles{password: filepath.Join(dir, "password"), certs: filepath.Join(dir, "certs"), noCerts: filepath.Join(dir, "empty"),
		vcenter: filepath.Join(dir, "vcenter")}
	for _, d := range []string{ff.certs, ff.noCerts, ff.vcenter} {
		if err := os.Mkdir(d, 0o700); err != nil {
			f.Fatal(err)
		}
	}
	crt, key, _ := clientPair(f) // a real pair: -vsphere-client-cert-dir loads it
	for name, v := range map[string]string{"tls.crt": crt, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(ff.certs, name), []byte(v), 0o600); err != nil {
			f.Fatal(err)
		}
	}
	for name, v := range map[string]string{"url": "https://west/sdk", "username": "w", "password": "pw"} {
		if err := os.WriteFile(filepath.Join(ff.vcenter, name), []byte(v), 0o600); err != nil {
			f.Fatal(err)
		}
	}
	return ff
}

// boolFlags are parse's boolean flags: unlike the others, a boolean flag
// given without "=value" takes no value from the next argument.
var boolFlags = []string{"vcsim", "metrics-secure", "enable-http2", "leader-elect", "vsphere-insecure"}

// confine walks args as the flag package does and rewrites the flags that
// name a file or folder to name fuzzFiles' instead: the password file, and
// a certificate folder with its files when the value given has an even
// length, without them otherwise. It returns the rewritten arguments and
// the names of the flags given.
func (ff fuzzFiles) confine(args []string) ([]string, map[string]bool) {
	out := make([]string, 0, len(args))
	given := map[string]bool{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			// The flags end here; parse refuses what follows "--" or a
			// positional argument.
			return append(out, args[i:]...), given
		}
		name, value, inline := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		given[name] = true
		next := !inline && !slices.Contains(boolFlags, name) && i+1 < len(args)
		if next {
			value = args[i+1]
		}
		switch name {
		case "vsphere-password-file":
			a = "-vsphere-password-file=" + ff.password
		case "metrics-cert-dir", "vsphere-client-cert-dir":
			a = "-" + name + "=" + ff.noCerts
			if len(value)%2 == 0 {
				a = "-" + name + "=" + ff.certs
			}
		case "vcenter":
			vcName, _, _ := strings.Cut(value, "=")
			a = "-vcenter=" + vcName + "=" + ff.vcenter
		default:
			out = append(out, a)
			if next {
				out = append(out, args[i+1])
				i++
			}
			continue
		}
		out = append(out, a)
		if next {
			i++ // the value is replaced
		}
	}
	return out, given
}

// FuzzParse parses arbitrary command lines (arguments separated by NUL,
// which no argument can hold) with arbitrary values of the vCenter
// environment variables, $VSPHERE_ZONES among them. parse never panics and
// reads no other variable. It fails either with flag.ErrHelp, when -h or
// -help is given, or with an error wrapping errUsage; or it returns
// options that keep every documented rule: a vCenter URL or -vcsim, never
// both; credentials exactly with a URL, none with -vcsim; -vcsim-env-file
// only with -vcsim; the environment's values where no flag overrides them;
// a known log format, positive concurrency, vCenter tasks and zone backoff;
// -metrics-cert-dir and -enable-http2 only with -metrics-secure, the
// folder holding tls.crt and tls.key; zones (the simulator's with -vcsim
// when none are given) that each have a label-valid name and a resource
// pool, on the -vsphere-url (or -vcsim) vCenter or one -vcenter gives,
// and that formatZones writes as $VSPHERE_ZONES reading back the
// same. Flags naming files are pointed at a temporary folder's files.
func FuzzParse(f *testing.F) {
	f.Add("-vcsim", "", "", "", "", "", "", "", false)
	f.Add("", "https://vc/sdk", "u", "p", "a:resourcePool=/dc/host/c0;b:cluster=/dc/host/c1,folder=/dc/vm/b", "true", "dc1", "", false)
	f.Add("-vsphere-password-file=x\x00-zone=a:resourcePool=/p,datastore=ds", "https://vc/sdk", "u", "", "", "", "", "secret\r\n", true)
	f.Add("-vcsim\x00-metrics-secure=false\x00-enable-http2", "", "", "", "", "", "", "", false)
	f.Add("-vcsim\x00-metrics-cert-dir=ok\x00-log-format=text\x00-log-level=debug+2", "", "", "", "", "", "", "", false)
	f.Add("--zone-backoff=1ns\x00-max-concurrent-reconciles=1\x00-vsphere-max-tasks=1", "h", "u", "p", "", "", "", "", false)
	f.Add("-vcsim\x00-vsphere-shutdown-grace=-5s", "", "", "", "", "", "", "", false)
	f.Add("-vsphere-extension-key=io.example\x00-vsphere-client-cert-dir=ok", "https://vc/sdk", "", "", "", "", "", "", false)
	f.Add("-help", "", "", "", "", "", "", "", false)
	f.Add("-vcsim\x00--\x00-zone=a:resourcePool=/x", "", "", "", "", "", "", "", false)
	f.Add("-vcsim\x00-zone=a:resourcePool=/x;b:resourcePool=/y", "", "", "", "", "", "", "", false)
	f.Add("-vcenter=west=d\x00-zone=w:resourcePool=/x,vcenter=west", "https://vc/sdk", "u", "p", "e:resourcePool=/y,vcenter=east", "", "", "", false)
	ff := newFuzzFiles(f)
	f.Fuzz(func(t *testing.T, argv, url, user, password, zones, insecure, datacenter, fileContent string, pwFileEnv bool) {
		var args []string
		if argv != "" {
			args = strings.Split(argv, "\x00")
		}
		args, given := ff.confine(args)
		if err := os.WriteFile(ff.password, []byte(fileContent), 0o600); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{
			"VSPHERE_URL": url, "VSPHERE_USERNAME": user, "VSPHERE_PASSWORD": password,
			"VSPHERE_ZONES": zones, "VSPHERE_INSECURE": insecure, "VSPHERE_DATACENTER": datacenter,
		}
		if pwFileEnv {
			env["VSPHERE_PASSWORD_FILE"] = ff.password
		}
		getenv := func(k string) string {
			if !slices.Contains(vCenterEnv, k) {
				t.Errorf("parse read $%s, which is none of the vCenter variables", k)
			}
			return env[k]
		}

		o, err := parse(args, getenv, io.Discard)
		if err != nil {
			switch {
			case errors.Is(err, flag.ErrHelp) && !given["h"] && !given["help"]:
				t.Fatalf("parse(%q) = ErrHelp without -h or -help", args)
			case !errors.Is(err, flag.ErrHelp) && !errors.Is(err, errUsage):
				t.Fatalf("parse(%q): %v; want an error wrapping errUsage", args, err)
			}
			return
		}
		checkOptions(t, args, given, env, fileContent, pwFileEnv, o)
	})
}

// checkOptions checks what parse accepted from args (which give the flags
// in given) and env against the documented rules (FuzzParse); pwFileEnv
// says whether $VSPHERE_PASSWORD_FILE names the password file, which holds
// fileContent.
func checkOptions(t *testing.T, args []string, given map[string]bool, env map[string]string, fileContent string, pwFileEnv bool, o options) {
	t.Helper()
	v := o.vsphere
	switch {
	case o.vcsim == (v.URL != ""):
		t.Fatalf("parse(%q): -vcsim %v with URL %q; want exactly one", args, o.vcsim, v.URL)
	case o.vcsim && (v.Username != "" || v.Password != "" || v.ExtensionKey != ""):
		t.Fatalf("parse(%q): credentials with -vcsim: user %q, extension %q", args, v.Username, v.ExtensionKey)
	case !o.vcsim && v.ExtensionKey == "" && (v.Username == "" || v.Password == ""):
		t.Fatalf("parse(%q): URL %q without a user name or password, or an extension", args, v.URL)
	case v.ExtensionKey != "" && (v.Username != "" || v.Password != "" || v.ClientCertificate == nil):
		t.Fatalf("parse(%q): extension %q with a user name or password, or without a certificate", args, v.ExtensionKey)
	case !o.vcsim && o.vcsimEnvFile != "":
		t.Fatalf("parse(%q): -vcsim-env-file without -vcsim", args)
	case o.logFormat != "json" && o.logFormat != "text":
		t.Fatalf("parse(%q): log format %q", args, o.logFormat)
	case o.concurrency < 1 || v.MaxTasks < 1 || o.zoneBackoff <= 0:
		t.Fatalf("parse(%q): concurrency %d, vCenter tasks %d, zone backoff %v; want all positive", args, o.concurrency, v.MaxTasks, o.zoneBackoff)
	case v.ShutdownGrace > vsphere.MaxShutdownGrace:
		t.Fatalf("parse(%q): shutdown grace %v; want at most %v", args, v.ShutdownGrace, vsphere.MaxShutdownGrace)
	case !o.metricsSecure && (o.metricsCertDir != "" || o.enableHTTP2):
		t.Fatalf("parse(%q): -metrics-cert-dir or -enable-http2 without -metrics-secure", args)
	}
	if o.metricsCertDir != "" {
		for _, name := range []string{"tls.crt", "tls.key"} {
			if _, err := os.Stat(filepath.Join(o.metricsCertDir, name)); err != nil {
				t.Fatalf("parse(%q) accepted a certificate folder without %s", args, name)
			}
		}
	}

	// The environment supplies what no flag gives.
	for _, c := range []struct{ flag, env, got string }{
		{"vsphere-url", "VSPHERE_URL", v.URL},
		{"vsphere-username", "VSPHERE_USERNAME", v.Username},
		{"vsphere-datacenter", "VSPHERE_DATACENTER", v.Datacenter},
	} {
		if !given[c.flag] && c.got != env[c.env] {
			t.Fatalf("parse(%q): %s %q, want $%s %q", args, c.flag, c.got, c.env, env[c.env])
		}
	}
	if !given["vsphere-insecure"] && v.Insecure != (env["VSPHERE_INSECURE"] == "true") {
		t.Fatalf("parse(%q): insecure %v with $VSPHERE_INSECURE %q", args, v.Insecure, env["VSPHERE_INSECURE"])
	}
	wantPassword := env["VSPHERE_PASSWORD"]
	if given["vsphere-password-file"] || pwFileEnv {
		wantPassword = strings.TrimRight(fileContent, "\r\n")
	}
	if v.Password != wantPassword {
		t.Fatalf("parse(%q): password %q, want %q", args, v.Password, wantPassword)
	}

	// Zones: from -zone, else $VSPHERE_ZONES, else the simulator's.
	if !given["zone"] {
		want, err := parseZones(env["VSPHERE_ZONES"])
		if err != nil {
			t.Fatalf("parse(%q) accepted $VSPHERE_ZONES %q: %v", args, env["VSPHERE_ZONES"], err)
		}
		if want == nil && o.vcsim {
			want = simulatorZones()
		}
		if diff := cmp.Diff(want, o.zones); diff != "" {
			t.Fatalf("parse(%q) with $VSPHERE_ZONES %q: zones (-want +got):\n%s", args, env["VSPHERE_ZONES"], diff)
		}
	}
	checkZones(t, o.zones)
	for name, pl := range o.zones {
		if ep := pl.Endpoint; ep != "" && ep != defaultVCenter && o.vcenters[ep].URL == "" {
			t.Fatalf("parse(%q): zone %s on vCenter %q, which no -vcenter gives", args, name, ep)
		}
	}
}

// checkZones checks that every zone has a label-valid name and a resource
// pool, and that formatZones writes zones as $VSPHERE_ZONES reading back
// the same.
func checkZones(t *testing.T, zones map[string]vmprovider.Placement) {
	t.Helper()
	for name, pl := range zones {
		if name == "" || len(validation.IsValidLabelValue(name)) > 0 {
			t.Fatalf("zone name %q is no label value", name)
		}
		if pl.ResourcePool == "" {
			t.Fatalf("zone %q has no resource pool", name)
		}
	}
	s := formatZones(zones)
	back, err := parseZones(s)
	if err != nil {
		t.Fatalf("formatZones wrote %q, which does not read back: %v", s, err)
	}
	if diff := cmp.Diff(zones, back); diff != "" {
		t.Fatalf("formatZones wrote %q, which reads back otherwise (-want +got):\n%s", s, diff)
	}
}

// FuzzZones reads arbitrary text as $VSPHERE_ZONES and as one -zone entry.
// Neither read panics; each either fails or gives zones with label-valid
// names and a resource pool each, which formatZones writes as
// $VSPHERE_ZONES reading back the same, and which it writes the same way
// again (a fixed point).
func FuzzZones(f *testing.F) {
	for _, s := range []string{
		"", ";", "a:resourcePool=/dc/host/c0",
		"a:resourcePool=/dc/host/c0; b:cluster=/dc/host/c1,folder=/dc/vm/b,datastore=ds1\nc:resourcePool=x",
		"a:resourcePool=/x,cluster=/y", "a:resourcePool=/x;a:resourcePool=/y", "zone a:resourcePool=/x",
		"a:datastore=ds", "a:resourcePool=x=y, folder= f", "a:resourcePool", ":resourcePool=/x",
		"a:resourcePool=/x,host=h", "\u00e9:resourcePool=/x", "a:resourcePool=/x;b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if zones, err := parseZones(s); err == nil {
			checkZones(t, zones)
			if once, twice := formatZones(zones), formatZones(mustParseZones(t, formatZones(zones))); once != twice {
				t.Fatalf("formatZones(parseZones(%q)): %q, then %q", s, once, twice)
			}
		}
		var z zoneFlag
		if err := z.Set(s); err == nil {
			if len(z.zones) != 1 {
				t.Fatalf("-zone=%q gave %d zones", s, len(z.zones))
			}
			checkZones(t, z.zones)
		}
	})
}

// mustParseZones is parseZones failing t on an error.
func mustParseZones(t *testing.T, s string) map[string]vmprovider.Placement {
	t.Helper()
	z, err := parseZones(s)
	if err != nil {
		t.Fatalf("parseZones(%q): %v", s, err)
	}
	return z
}

// TestZoneFlag_OneEntry: a -zone value holding ';' or a newline, which
// separate $VSPHERE_ZONES's entries, is refused. It was read as one zone
// whose last value swallowed the other entries (-zone
// 'a:resourcePool=/dc/host/c0;b:resourcePool=/dc/host/c1' gave zone a the
// pool "/dc/host/c0;b:resourcePool=/dc/host/c1" and no zone b), which the
// logged formatZones then read back as two zones (FuzzZones found it).
func TestZoneFlag_OneEntry(t *testing.T) {
	real := map[string]string{"VSPHERE_URL": "https://vc/sdk", "VSPHERE_USERNAME": "u", "VSPHERE_PASSWORD": "p"}
	for _, entry := range []string{
		"a:resourcePool=/dc/host/c0;b:resourcePool=/dc/host/c1",
		"a:resourcePool=/dc/host/c0,datastore=ds1\nb:resourcePool=/dc/host/c1",
		"a:resourcePool=/dc/host/c0;",
	} {
		_, err := parse([]string{"-zone=" + entry}, func(k string) string { return real[k] }, io.Discard)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "one entry per -zone") {
			t.Errorf("parse -zone=%q: %v; want a usage error saying one entry per -zone", entry, err)
		}
	}
}
