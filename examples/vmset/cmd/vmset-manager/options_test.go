package main

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// TestParse covers where vCenter settings come from and the command lines
// that are refused before anything starts.
func TestParse(t *testing.T) {
	pwFile := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pwFile, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	certDir := t.TempDir()
	for _, f := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(certDir, f), []byte("PEM"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	real := map[string]string{
		"VSPHERE_URL": "https://vc.example.com/sdk", "VSPHERE_USERNAME": "env-user", "VSPHERE_PASSWORD": "env-pw",
		"VSPHERE_DATACENTER": "dc1", "VSPHERE_TEMPLATE": "ubuntu",
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    vsphere.Config // checked when wantErr is empty
		wantErr string
	}{
		{name: "nothing given", wantErr: "no vCenter: give -vsphere-url"},
		{name: "the embedded simulator", args: []string{"-vcsim", "-vcsim-env-file=x"}, want: vsphere.Config{MaxTasks: vsphere.DefaultMaxTasks, ShutdownGrace: vsphere.DefaultShutdownGrace}},
		{name: "the simulator and a vCenter", env: real, args: []string{"-vcsim"}, wantErr: "both given"},
		{name: "the simulator and credentials", env: map[string]string{"VSPHERE_PASSWORD": "p"}, args: []string{"-vcsim"}, wantErr: "needs none"},
		{name: "from the environment", env: real, want: vsphere.Config{
			URL: "https://vc.example.com/sdk", Username: "env-user", Password: "env-pw",
			Datacenter: "dc1", Template: "ubuntu", MaxTasks: vsphere.DefaultMaxTasks, ShutdownGrace: vsphere.DefaultShutdownGrace}},
		{name: "flags win over the environment", env: real,
			args: []string{"-vsphere-username=flag-user", "-vsphere-password-file=" + pwFile, "-vsphere-datacenter=dc2", "-vsphere-max-tasks=3", "-vsphere-shutdown-grace=5s"},
			want: vsphere.Config{URL: "https://vc.example.com/sdk", Username: "flag-user", Password: "from-file",
				Datacenter: "dc2", Template: "ubuntu", MaxTasks: 3, ShutdownGrace: 5 * time.Second}},
		{name: "a VM's guest never asked", args: []string{"-vcsim", "-vsphere-shutdown-grace=-1s"},
			want: vsphere.Config{MaxTasks: vsphere.DefaultMaxTasks, ShutdownGrace: -time.Second}},
		{name: "a shutdown grace over an hour", args: []string{"-vcsim", "-vsphere-shutdown-grace=2h"}, wantErr: "want at most 1h0m0s"},
		{name: "URL without credentials", args: []string{"-vsphere-url=https://vc/sdk"}, wantErr: "needs a user name"},
		{name: "credentials without URL", env: map[string]string{"VSPHERE_USERNAME": "u", "VSPHERE_PASSWORD": "p"}, wantErr: "without -vsphere-url"},
		{name: "unreadable password file", env: real, args: []string{"-vsphere-password-file=/nonexistent"}, wantErr: "vCenter password"},
		{name: "simulator file with a real vCenter", env: real, args: []string{"-vcsim-env-file=x"}, wantErr: "applies only with -vcsim"},
		{name: "bad log level", args: []string{"-log-level=loud"}, wantErr: `-log-level "loud"`},
		{name: "bad log format", args: []string{"-log-format=xml"}, wantErr: `-log-format "xml"`},
		{name: "no concurrency", args: []string{"-max-concurrent-reconciles=0"}, wantErr: "want at least 1"},
		{name: "no vCenter tasks", args: []string{"-vsphere-max-tasks=0"}, wantErr: "want at least 1"},
		{name: "unknown flag", args: []string{"-replicas=3"}, wantErr: "flag provided but not defined"},
		{name: "stray argument", args: []string{"now"}, wantErr: "unexpected arguments"},
		{name: "a metrics certificate for plain HTTP", args: []string{"-vcsim", "-metrics-secure=false", "-metrics-cert-dir=" + certDir}, wantErr: "apply only with -metrics-secure"},
		{name: "HTTP/2 for plain HTTP", args: []string{"-vcsim", "-metrics-secure=false", "-enable-http2"}, wantErr: "apply only with -metrics-secure"},
		{name: "a metrics certificate folder without its files", args: []string{"-vcsim", "-metrics-cert-dir=" + t.TempDir()}, wantErr: "tls.crt"},
		{name: "a metrics certificate folder with its files", args: []string{"-vcsim", "-metrics-cert-dir=" + certDir}, want: vsphere.Config{MaxTasks: vsphere.DefaultMaxTasks, ShutdownGrace: vsphere.DefaultShutdownGrace}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, ok := parseCase(t, tt.args, tt.env, tt.wantErr)
			if !ok {
				return
			}
			if diff := cmp.Diff(tt.want, o.vsphere, ignoreCredentials); diff != "" {
				t.Errorf("vCenter settings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHelp prints every flag with the variable behind it and ends cleanly.
func TestHelp(t *testing.T) {
	var out strings.Builder
	_, err := parse([]string{"-help"}, func(string) string { return "" }, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("parse -help: %v", err)
	}
	for _, want := range []string{"-kubeconfig", "-leader-elect", "-vsphere-url", "$VSPHERE_URL", "-vcsim", "-vcsim-env-file", "-metrics-secure", "-metrics-cert-dir"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "vsphere-password ") {
		t.Errorf("usage offers the password as a flag value:\n%s", out.String())
	}
}

// parseCase parses args with env. With wantErr, it checks that parse
// failed with a usage error containing it and returns false; otherwise it
// fails the test on any error and returns the options.
func parseCase(t *testing.T, args []string, env map[string]string, wantErr string) (options, bool) {
	t.Helper()
	o, err := parse(args, func(k string) string { return env[k] }, io.Discard)
	if wantErr != "" {
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("parse: %v; want a usage error containing %q", err, wantErr)
		}
		return o, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return o, true
}
