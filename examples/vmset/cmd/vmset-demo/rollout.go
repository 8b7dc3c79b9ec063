package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/rollwatch"
	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// rollout is a change of the current set's template to follow.
type rollout struct {
	// patch is the merge patch kubectl applies to the set.
	patch string
	// hardware is what every VM must have in vCenter afterwards.
	hardware rollwatch.Hardware
	// guests, when not nil, are the addresses the guests of the set's VMs
	// reported, by VirtualMachine name: the set is ready by address, and
	// the guest of each new VM reports the next one.
	guests map[string]string
	// vms shows the VMs with kubectl at every step, not only at the end.
	vms bool
}

// roll applies r to the set and follows the rollout to its end: it shows
// the set (UP-TO-DATE) and, with r.vms, its VMs (REVISION) each time the
// set reports a step, and stands in for the guests of new VMs, while an
// independent watch of the VirtualMachines checks every change against
// the bounds of the set's strategy. Then it checks that every VM is new,
// on the new revision, and in vCenter with r's hardware. It returns the
// new VMs' names.
func (s *story) roll(ctx context.Context, r rollout) ([]string, error) {
	var set vmv1.VirtualMachineReplicaSet
	if err := s.env.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: s.set}, &set); err != nil {
		return nil, err
	}
	before, err := vmcheck.Observe(ctx, s.env.Client, s.vc, s.ns, s.set)
	if err != nil {
		return nil, err
	}
	bounds, err := rollwatch.BoundsOf(&set)
	if err != nil {
		return nil, err
	}
	w, err := rollwatch.Start(ctx, s.env.Config, &set, bounds)
	if err != nil {
		return nil, err
	}
	watching := true
	defer func() {
		if watching {
			w.Stop()
		}
	}()
	if _, err := s.kubectl(ctx, "patch", "vmreplicaset", "-n", s.ns, s.set, "--type=merge", "-p", r.patch); err != nil {
		return nil, err
	}
	fmt.Printf("  an independent watch of the VirtualMachines checks every change: %s\n", bounds)

	n := bounds.Desired
	shown := ""
	var done vmcheck.State
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-s.dead:
			return false, errors.New("vmset-manager exited")
		default:
		}
		st, err := vmcheck.Observe(ctx, s.env.Client, s.vc, s.ns, s.set)
		if err != nil || st.Set == nil || st.Set.Status.ObservedGeneration != st.Set.Generation {
			return false, nil
		}
		rev, status := st.Set.Status.UpdateRevision, st.Set.Status
		if rev == set.Status.UpdateRevision {
			return false, nil // not yet the new template's revision
		}
		if complete(st, n, rev, before.Live) {
			done = st
			return true, nil
		}
		if step := fmt.Sprint(status.Replicas, status.UpdatedReplicas, status.ReadyReplicas); step != shown && (status.Replicas != int32(n) || status.UpdatedReplicas != int32(n)) {
			shown = step
			if err := s.showRollout(ctx, r.vms); err != nil {
				return false, err
			}
		}
		return false, s.reportGuests(ctx, r.guests, rev)
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for the rollout of %s to end: %w", s.set, err)
	}
	rev := done.Set.Status.UpdateRevision
	fmt.Printf("  ✓ checked: %d VMs, none of them one of the %d before, all on revision %s and available, the set reporting RolloutComplete; vCenter holds %v\n",
		n, len(before.Live), rev, done.VCenter)
	if err := s.checkShown(ctx, n, rev); err != nil {
		return nil, err
	}

	watching = false
	rep := w.Stop()
	if rep.Breaches > 0 || rep.Gaps > 0 {
		return nil, fmt.Errorf("the independent watch saw the bounds broken after %d of %d changes (%s), and lost track %d times: %s",
			rep.Breaches, rep.Events, bounds, rep.Gaps, strings.Join(rep.First, "; "))
	}
	fmt.Printf("  ✓ checked by the independent watch, over %d changes: available VMs never below %d (the fewest was %d), VMs never above %d counting those being deleted (the most was %d)\n",
		rep.Events, bounds.MinAvailable(), rep.FewestAvailable, bounds.MaxExisting(), rep.MostExisting)
	return done.Live, s.checkHardware(ctx, done.VCenter, r.hardware)
}

