package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// defaultVCenter names the vCenter of the -vsphere-* flags, which zones
// that name none use.
const defaultVCenter = "default"

// vcenterFlag collects -vcenter flags, each another vCenter zones may name
// (a zone's vcenter=NAME):
//
//	NAME=DIR
//
// DIR holds one file per setting, as a mounted Secret does (vcenterFiles).
// $VSPHERE_VCENTERS holds the same entries separated by ';' or newlines.
type vcenterFlag struct {
	dirs map[string]string
}

// String implements flag.Value.
func (v *vcenterFlag) String() string {
	if v == nil || len(v.dirs) == 0 {
		return ""
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(v.dirs)) {
		out = append(out, name+"="+v.dirs[name])
	}
	return strings.Join(out, ";")
}

// Set implements flag.Value: one entry per -vcenter.
func (v *vcenterFlag) Set(entry string) error {
	if strings.ContainsAny(entry, ";\n") {
		return fmt.Errorf("vCenter %q: one entry per -vcenter (';' and newlines separate $VSPHERE_VCENTERS's entries)", entry)
	}
	name, dir, ok := strings.Cut(strings.TrimSpace(entry), "=")
	if !ok || dir == "" {
		return fmt.Errorf("vCenter %q: want NAME=DIR, DIR holding its url, username and password files", entry)
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("vCenter name %q: want a DNS label (lower-case letters, digits and '-'; at most 63)", name)
	}
	if name == defaultVCenter {
		return fmt.Errorf("vCenter name %q: it names the vCenter of -vsphere-url; choose another", name)
	}
	if v.dirs == nil {
		v.dirs = map[string]string{}
	}
	if _, dup := v.dirs[name]; dup {
		return fmt.Errorf("vCenter %q given twice", name)
	}
	v.dirs[name] = dir
	return nil
}

// parseVCenters reads $VSPHERE_VCENTERS: entries separated by ';' or
// newlines.
func parseVCenters(s string) (map[string]string, error) {
	var v vcenterFlag
	for _, entry := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == '\n' }) {
		if entry = strings.TrimSpace(entry); entry == "" {
			continue
		}
		if err := v.Set(entry); err != nil {
			return nil, err
		}
	}
	return v.dirs, nil
}

// vcenterFiles are the files a -vcenter directory may hold, each setting
// the Config field it names; url is required, and username and password
// unless extensionKey is there, with tls.crt and tls.key, to log in by
// certificate.
var vcenterFiles = []struct {
	name     string
	required bool
	set      func(c *vsphere.Config, v string)
}{
	{"url", true, func(c *vsphere.Config, v string) { c.URL = v }},
	{"username", false, func(c *vsphere.Config, v string) { c.Username = v }},
	{"password", false, func(c *vsphere.Config, v string) { c.Password = v }},
	{"extensionKey", false, func(c *vsphere.Config, v string) { c.ExtensionKey = v }},
	{"ca.crt", false, func(c *vsphere.Config, v string) { c.CABundle = []byte(v) }},
	{"thumbprint", false, func(c *vsphere.Config, v string) { c.Thumbprint = v }},
	{"insecure", false, func(c *vsphere.Config, v string) { c.Insecure = v == "true" }},
	{"datacenter", false, func(c *vsphere.Config, v string) { c.Datacenter = v }},
	{"folder", false, func(c *vsphere.Config, v string) { c.Folder = v }},
	{"resourcePool", false, func(c *vsphere.Config, v string) { c.ResourcePool = v }},
	{"datastore", false, func(c *vsphere.Config, v string) { c.Datastore = v }},
	{"template", false, func(c *vsphere.Config, v string) { c.Template = v }},
}

// readVCenter reads the vCenter called name from dir (vcenterFiles). A
// value's trailing newlines are dropped, as a Secret written with echo
// holds one.
func readVCenter(name, dir string) (vsphere.Config, error) {
	var c vsphere.Config
	var missing []string
	for _, f := range vcenterFiles {
		b, err := os.ReadFile(filepath.Join(dir, f.name))
		switch {
		case errors.Is(err, os.ErrNotExist) && f.required:
			missing = append(missing, f.name)
			continue
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			return c, fmt.Errorf("vCenter %s: %w", name, err)
		}
		v := string(b)
		if f.name != "ca.crt" {
			v = strings.TrimRight(v, "\r\n")
		}
		f.set(&c, v)
	}
	login := []string{"username", "password"}
	if c.ExtensionKey != "" {
		if c.Username != "" || c.Password != "" {
			return c, fmt.Errorf("vCenter %s: %s holds extensionKey and a username or password: log in by password or by certificate, not both", name, dir)
		}
		login = nil
		cert, err := clientCertificate(dir)
		if err != nil {
			return c, fmt.Errorf("vCenter %s: %w", name, err)
		}
		c.ClientCertificate = cert
	}
	for _, f := range login {
		if _, err := os.Stat(filepath.Join(dir, f)); errors.Is(err, os.ErrNotExist) {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return c, fmt.Errorf("vCenter %s: %s holds no %s", name, dir, strings.Join(missing, ", "))
	}
	if c.Insecure && (len(c.CABundle) > 0 || c.Thumbprint != "") {
		return c, fmt.Errorf("vCenter %s: insecure with ca.crt or thumbprint: choose one", name)
	}
	if c.ExtensionKey != "" {
		return c, nil
	}
	c.Credentials = fileCredentials(filepath.Join(dir, "username"), filepath.Join(dir, "password"))
	return c, nil
}

// fileCredentials reads the username (from the file user, or the value
// fixed when user is a name, not a path) and the password at each login,
// so that a Secret mounted as files and rotated is taken at the next
// login, with no restart: the kubelet updates such files in place.
func fileCredentials(user, password string) func(context.Context) (string, string, error) {
	read := func(path string) (string, error) {
		b, err := os.ReadFile(path)
		return strings.TrimRight(string(b), "\r\n"), err
	}
	return func(context.Context) (string, string, error) {
		name := user
		if filepath.IsAbs(user) || strings.ContainsRune(user, filepath.Separator) {
			var err error
			if name, err = read(user); err != nil {
				return "", "", err
			}
		}
		pw, err := read(password)
		return name, pw, err
	}
}
