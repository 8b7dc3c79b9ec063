package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// ignoreCredentials leaves Config.Credentials, a function, out of a
// comparison; TestCredentials_ReadAtEachLogin checks what it reads.
var ignoreCredentials = cmpopts.IgnoreFields(vsphere.Config{}, "Credentials")

// TestCredentials_ReadAtEachLogin: the password of -vsphere-password-file,
// and the username and password of a -vcenter directory, are read again at
// each login, so that a rotated Secret is taken with no restart.
func TestCredentials_ReadAtEachLogin(t *testing.T) {
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	write := func(path, v string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(pwFile, "first")
	west := vcenterDir(t, map[string]string{"url": "https://west.example.com/sdk", "username": "west-user", "password": "west-1"})
	env := map[string]string{"VSPHERE_URL": "https://east.example.com/sdk", "VSPHERE_USERNAME": "east-user"}
	o, ok := parseCase(t, []string{"-vsphere-password-file=" + pwFile, "-vcenter=west=" + west}, env, "")
	if !ok {
		t.Fatal("parse failed")
	}
	check := func(what string, c vsphere.Config, user, password string) {
		t.Helper()
		if c.Credentials == nil {
			t.Fatalf("%s: no Credentials", what)
		}
		u, p, err := c.Credentials(context.Background())
		if err != nil || u != user || p != password {
			t.Errorf("%s: Credentials = %q, %q, %v; want %q, %q", what, u, p, err, user, password)
		}
	}
	check("the default vCenter", o.vsphere, "east-user", "first")
	check("west", o.vcenters["west"], "west-user", "west-1")
	write(pwFile, "second")
	write(filepath.Join(west, "username"), "west-admin")
	write(filepath.Join(west, "password"), "west-2")
	check("the default vCenter, rotated", o.vsphere, "east-user", "second")
	check("west, rotated", o.vcenters["west"], "west-admin", "west-2")
}
