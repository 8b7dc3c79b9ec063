package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/replicakit/replicakit/examples/internal/rollwatch"
	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	"github.com/replicakit/replicakit/internal/vcsim"
)

// hooksSet is the set of the lifecycle hooks step.
const hooksSet = "hooks-rs"

// demoDrain is how long the demo's drainer holds each VM that prepares to
// leave.
const demoDrain = 3 * time.Second

// playHooks shows lifecycle hooks: a set of 4 whose VMs a drainer of the
// demo's own holds for a few seconds before they go, and whose new VMs it
// registers (opens their launch gate) once they are Ready. A scale-down
// and a rollout wait for it, visible in kubectl get vm; every VM leaves
// through a guest shutdown, checked in vCenter; and deleting the set
// drains its VMs first.
func (s *story) playHooks(ctx context.Context) error {
	s.set = hooksSet
	sample := filepath.Join(filepath.Dir(s.sample), "vmreplicaset-hooks.yaml")
	fmt.Println("\n# A set of 4 with a pre-delete hook (drain) and a launch gate (lb), and a drainer of the demo's own that holds each leaving VM", demoDrain)
	d := newDrainer(s.env.Client, s.vc, s.ns, hooksSet, demoDrain)
	dctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); d.run(dctx) }()
	defer func() { stop(); <-done }()
	if _, err := s.kubectl(ctx, "apply", "-n", s.ns, "-f", sample); err != nil {
		return err
	}
	four, err := s.settle(ctx, 4)
	if err != nil {
		return err
	}

	fmt.Println("\n# Scale down to 2: the 2 VMs chosen prepare to leave, and wait for the drainer")
	if _, err := s.kubectl(ctx, "scale", "vmreplicaset", "-n", s.ns, hooksSet, "--replicas=2"); err != nil {
		return err
	}
	if _, err := s.await(ctx, "2 VMs preparing to leave, all 4 still running in vCenter", func(st vmcheck.State) bool {
		return preparing(st) == 2 && len(st.LiveOn) == 4 && len(st.VCenter) == 4
	}); err != nil {
		return err
	}
	if _, err := s.kubectl(ctx, "get", "vm", "-n", s.ns, "-l", "app="+hooksSet); err != nil {
		return err
	}
	two, err := s.settle(ctx, 2)
	if err != nil {
		return err
	}
	gone := without(four.Live, two.Live)
	if err := s.checkLeft(ctx, d, gone); err != nil {
		return err
	}

	fmt.Println("\n# Roll the set onto 1024 MiB: each VM replaced is drained first")
	rolled, err := s.roll(ctx, rollout{patch: `{"spec":{"template":{"spec":{"memoryMiB":1024}}}}`,
		hardware: rollwatch.Hardware{CPUs: 1, MemoryMiB: 1024}, vms: true})
	if err != nil {
		return err
	}
	if err := s.checkLeft(ctx, d, two.Live); err != nil {
		return err
	}

	fmt.Println("\n# Delete the set: its VMs are drained first, then the garbage collector and the operator remove them")
	if err := s.deleteSet(ctx, hooksSet); err != nil {
		return err
	}
	return s.checkLeft(ctx, d, rolled)
}

// checkLeft checks that each of names left as the hooks ask: drained by
// the drainer while it still ran, then shut down through its guest in
// vCenter, not powered off hard.
func (s *story) checkLeft(ctx context.Context, d *drainer, names []string) error {
	if err := d.check(names); err != nil {
		return err
	}
	if err := s.checkShutdowns(ctx, names); err != nil {
		return err
	}
	fmt.Printf("  ✓ checked: %v each drained for %v while still running, then shut down through its guest in vCenter before it was destroyed\n",
		names, demoDrain)
	return nil
}

// checkShutdowns checks in vCenter's events that the VM of each of names
// was shut down through its guest and never powered off hard.
func (s *story) checkShutdowns(ctx context.Context, names []string) error {
	for _, n := range names {
		guest, hard, err := vcsim.PowerOffs(ctx, s.vc, s.vsphereName(n))
		if err != nil {
			return err
		}
		if guest != 1 || hard != 0 {
			return fmt.Errorf("vCenter recorded %d guest shutdowns and %d hard power-offs of %s, want 1 and 0", guest, hard, s.vsphereName(n))
		}
	}
	return nil
}

// preparing is the set's preparingReplicas; -1 before it reports any.
func preparing(st vmcheck.State) int {
	if st.Set == nil || st.Set.Status.PreparingReplicas == nil || st.Set.Status.ObservedGeneration != st.Set.Generation {
		return -1
	}
	return int(*st.Set.Status.PreparingReplicas)
}

// without returns the names of all that are not in some.
func without(all, some []string) []string {
	return slices.DeleteFunc(slices.Clone(all), func(n string) bool { return slices.Contains(some, n) })
}
