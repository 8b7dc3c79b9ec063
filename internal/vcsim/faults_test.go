package vcsim_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/replicakit/replicakit/internal/vcsim"
)

// TestFaults_FailsListedMethodsOnly: every listed call fails with
// InvalidState as the client decodes it, changes nothing and is counted;
// other methods are served.
func TestFaults_FailsListedMethodsOnly(t *testing.T) {
	f := &vcsim.Faults{Methods: []string{"CloneVM_Task"}}
	s, c := start(t, f.Serialized)
	ctx := context.Background()
	vm, folder := template(t, c)
	task, err := vm.Clone(ctx, folder, "clone-before", types.VirtualMachineCloneSpec{})
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil || f.Injected() != 0 {
		t.Fatalf("clone before SetProbability: %v, %d injected; want it served", err, f.Injected())
	}
	f.SetProbability(1)

	_, err = vm.Clone(ctx, folder, "clone-0", types.VirtualMachineCloneSpec{})
	if !fault.Is(err, &types.InvalidState{}) {
		t.Fatalf("clone: got %v, want an InvalidState fault", err)
	}
	if got := f.Injected(); got != 1 {
		t.Errorf("Injected() = %d, want 1", got)
	}
	task, err = vm.PowerOff(ctx)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Errorf("power off, not listed: %v", err)
	}
	if got := f.Injected(); got != 1 {
		t.Errorf("Injected() after an unlisted call = %d, want 1", got)
	}
	if names := clones(t, s); !slices.Equal(names, []string{"clone-before"}) {
		t.Errorf("clones %v, want only clone-before: a failed clone left a VM", names)
	}
}

// TestFaults_CountMatchesInventory: with half of the clones failing from
// several goroutines, the clones that exist are exactly those whose call
// succeeded, and the count of injected faults is the rest.
func TestFaults_CountMatchesInventory(t *testing.T) {
	f := &vcsim.Faults{Methods: []string{"CloneVM_Task"}, Seed: 7}
	f.SetProbability(0.5)
	s, c := start(t, f.Serialized)
	ctx := context.Background()
	vm, folder := template(t, c)
	const n = 24
	var (
		mu        sync.Mutex
		succeeded []string
		wg        sync.WaitGroup
	)
	for i := range n {
		wg.Go(func() {
			name := fmt.Sprintf("clone-%02d", i)
			task, err := vm.Clone(ctx, folder, name, types.VirtualMachineCloneSpec{})
			if err == nil {
				err = task.Wait(ctx)
			}
			switch {
			case err == nil:
				mu.Lock()
				succeeded = append(succeeded, name)
				mu.Unlock()
			case !fault.Is(err, &types.InvalidState{}):
				t.Errorf("clone %s: %v", name, err)
			}
		})
	}
	wg.Wait()
	got := clones(t, s)
	if len(got) != len(succeeded) {
		t.Errorf("%d clones in the inventory, %d calls succeeded", len(got), len(succeeded))
	}
	if inj := f.Injected(); inj != int64(n-len(succeeded)) || inj == 0 || inj == n {
		t.Errorf("Injected() = %d with %d of %d clones succeeding; want the rest, and neither none nor all", inj, len(succeeded), n)
	}
}

// clones lists the VMs the tests cloned.
func clones(t *testing.T, s *vcsim.Sim) []string {
	t.Helper()
	cfg := s.Config()
	cfg.Insecure, cfg.CABundle = true, nil
	names, err := vcsim.VMNames(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, "clone-") {
			out = append(out, n)
		}
	}
	return out
}

// TestFaults_RefuseOnePool: clones into a refused resource pool fail
// whatever the probability, clones into another are served, and lifting
// the refusal serves them again.
func TestFaults_RefuseOnePool(t *testing.T) {
	f := &vcsim.Faults{}
	_, c := start(t, f.Serialized)
	ctx := context.Background()
	vm, folder := template(t, c)
	finder := find.NewFinder(c.Client, true)
	dc, err := finder.Datacenter(ctx, "DC0")
	if err != nil {
		t.Fatal(err)
	}
	finder.SetDatacenter(dc)
	pool := func(path string) types.ManagedObjectReference {
		p, err := finder.ResourcePool(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		return p.Reference()
	}
	c0, c1 := pool("/DC0/host/DC0_C0/Resources"), pool("/DC0/host/DC0_C1/Resources")
	clone := func(name string, into types.ManagedObjectReference) error {
		task, err := vm.Clone(ctx, folder, name, types.VirtualMachineCloneSpec{Location: types.VirtualMachineRelocateSpec{Pool: &into}})
		if err == nil {
			err = task.Wait(ctx)
		}
		return err
	}
	lift := f.Refuse("CloneVM_Task", c1)
	if err := clone("into-c1", c1); !fault.Is(err, &types.InvalidState{}) {
		t.Errorf("clone into the refused pool: %v, want an InvalidState fault", err)
	}
	if err := clone("into-c0", c0); err != nil {
		t.Errorf("clone into another pool: %v", err)
	}
	lift()
	if err := clone("into-c1-after", c1); err != nil {
		t.Errorf("clone into the pool after lifting: %v", err)
	}
	if got := f.Injected(); got != 1 {
		t.Errorf("Injected() = %d, want 1", got)
	}
}
