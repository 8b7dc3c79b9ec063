package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/rollwatch"
	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/internal/vcsim"
)

// webSet is the set of the guests step.
const webSet = "web-rs"

// playGuests shows readiness by address: the web set's VMs are on but not
// ready until their guests report addresses, and ready once they do. Then
// it rolls the set onto more CPUs and memory, the guest of each new VM
// reporting its address as it comes up, and updates it in place
// (playInPlace).
func (s *story) playGuests(ctx context.Context) error {
	s.set = webSet
	sample := filepath.Join(filepath.Dir(s.sample), "vmreplicaset-web.yaml")
	fmt.Println("\n# A set of 2 web VMs on a network, customized by cloud-init, ready once their guests have an address")
	if _, err := s.kubectl(ctx, "apply", "-n", s.ns, "-f", sample); err != nil {
		return err
	}
	on, err := s.await(ctx, "2 VMs powered on and in vCenter, none ready: no guest has an address yet", func(st vmcheck.State) bool {
		return len(st.LiveOn) == 2 && slices.Equal(st.Want, st.VCenter) && st.Set != nil &&
			st.Set.Status.Replicas == 2 && st.Set.Status.ReadyReplicas == 0 && st.Set.Status.ObservedGeneration == st.Set.Generation
	})
	if err != nil {
		return err
	}
	if err := s.checkVMs(ctx, on.Live, metav1.ConditionFalse, nil); err != nil {
		return err
	}

	fmt.Println("\n# The guests boot and lease addresses (the simulator has no guests or DHCP: the demo reports one per VM over the vSphere API)")
	addrs := map[string]string{}
	for i, name := range on.Live {
		addrs[name] = fmt.Sprintf("10.20.0.%d", 10+i)
		if err := vcsim.ReportGuest(ctx, s.vc, s.ns+"-"+name, addrs[name]); err != nil {
			return err
		}
		fmt.Printf("  guest of %s-%s reports %s\n", s.ns, name, addrs[name])
	}
	if _, err := s.settle(ctx, 2); err != nil {
		return err
	}
	if err := s.getSet(ctx, 2, false); err != nil {
		return err
	}
	if err := s.checkVMs(ctx, on.Live, metav1.ConditionTrue, addrs); err != nil {
		return err
	}

	fmt.Println("\n# Roll the web set onto 2 CPUs, 1 GiB of memory and memory hot-add, in place if possible: hot-add is set when a VM is cloned, so each VM is replaced, one new VM at a time (maxSurge 1, maxUnavailable 0 by default), each old one going once the new one's guest has an address")
	rolled, err := s.roll(ctx, rollout{
		patch:    `{"spec":{"strategy":{"method":"InPlaceIfPossible"},"template":{"spec":{"cpus":2,"memoryMiB":1024,"memoryHotAdd":true}}}}`,
		hardware: rollwatch.Hardware{CPUs: 2, MemoryMiB: 1024},
		guests:   addrs,
		vms:      true,
	})
	if err != nil {
		return err
	}
	if err := s.verifyVMs(ctx, rolled, metav1.ConditionTrue, addrs); err != nil {
		return err
	}
	if err := s.playInPlace(ctx, rolled, addrs); err != nil {
		return err
	}

	fmt.Println("\n# Delete the web set")
	if err := s.deleteSet(ctx, webSet); err != nil {
		return err
	}
	return s.playZones(ctx)
}

// checkVMs shows the set's VMs with kubectl and checks them (verifyVMs).
func (s *story) checkVMs(ctx context.Context, names []string, ready metav1.ConditionStatus, addrs map[string]string) error {
	if _, err := s.kubectl(ctx, "get", "vm", "-n", s.ns, "-l", "app="+s.set); err != nil {
		return err
	}
	return s.verifyVMs(ctx, names, ready, addrs)
}

// verifyVMs checks, on the objects, that the set's VMs are names, all
// PoweredOn, with the Ready condition ready and the addresses given (none
// when addrs is nil).
func (s *story) verifyVMs(ctx context.Context, names []string, ready metav1.ConditionStatus, addrs map[string]string) error {
	var l vmv1.VirtualMachineList
	if err := s.env.Client.List(ctx, &l, client.InNamespace(s.ns), client.MatchingLabels{"app": s.set}); err != nil {
		return err
	}
	var got []string
	for _, vm := range l.Items {
		var want []string
		if addrs != nil {
			want = []string{addrs[vm.Name]}
		}
		c := meta.FindStatusCondition(vm.Status.Conditions, "Ready")
		if vm.Status.PowerState != "PoweredOn" || c == nil || c.Status != ready || !slices.Equal(vm.Status.Addresses, want) {
			return fmt.Errorf("VirtualMachine %s: %s, Ready %v, addresses %v; want PoweredOn, %s, %v", vm.Name, vm.Status.PowerState, c, vm.Status.Addresses, ready, want)
		}
		got = append(got, vm.Name)
	}
	slices.Sort(got)
	if !slices.Equal(got, names) {
		return fmt.Errorf("the set's VirtualMachines are %v, want %v", got, names)
	}
	shown := "none"
	if addrs != nil {
		var each []string
		for _, name := range names {
			each = append(each, name+" "+addrs[name])
		}
		shown = strings.Join(each, ", ")
	}
	fmt.Printf("  ✓ checked: the VirtualMachines' Ready is %s, their addresses %s\n", ready, shown)
	return nil
}