// complete reports whether st shows the rollout to rev done: n VMs settled
// on both sides, none of them one of old, all labelled rev, and the set
// saying so.
func complete(st vmcheck.State, n int, rev string, old []string) bool {
	status := st.Set.Status
	if !st.Settled(n) || status.UpdatedReplicas != int32(n) || status.UpdatedAvailableReplicas != int32(n) {
		return false
	}
	c := meta.FindStatusCondition(status.Conditions, kube.ConditionRolledOut)
	if c == nil || c.Reason != kube.ReasonRolloutComplete || c.ObservedGeneration != st.Set.Generation {
		return false
	}
	return !slices.ContainsFunc(st.Live, func(name string) bool { return slices.Contains(old, name) })
}

// showRollout shows the set, wide when it has zones, and with vms its VMs.
func (s *story) showRollout(ctx context.Context, vms bool) error {
	if _, err := s.kubectl(ctx, "get", "vmrs", "-n", s.ns, s.set); err != nil {
		return err
	}
	if !vms {
		return nil
	}
	_, err := s.kubectl(ctx, "get", "vm", "-n", s.ns, "-l", "app="+s.set)
	return err
}

// reportGuests stands in for the guests of the set's new VMs when guests
// is not nil: each VM on revision rev that vCenter has powered on and
// whose guest has not reported yet reports the next address.
func (s *story) reportGuests(ctx context.Context, guests map[string]string, rev string) error {
	if guests == nil {
		return nil
	}
	var l vmv1.VirtualMachineList
	if err := s.env.Client.List(ctx, &l, client.InNamespace(s.ns), client.MatchingLabels{"app": s.set, kube.RevisionLabel: rev}); err != nil {
		return nil // read again at the next poll
	}
	for _, vm := range l.Items {
		if vm.DeletionTimestamp != nil || vm.Status.PowerState != string(vmv1.PoweredOn) || guests[vm.Name] != "" {
			continue
		}
		addr := fmt.Sprintf("10.20.0.%d", 10+len(guests))
		name := controllers.VSphereName(&vm)
		if err := vcsim.ReportGuest(ctx, s.vc, name, addr); err != nil {
			return err
		}
		guests[vm.Name] = addr
		fmt.Printf("  guest of %s reports %s\n", name, addr)
	}
	return nil
}

// checkShown shows the set and its VMs with kubectl and checks UP-TO-DATE
// is n and every VM's REVISION is rev.
func (s *story) checkShown(ctx context.Context, n int, rev string) error {
	out, err := s.kubectl(ctx, "get", "vmrs", "-n", s.ns, s.set)
	if err != nil {
		return err
	}
	if rows := table(out); len(rows) != 1 || rows[0]["UP-TO-DATE"] != fmt.Sprint(n) {
		return fmt.Errorf("kubectl get vmrs shows %v, want UP-TO-DATE %d", rows, n)
	}
	out, err = s.kubectl(ctx, "get", "vm", "-n", s.ns, "-l", "app="+s.set)
	if err != nil {
		return err
	}
	rows := table(out)
	if len(rows) != n || slices.ContainsFunc(rows, func(r map[string]string) bool { return r["REVISION"] != rev }) {
		return fmt.Errorf("kubectl get vm shows %v, want %d VMs of REVISION %s", rows, n, rev)
	}
	return nil
}

// checkHardware reads the set's VMs' hardware from vCenter over the API
// and checks that they are exactly names, each with want.
func (s *story) checkHardware(ctx context.Context, names []string, want rollwatch.Hardware) error {
	got, err := rollwatch.ReadHardware(ctx, s.vc, s.ns+"-"+s.set+"-")
	if err != nil {
		return err
	}
	if have := slices.Sorted(maps.Keys(got)); !slices.Equal(have, names) {
		return fmt.Errorf("vCenter holds the set's VMs %v, want %v", have, names)
	}
	for name, hw := range got {
		if hw != want {
			return fmt.Errorf("vCenter says %s has %d CPUs and %d MiB, want %d and %d", name, hw.CPUs, hw.MemoryMiB, want.CPUs, want.MemoryMiB)
		}
	}
	cpus := "CPUs"
	if want.CPUs == 1 {
		cpus = "CPU"
	}
	fmt.Printf("  ✓ checked in vCenter: each of the %d VMs has %d %s and %d MiB of memory\n", len(names), want.CPUs, cpus, want.MemoryMiB)
	return nil
}
