package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"strings"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// vcentersSet is the set of the vCenters step.
const vcentersSet = "vcenters-rs"

// westZones are the zones of the second vCenter, "west", as the demo
// gives them to the manager: two of its clusters.
var westZones = []string{
	"west-a:resourcePool=/DC0/host/DC0_C0,vcenter=west",
	"west-b:resourcePool=/DC0/host/DC0_C1,vcenter=west",
}

// playVCenters spreads a set of six over four zones on two vCenters, each
// a simulator with credentials of its own: the first vCenter holds two
// VMs in each of its clusters, west one in each of its, each checked in
// its vCenter over the API, and no VM is in both.
func (s *story) playVCenters(ctx context.Context) error {
	s.set = vcentersSet
	sample := filepath.Join(filepath.Dir(s.sample), "vmreplicaset-vcenters.yaml")
	fmt.Println("\n# A set of 6 over two vCenters with credentials of their own: zone-a and zone-b on the first, west-a and west-b on west")
	if _, err := s.kubectl(ctx, "apply", "-n", s.ns, "-f", sample); err != nil {
		return err
	}
	if _, err := s.settle(ctx, 6); err != nil {
		return err
	}
	for _, vc := range []struct {
		name string
		cfg  vsphere.Config
		want map[string]int
	}{
		{"the first vCenter", s.vc, map[string]int{"DC0_C0": 2, "DC0_C1": 2}},
		{"west", s.west, map[string]int{"DC0_C0": 1, "DC0_C1": 1}},
	} {
		got, err := vmcheck.Spread(ctx, vc.cfg, s.ns)
		if err != nil {
			return err
		}
		if !maps.Equal(got, vc.want) {
			return fmt.Errorf("%s holds the set's VMs per cluster as %v, want %v", vc.name, got, vc.want)
		}
		fmt.Printf("  ✓ checked in %s (%s, user %s): VMs per cluster %v\n", vc.name, vc.cfg.URL, vc.cfg.Username, got)
	}
	out, err := s.kubectl(ctx, "get", "vmreplicaset", "-n", s.ns, vcentersSet, "-o", "wide")
	if err != nil {
		return err
	}
	if want := "zone-a=2 zone-b=2 west-a=1 west-b=1"; !strings.Contains(out, want) {
		return fmt.Errorf("kubectl get vmreplicaset -o wide shows no ZONES %q", want)
	}
	fmt.Println("\n# Delete the set")
	if err := s.deleteSet(ctx, vcentersSet); err != nil {
		return err
	}
	return s.playHealing(ctx)
}
