package procs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// VCenter is a running vcsimd.
type VCenter struct {
	// Env is the managers' vCenter environment (VSPHERE_*=... entries),
	// read from the vsphere.env vcsimd wrote.
	Env []string
	// Config reaches the simulator as the managers do (its CA, its
	// credentials), for checks over the vSphere API.
	Config vsphere.Config
	// Control is the base URL of vcsimd's control endpoint.
	Control string

	p *process
}

// StartVCenter starts vcsimd with its files in dir and waits until it
// answers; args are vcsimd's own flags, such as -fault-rate.
func StartVCenter(ctx context.Context, bin, dir string, args ...string) (*VCenter, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p, err := start(bin, filepath.Join(dir, "vcsimd.log"), nil, append([]string{"-dir", dir}, args...)...)
	if err != nil {
		return nil, err
	}
	envFile := filepath.Join(dir, "vsphere.env")
	if err := p.waitFor("serving", 60*time.Second, func() bool { _, err := os.Stat(envFile); return err == nil }); err != nil {
		return nil, err
	}
	v := &VCenter{p: p}
	if err := v.read(ctx, dir); err != nil {
		return nil, errors.Join(err, p.stop(10*time.Second))
	}
	return v, nil
}

// read reads the files vcsimd wrote into dir and logs in once.
func (v *VCenter) read(ctx context.Context, dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "vsphere.env"))
	if err != nil {
		return err
	}
	v.Env = strings.Fields(string(b))
	if v.Config, err = vcsim.ReadEnvFile(filepath.Join(dir, "govc.env")); err != nil {
		return err
	}
	for _, kv := range v.Env {
		k, val, _ := strings.Cut(kv, "=")
		switch k {
		case "VSPHERE_FOLDER":
			v.Config.Folder = val
		case "VSPHERE_RESOURCE_POOL":
			v.Config.ResourcePool = val
		case "VSPHERE_DATASTORE":
			v.Config.Datastore = val
		case "VSPHERE_TEMPLATE":
			v.Config.Template = val
		}
	}
	c, err := os.ReadFile(filepath.Join(dir, "control"))
	if err != nil {
		return err
	}
	v.Control = strings.TrimSpace(string(c))
	if _, err := vcsim.VMNames(ctx, v.Config); err != nil {
		return fmt.Errorf("vcsimd answers no login: %w", err)
	}
	return nil
}

// SetFaultRate makes calls of vcsimd's fault methods fail with
// probability p from now on.
func (v *VCenter) SetFaultRate(ctx context.Context, p float64) error {
	return v.call(ctx, http.MethodPut, "/faults?rate="+url.QueryEscape(strconv.FormatFloat(p, 'g', -1, 64)))
}

// Refuse makes vcsimd refuse every call of method (such as
// "CloneVM_Task") that names the resource pool at path (a cluster's is
// its path and "/Resources"), a zone outage, until lift is called.
func (v *VCenter) Refuse(ctx context.Context, method, pool string) (lift func(context.Context) error, err error) {
	q := "/refuse?method=" + url.QueryEscape(method) + "&pool=" + url.QueryEscape(pool)
	if err := v.call(ctx, http.MethodPut, q); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error { return v.call(ctx, http.MethodDelete, q) }, nil
}

// call sends a request without a body to vcsimd's control endpoint.
func (v *VCenter) call(ctx context.Context, method, pathQuery string) error {
	req, err := http.NewRequestWithContext(ctx, method, v.Control+pathQuery, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = res.Body.Close() }()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		return fmt.Errorf("vcsimd: %s %s: %s: %s", method, pathQuery, res.Status, strings.TrimSpace(string(b)))
	}
	return nil
}

// Injected returns how many calls vcsimd has failed on purpose.
func (v *VCenter) Injected(ctx context.Context) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.Control+"/calls", nil)
	if err != nil {
		return 0, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = res.Body.Close() }()
	var body struct {
		Injected int64 `json:"injected"`
	}
	return body.Injected, json.NewDecoder(res.Body).Decode(&body)
}

// PID is vcsimd's process ID.
func (v *VCenter) PID() int { return v.p.pid() }

// Stop stops vcsimd.
func (v *VCenter) Stop() error { return v.p.stop(10 * time.Second) }
