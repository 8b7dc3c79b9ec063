package vsphere_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	simfaults "github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// TestCloudInit_GuestInfo: with the GuestInfo transport, a clone of a
// template that carries vApp properties is asked to drop them
// (VAppConfigRemoved, so that cloud-init does not read their OVF
// environment first) and carries no guest customization; its VM holds
// cloud-init's user data and metadata in guestinfo.userdata and
// guestinfo.metadata, gzipped and base64-encoded as their .encoding keys
// say, which decode to what the Spec gave.
func TestCloudInit_GuestInfo(t *testing.T) {
	faults := &simfaults.Faults{}
	sim := vcsimtest.StartFaulty(t, faults)
	cfg := sim.Config()
	cfg.CloudInitTransport = vsphere.CloudInitGuestInfo
	ctx := context.Background()
	p, err := vsphere.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	tmpl, _ := templateVM(t, sim)
	run(t, "give the template a vApp property", func(ctx context.Context) (*object.Task, error) {
		return tmpl.Reconfigure(ctx, types.VirtualMachineConfigSpec{VAppConfig: &types.VmConfigSpec{
			Property: []types.VAppPropertySpec{{
				ArrayUpdateSpec: types.ArrayUpdateSpec{Operation: types.ArrayUpdateOperationAdd},
				Info:            &types.VAppPropertyInfo{Key: 1, Id: "user-data", Type: "string", DefaultValue: "from the OVF"},
			}},
		}, ExtraConfig: []types.BaseOptionValue{ // a template's own cloud-init data, a Packer build's say
			&types.OptionValue{Key: "guestinfo.userdata", Value: "I2Nsb3VkLWNvbmZpZwo="},
			&types.OptionValue{Key: "guestinfo.userdata.encoding", Value: "base64"},
			&types.OptionValue{Key: "guestinfo.vendordata", Value: "vendor"},
		}})
	})

	ci := vmprovider.CloudInit{UserData: "#cloud-config\nruncmd: [echo hi]\n", MetaData: "local-hostname: web-0\n"}
	clones := faults.Record("CloneVM_Task")
	if _, err := p.Create(ctx, vmprovider.Spec{Name: "web-0", Owner: ownerA, CloudInit: &ci}); err != nil {
		t.Fatal(err)
	}
	clones.Stop()
	reqs, err := clones.Requests()
	if err != nil || len(reqs) != 1 {
		t.Fatalf("recorded clones %v, %v; want one", reqs, err)
	}
	spec := reqs[0].(*types.CloneVM_Task).Spec
	if spec.Customization != nil {
		t.Errorf("the clone carries a guest customization %+v, want none", spec.Customization)
	}
	if r := spec.Config.VAppConfigRemoved; r == nil || !*r {
		t.Errorf("the clone's config.vAppConfigRemoved = %v, want true", r)
	}

	want := map[string]string{
		"guestinfo.userdata": ci.UserData, "guestinfo.userdata.encoding": "gzip+base64",
		"guestinfo.metadata": ci.MetaData, "guestinfo.metadata.encoding": "gzip+base64",
	}
	if diff := cmp.Diff(want, guestInfo(t, sim, tmpl, "web-0")); diff != "" {
		t.Errorf("web-0's guestinfo keys, decoded (-want +got):\n%s", diff)
	}

	// Metadata only: none of the template's user data or vendor data is
	// left for cloud-init to run. vCenter copies a template's ExtraConfig
	// into its clone, and takes an empty value as a key's removal; the
	// simulator keeps only the spec's, so the request shows the removal.
	metaOnly := vmprovider.CloudInit{MetaData: "local-hostname: web-1\n"}
	clones = faults.Record("CloneVM_Task")
	if _, err := p.Create(ctx, vmprovider.Spec{Name: "web-1", Owner: ownerA, CloudInit: &metaOnly}); err != nil {
		t.Fatal(err)
	}
	clones.Stop()
	if reqs, err = clones.Requests(); err != nil || len(reqs) != 1 {
		t.Fatalf("recorded clones %v, %v; want one", reqs, err)
	}
	sent := map[string]string{}
	for _, o := range reqs[0].(*types.CloneVM_Task).Spec.Config.ExtraConfig {
		if v := o.GetOptionValue(); strings.HasPrefix(v.Key, "guestinfo.") && !strings.HasPrefix(v.Key, "guestinfo.metadata") {
			sent[v.Key], _ = v.Value.(string)
		}
	}
	removed := map[string]string{"guestinfo.userdata": "", "guestinfo.userdata.encoding": "", "guestinfo.vendordata": "", "guestinfo.vendordata.encoding": ""}
	if diff := cmp.Diff(removed, sent); diff != "" {
		t.Errorf("web-1's clone: the template's user and vendor data not removed (-want +got):\n%s", diff)
	}
	want = map[string]string{"guestinfo.metadata": metaOnly.MetaData, "guestinfo.metadata.encoding": "gzip+base64"}
	if diff := cmp.Diff(want, guestInfo(t, sim, tmpl, "web-1")); diff != "" {
		t.Errorf("web-1's guestinfo keys, decoded (-want +got):\n%s", diff)
	}
}

// guestInfo returns the guestinfo keys of the VM called name, the user
// data and metadata decoded.
func guestInfo(t *testing.T, sim *vcsimtest.Sim, any *object.VirtualMachine, name string) map[string]string {
	t.Helper()
	var m mo.VirtualMachine
	vm := object.NewVirtualMachine(any.Client(), mustRef(t, sim, name))
	if err := vm.Properties(context.Background(), vm.Reference(), []string{"config.extraConfig"}, &m); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, o := range m.Config.ExtraConfig {
		if v := o.GetOptionValue(); strings.HasPrefix(v.Key, "guestinfo.") {
			got[v.Key], _ = v.Value.(string)
		}
	}
	for _, k := range []string{"guestinfo.userdata", "guestinfo.metadata"} {
		if got[k] != "" {
			got[k] = gunzipBase64(t, got[k])
		}
	}
	return got
}

// TestCloudInit_TransportChecked: a transport New does not know is a
// configuration error.
func TestCloudInit_TransportChecked(t *testing.T) {
	sim := vcsimtest.Start(t)
	cfg := sim.Config()
	cfg.CloudInitTransport = "OVF"
	if _, err := vsphere.New(context.Background(), cfg); !errors.Is(err, vsphere.ErrConfig) {
		t.Fatalf("New with CloudInitTransport %q = %v, want ErrConfig", cfg.CloudInitTransport, err)
	}
}

// gunzipBase64 decodes a gzip+base64 guestinfo value.
func gunzipBase64(t *testing.T, s string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
