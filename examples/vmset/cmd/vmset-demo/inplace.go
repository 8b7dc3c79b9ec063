package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/rollwatch"
	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// playInPlace shows in-place updates on the web set, whose VMs have memory
// hot-add on: its memory raised, each VM takes it where it runs, keeping
// its instance UUID, its address and its guest, checked in vCenter; then
// its CPUs lowered with method InPlaceOnly, which needs the VMs off that
// maxUnavailable 0 keeps on: the rollout holds, and says why.
func (s *story) playInPlace(ctx context.Context, names []string, addrs map[string]string) error {
	before, err := s.identities(ctx)
	if err != nil {
		return err
	}
	offs, err := s.powerOffs(ctx, names)
	if err != nil {
		return err
	}
	var set vmv1.VirtualMachineReplicaSet
	if err := s.env.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: s.set}, &set); err != nil {
		return err
	}
	rev := set.Status.UpdateRevision

	fmt.Println("\n# Raise the web set's memory to 2 GiB in place: its VMs have memory hot-add on, so each takes it while it runs and serves")
	bounds, err := rollwatch.BoundsOf(&set)
	if err != nil {
		return err
	}
	w, err := rollwatch.Start(ctx, s.env.Config, &set, bounds)
	if err != nil {
		return err
	}
	watching := true
	defer func() {
		if watching {
			w.Stop()
		}
	}()
	if _, err := s.kubectl(ctx, "patch", "vmreplicaset", "-n", s.ns, s.set, "--type=merge", "-p", `{"spec":{"template":{"spec":{"memoryMiB":2048}}}}`); err != nil {
		return err
	}
	done, err := s.await(ctx, "the set rolled out on a new revision with the same VirtualMachines", func(st vmcheck.State) bool {
		if st.Set == nil || st.Set.Status.ObservedGeneration != st.Set.Generation || st.Set.Status.UpdateRevision == rev {
			return false
		}
		c := meta.FindStatusCondition(st.Set.Status.Conditions, kube.ConditionRolledOut)
		return st.Settled(len(names)) && slices.Equal(st.Live, names) && st.Set.Status.UpdatedReplicas == int32(len(names)) &&
			c != nil && c.Reason == kube.ReasonRolloutComplete
	})
	if err != nil {
		return err
	}
	watching = false
	if rep := w.Stop(); rep.Breaches > 0 || rep.Gaps > 0 || rep.FewestAvailable != len(names) || rep.MostExisting != len(names) {
		return fmt.Errorf("the independent watch saw %d available VMs at the fewest and %d at the most, want %d and %d (breaches %d, gaps %d: %s)",
			rep.FewestAvailable, rep.MostExisting, len(names), len(names), rep.Breaches, rep.Gaps, strings.Join(rep.First, "; "))
	} else {
		fmt.Printf("  ✓ checked by an independent watch of the VirtualMachines, over %d changes: all %d available throughout, never a VM more\n", rep.Events, len(names))
	}
	if _, err := s.kubectl(ctx, "get", "vm", "-n", s.ns, "-l", "app="+s.set); err != nil {
		return err
	}
	after, err := s.identities(ctx)
	if err != nil {
		return err
	}
	if !maps.Equal(after, before) {
		return fmt.Errorf("the VMs' instance UUIDs and addresses changed: %v, were %v", after, before)
	}
	if err := s.verifyVMs(ctx, names, metav1.ConditionTrue, addrs); err != nil {
		return err
	}
	if err := s.checkHardware(ctx, done.VCenter, rollwatch.Hardware{CPUs: 2, MemoryMiB: 2048}); err != nil {
		return err
	}
	now, err := s.powerOffs(ctx, names)
	if err != nil {
		return err
	}
	if now != offs {
		return fmt.Errorf("vCenter recorded %d power-offs of the set's VMs since the rollout began, want none", now-offs)
	}
	fmt.Printf("  ✓ checked: the same %d VMs, each with its instance UUID and address, on revision %s and annotated %s; vCenter recorded no power-off\n",
		len(names), done.Set.Status.UpdateRevision, kube.AnnotationUpdatedInPlace)

	fmt.Println("\n# Lower the web set's CPUs to 1 with method InPlaceOnly: that needs each VM off, which maxUnavailable 0 does not allow, so the rollout holds and says why")
	rev = done.Set.Status.UpdateRevision
	if _, err := s.kubectl(ctx, "patch", "vmreplicaset", "-n", s.ns, s.set, "--type=merge", "-p",
		`{"spec":{"strategy":{"method":"InPlaceOnly"},"template":{"spec":{"cpus":1}}}}`); err != nil {
		return err
	}
	if _, err := s.await(ctx, "RolledOut held by InPlaceOnly, naming the CPUs lowered", func(st vmcheck.State) bool {
		if st.Set == nil || st.Set.Status.ObservedGeneration != st.Set.Generation || st.Set.Status.UpdateRevision == rev {
			return false
		}
		c := meta.FindStatusCondition(st.Set.Status.Conditions, kube.ConditionRolledOut)
		return c != nil && c.Reason == kube.ReasonRolloutHeld && strings.Contains(c.Message, "InPlaceOnly") &&
			strings.Contains(c.Message, "CPUs lowered from 2 to 1")
	}); err != nil {
		return err
	}
	if _, err := s.kubectl(ctx, "get", "vmrs", "-n", s.ns, s.set, "-o", `jsonpath={.status.conditions[?(@.type=="RolledOut")].message}{"\n"}`); err != nil {
		return err
	}
	held, err := s.identities(ctx)
	if err != nil {
		return err
	}
	if !maps.Equal(held, before) {
		return fmt.Errorf("InPlaceOnly replaced VMs: %v, were %v", held, before)
	}
	if err := s.checkHardware(ctx, done.VCenter, rollwatch.Hardware{CPUs: 2, MemoryMiB: 2048}); err != nil {
		return err
	}
	fmt.Println("  ✓ checked: no VM replaced or changed; vCenter still shows 2 CPUs each")
	return nil
}

// identities maps the set's live VirtualMachines to their VMs' instance
// UUIDs and addresses.
func (s *story) identities(ctx context.Context) (map[string]string, error) {
	var l vmv1.VirtualMachineList
	if err := s.env.Client.List(ctx, &l, client.InNamespace(s.ns), client.MatchingLabels{"app": s.set}); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, vm := range l.Items {
		if vm.DeletionTimestamp == nil {
			out[vm.Name] = vm.Status.InstanceUUID + " " + strings.Join(vm.Status.Addresses, ",")
		}
	}
	return out, nil
}

// powerOffs counts the power-offs, through the guest or hard, vCenter
// recorded of the VMs of names.
func (s *story) powerOffs(ctx context.Context, names []string) (int, error) {
	n := 0
	for _, name := range names {
		guest, hard, err := vcsim.PowerOffs(ctx, s.vc, s.vsphereName(name))
		if err != nil {
			return 0, err
		}
		n += guest + hard
	}
	return n, nil
}
