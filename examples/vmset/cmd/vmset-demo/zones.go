package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/replicakit/replicakit/examples/internal/rollwatch"
	"github.com/replicakit/replicakit/examples/internal/vmcheck"
)

// spreadSet is the set of the zones step.
const spreadSet = "spread-rs"

// playZones spreads a set over the three zones of the embedded simulator,
// one per cluster: six VMs land two per cluster, scaling to four leaves
// 2/1/1, and rolling the four onto more memory keeps 2/1/1, each checked
// in vCenter over the API.
func (s *story) playZones(ctx context.Context) error {
	s.set = spreadSet
	sample := filepath.Join(filepath.Dir(s.sample), "vmreplicaset-zones.yaml")
	fmt.Println("\n# A set of 6 spread over zones zone-a, zone-b and zone-c: clusters DC0_C0, DC0_C1 and DC0_C2")
	if _, err := s.kubectl(ctx, "apply", "-n", s.ns, "-f", sample); err != nil {
		return err
	}
	if _, err := s.settle(ctx, 6); err != nil {
		return err
	}
	if err := s.checkSpread(ctx, map[string]int{"DC0_C0": 2, "DC0_C1": 2, "DC0_C2": 2}, "zone-a=2 zone-b=2 zone-c=2"); err != nil {
		return err
	}

	fmt.Println("\n# Scale down to 4: the zones with the most lose one each")
	if _, err := s.kubectl(ctx, "scale", "vmreplicaset", "-n", s.ns, spreadSet, "--replicas=4"); err != nil {
		return err
	}
	if _, err := s.settle(ctx, 4); err != nil {
		return err
	}
	if err := s.checkSpread(ctx, map[string]int{"DC0_C0": 2, "DC0_C1": 1, "DC0_C2": 1}, "zone-a=2 zone-b=1 zone-c=1"); err != nil {
		return err
	}
	if _, err := s.kubectl(ctx, "get", "vm", "-n", s.ns, "-l", "app="+spreadSet); err != nil {
		return err
	}

	fmt.Println("\n# Roll the spread set onto 2 GiB of memory: each new VM goes where an old one leaves, and the zones stay 2/1/1")
	if _, err := s.roll(ctx, rollout{
		patch:    `{"spec":{"template":{"spec":{"memoryMiB":2048}}}}`,
		hardware: rollwatch.Hardware{CPUs: 1, MemoryMiB: 2048},
	}); err != nil {
		return err
	}
	if err := s.checkSpread(ctx, map[string]int{"DC0_C0": 2, "DC0_C1": 1, "DC0_C2": 1}, "zone-a=2 zone-b=1 zone-c=1"); err != nil {
		return err
	}

	fmt.Println("\n# Delete the spread set")
	if err := s.deleteSet(ctx, spreadSet); err != nil {
		return err
	}
	return s.playVCenters(ctx)
}

// checkSpread reads from vCenter, over the API, which cluster each of the
// namespace's VMs runs in and checks the counts; then shows the set with
// kubectl -o wide and checks its ZONES column.
func (s *story) checkSpread(ctx context.Context, clusters map[string]int, zones string) error {
	got, err := vmcheck.Spread(ctx, s.vc, s.ns)
	if err != nil {
		return err
	}
	if !maps.Equal(got, clusters) {
		return fmt.Errorf("vCenter holds the set's VMs per cluster as %v, want %v", got, clusters)
	}
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(got)) {
		parts = append(parts, fmt.Sprintf("%s=%d", c, got[c]))
	}
	fmt.Printf("  ✓ checked in vCenter: VMs per cluster %s\n", strings.Join(parts, " "))
	out, err := s.kubectl(ctx, "get", "vmreplicaset", "-n", s.ns, spreadSet, "-o", "wide")
	if err != nil {
		return err
	}
	if !strings.Contains(out, zones) {
		return fmt.Errorf("kubectl get vmreplicaset -o wide shows no ZONES %q", zones)
	}
	return nil
}
