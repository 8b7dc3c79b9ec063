package vcsim_test

import (
	"context"
	"testing"
	"time"

	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// TestAddCluster: a cluster added over the API takes clones, and
// VMClusters reads where each VM runs.
func TestAddCluster(t *testing.T) {
	s, err := vcsim.New(vcsim.Serialized)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.AddCluster(ctx, "DC0_C2"); err != nil {
		t.Fatal(err)
	}
	p, err := vsphere.New(ctx, s.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close(ctx) }()
	owner := vmprovider.Owner{UID: "uid-c"}
	for name, pool := range map[string]string{"in-c0": "/DC0/host/DC0_C0", "in-c2": "/DC0/host/DC0_C2"} {
		spec := vmprovider.Spec{Name: name, Owner: owner, Placement: vmprovider.Placement{ResourcePool: pool}}
		if _, err := p.Create(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	where, err := vcsim.VMClusters(ctx, s.Config())
	if err != nil {
		t.Fatal(err)
	}
	if where["in-c0"] != "DC0_C0" || where["in-c2"] != "DC0_C2" {
		t.Errorf("VMClusters: in-c0 in %q, in-c2 in %q; want DC0_C0, DC0_C2", where["in-c0"], where["in-c2"])
	}
}
