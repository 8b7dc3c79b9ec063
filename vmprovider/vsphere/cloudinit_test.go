package vsphere_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"io"
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

	var m mo.VirtualMachine
	vm := object.NewVirtualMachine(tmpl.Client(), mustRef(t, sim, "web-0"))
	if err := vm.Properties(ctx, vm.Reference(), []string{"config.extraConfig"}, &m); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, o := range m.Config.ExtraConfig {
		if v := o.GetOptionValue(); len(v.Key) > len("guestinfo.") && v.Key[:len("guestinfo.")] == "guestinfo." {
			got[v.Key], _ = v.Value.(string)
		}
	}
	for _, k := range []string{"guestinfo.userdata", "guestinfo.metadata"} {
		if got[k] != "" {
			got[k] = gunzipBase64(t, got[k])
		}
	}
	want := map[string]string{
		"guestinfo.userdata": ci.UserData, "guestinfo.userdata.encoding": "gzip+base64",
		"guestinfo.metadata": ci.MetaData, "guestinfo.metadata.encoding": "gzip+base64",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the VM's guestinfo keys, decoded (-want +got):\n%s", diff)
	}
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
