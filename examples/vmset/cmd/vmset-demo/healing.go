package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// healingSet is the set of the self-healing step.
const healingSet = "healing-rs"

// The demo's windows: short, so the step takes a minute; the start-up
// window still leaves a new VM far more time than the simulator needs.
const (
	demoUnhealthyWindow = 5 * time.Second
	demoStartupWindow   = 30 * time.Second
)

// playHealing shows self-healing: in a set of 6, one guest hangs for good
// (its heartbeat turns red and stays so): its VM is reset in vCenter once
// the unhealthy window ends, and replaced once the reset's start-up window
// ends without it coming back. Then 4 of the 6 hang at once, more than
// the storm guard's 40%: nothing is reset or replaced, and the set says
// why; they come back by themselves, and not one VM was lost.
func (s *story) playHealing(ctx context.Context) error {
	s.set = healingSet
	sample := filepath.Join(filepath.Dir(s.sample), "vmreplicaset-healing.yaml")
	fmt.Println("\n# A set that heals itself (spec.remediation: {}, the safe defaults), scaled to 6, with windows of seconds for the demo")
	if _, err := s.kubectl(ctx, "apply", "-n", s.ns, "-f", sample); err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"spec":{"replicas":6,"remediation":{"unhealthyWindow":"%v","startupWindow":"%v"}}}`, demoUnhealthyWindow, demoStartupWindow)
	if _, err := s.kubectl(ctx, "patch", "vmreplicaset", "-n", s.ns, healingSet, "--type=merge", "-p", patch); err != nil {
		return err
	}
	six, err := s.healthy(ctx, 6)
	if err != nil {
		return err
	}

	hung := six.Live[0]
	fmt.Printf("\n# The guest of %s hangs: its heartbeat turns red and stays red, whatever is done to the VM\n", hung)
	if err := vcsim.SetHeartbeat(ctx, s.vc, s.vsphereName(hung), vmprovider.HeartbeatRed); err != nil {
		return err
	}
	if _, err := s.await(ctx, hung+" unhealthy (HeartbeatRed) and counted so by the set", func(st vmcheck.State) bool {
		return unhealthy(st) == 1 && healthReason(ctx, s, hung) == vmprovider.ReasonHeartbeatRed
	}); err != nil {
		return err
	}
	if _, err := s.kubectl(ctx, "get", "vm", "-n", s.ns, "-l", "app="+healingSet, "-o", "wide"); err != nil {
		return err
	}
	fmt.Printf("  (%v later, the unhealthy window, the operator resets the VM in vCenter)\n", demoUnhealthyWindow)
	if err := s.awaitPowerOns(ctx, hung, 2); err != nil {
		return err
	}
	fmt.Printf("  ✓ checked in vCenter: %s was reset (powered on a second time)\n", s.vsphereName(hung))
	fmt.Printf("  (the guest stays hung: %v after the reset, the start-up window, the operator replaces the VM)\n", demoStartupWindow)
	healed, err := s.await(ctx, fmt.Sprintf("%s gone from Kubernetes and vCenter, 6 VMs again", hung), func(st vmcheck.State) bool {
		return !slices.Contains(st.Live, hung) && !slices.Contains(st.VCenter, s.vsphereName(hung)) && st.Settled(6) && unhealthy(st) == 0
	})
	if err != nil {
		return err
	}
	if _, err := s.kubectl(ctx, "get", "events", "-n", s.ns, "--field-selector", "involvedObject.name="+healingSet+",reason=Remediating"); err != nil {
		return err
	}
	if err := s.getSet(ctx, 6, false); err != nil {
		return err
	}
	return s.playStorm(ctx, healed.Live)
}

// playStorm hangs 4 of the set's 6 VMs at once, shows that nothing is
// remediated while more are unhealthy than maxUnhealthy allows, and lets
// them come back.
func (s *story) playStorm(ctx context.Context, live []string) error {
	storm := live[:4]
	fmt.Printf("\n# 4 of the 6 guests hang at once (%v): a fault outside the VMs, which no reset or clone would mend\n", storm)
	ons := map[string]int{}
	for _, name := range storm {
		n, err := vcsim.PowerOns(ctx, s.vc, s.vsphereName(name))
		if err != nil {
			return err
		}
		ons[name] = n
		if err := vcsim.SetHeartbeat(ctx, s.vc, s.vsphereName(name), vmprovider.HeartbeatRed); err != nil {
			return err
		}
	}
	held, err := s.await(ctx, "4 unhealthy, remediation held: TooManyUnhealthy", func(st vmcheck.State) bool {
		c := remediationAllowed(st)
		return unhealthy(st) == 4 && c != nil && c.Status == "False" && c.Reason == replicaset.HoldTooManyUnhealthy.String()
	})
	if err != nil {
		return err
	}
	fmt.Printf("  the set's RemediationAllowed condition: %s\n", remediationAllowed(held).Message)
	hold := 3 * demoUnhealthyWindow
	fmt.Printf("  (for %v, three unhealthy windows, nothing may be reset or replaced)\n", hold)
	deadline := time.Now().Add(hold)
	for time.Now().Before(deadline) {
		st, err := vmcheck.ObserveAll(ctx, s.env.Client, []vsphere.Config{s.vc, s.west}, s.ns, s.set)
		if err != nil {
			return err
		}
		if !slices.Equal(st.Live, live) || len(st.Deleting) > 0 || !slices.Equal(st.Want, st.VCenter) {
			return fmt.Errorf("in the storm the set changed its VMs: live %v (was %v), deleting %v", st.Live, live, st.Deleting)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	for _, name := range storm {
		n, err := vcsim.PowerOns(ctx, s.vc, s.vsphereName(name))
		if err != nil {
			return err
		}
		if n != ons[name] {
			return fmt.Errorf("in the storm %s was powered on %d times more: reset", name, n-ons[name])
		}
	}
	fmt.Println("  ✓ checked in vCenter: none of the 6 was reset, replaced or destroyed")
	if _, err := s.kubectl(ctx, "get", "vmreplicaset", "-n", s.ns, healingSet); err != nil {
		return err
	}

	fmt.Println("\n# The fault passes: the 4 guests answer again")
	for _, name := range storm {
		if err := vcsim.SetHeartbeat(ctx, s.vc, s.vsphereName(name), vmprovider.HeartbeatGreen); err != nil {
			return err
		}
	}
	after, err := s.healthy(ctx, 6)
	if err != nil {
		return err
	}
	if !slices.Equal(after.Live, live) {
		return fmt.Errorf("after the storm the set holds %v, want the same VMs %v", after.Live, live)
	}
	fmt.Println("  ✓ checked: the same 6 VMs, nothing lost")
	if err := s.getSet(ctx, 6, false); err != nil {
		return err
	}
	fmt.Println("\n# Delete the set")
	if err := s.deleteSet(ctx, healingSet); err != nil {
		return err
	}
	return s.playHooks(ctx)
}

// healthy waits until n VMs are settled on both sides, each healthy, and
// the set counts none unhealthy and allows remediation.
func (s *story) healthy(ctx context.Context, n int) (vmcheck.State, error) {
	return s.await(ctx, fmt.Sprintf("%d VMs settled and healthy, remediation allowed", n), func(st vmcheck.State) bool {
		c := remediationAllowed(st)
		return st.Settled(n) && unhealthy(st) == 0 && c != nil && c.Status == "True"
	})
}

// awaitPowerOns waits until vCenter has powered the VM of the
// VirtualMachine name on want times.
func (s *story) awaitPowerOns(ctx context.Context, name string, want int) error {
	var got int
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, last = vcsim.PowerOns(ctx, s.vc, s.vsphereName(name))
		return last == nil && got >= want, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s to be powered on %d times in vCenter: %w (seen %d, last error %v)", name, want, err, got, last) //nolint:errorlint // last is often nil
	}
	return nil
}

// vsphereName is the vSphere name of the namespace's VirtualMachine name.
func (s *story) vsphereName(name string) string { return s.ns + "-" + name }

// unhealthy is the set's unhealthyReplicas; -1 before it reports any.
func unhealthy(st vmcheck.State) int {
	if st.Set == nil || st.Set.Status.UnhealthyReplicas == nil || st.Set.Status.ObservedGeneration != st.Set.Generation {
		return -1
	}
	return int(*st.Set.Status.UnhealthyReplicas)
}

// remediationAllowed is the set's RemediationAllowed condition, or nil.
func remediationAllowed(st vmcheck.State) *metav1.Condition {
	if st.Set == nil {
		return nil
	}
	return meta.FindStatusCondition(st.Set.Status.Conditions, kube.ConditionRemediationAllowed)
}

// healthReason is the reason of the VirtualMachine name's Healthy
// condition, "" when it has none or cannot be read.
func healthReason(ctx context.Context, s *story, name string) string {
	var vm vmv1.VirtualMachine
	if err := s.env.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &vm); err != nil {
		return ""
	}
	if c := meta.FindStatusCondition(vm.Status.Conditions, controllers.ConditionHealthy); c != nil && c.Status == "False" {
		return c.Reason
	}
	return ""
}
