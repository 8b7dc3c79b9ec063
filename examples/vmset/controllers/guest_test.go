package controllers_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/vmprovider"
)

// TestGuestReadiness: a set whose VMs count as ready once their guest
// reports an address. Its VMs join the network and get their own hostname
// from cloud-init, stay unready while powered on without an address, and
// become ready (and the set's readyReplicas with them) once their guests
// report one; kubectl shows the address.
func TestGuestReadiness(t *testing.T) {
	const ns = "guest"
	e, sim := start(t, ns)
	ctx := context.Background()
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	set := &vmv1.VirtualMachineReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "test-rs"},
		Spec: vmv1.VirtualMachineReplicaSetSpec{
			Replicas: ptr.To[int32](2),
			Selector: &vmv1.LabelSelector{MatchLabels: map[string]string{"app": "test-rs"}},
			Template: vmv1.VirtualMachineTemplate{
				Metadata: vmv1.TemplateMetadata{Labels: map[string]string{"app": "test-rs"}},
				Spec: vmv1.VirtualMachineSpec{
					CPUs: 1, MemoryMiB: 512,
					Network: &vmv1.VirtualMachineNetwork{Interfaces: []vmv1.NetworkInterface{{Network: "DC0_DVPG0"}}},
					Bootstrap: &vmv1.VirtualMachineBootstrap{CloudInit: &vmv1.CloudInitBootstrap{
						UserData: "#cloud-config\npackages: [nginx]\n",
						MetaData: "network:\n  version: 2\n  ethernets:\n    eth0:\n      dhcp4: true\n",
					}},
					Readiness: vmv1.ReadyWhenIPAddress,
				},
			},
		},
	}
	if err := e.Client.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	waiting := waitState(t, e, sim, ns, "two VMs on, waiting for addresses", func(st vmcheck.State) bool {
		return len(st.LiveOn) == 2 && slices.Equal(st.Want, st.VCenter) && st.Set != nil && st.Set.Status.Replicas == 2
	})
	vms := guestVMs(t, e, ns)
	for _, vm := range vms {
		c := meta.FindStatusCondition(vm.Status.Conditions, "Ready")
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "WaitingForIPAddress" || len(vm.Status.Addresses) != 0 {
			t.Errorf("%s before its guest reported an address: Ready %+v, addresses %v; want False WaitingForIPAddress, none", vm.Name, c, vm.Status.Addresses)
		}
		if h := meta.FindStatusCondition(vm.Status.Conditions, controllers.ConditionHealthy); h == nil || h.Status != metav1.ConditionFalse ||
			h.Reason != vmprovider.ReasonNoAddress || !strings.Contains(h.Message, "reports no IP address") {
			t.Errorf("%s before its guest reported an address: Healthy %+v; want False NoAddress saying so", vm.Name, h)
		}
		if vm.Status.Hostname != vm.Name {
			t.Errorf("%s: guest hostname %q, want its name (the operator's local-hostname)", vm.Name, vm.Status.Hostname)
		}
	}
	if got := waiting.Set.Status.ReadyReplicas; got != 0 {
		t.Errorf("readyReplicas %d before any address, want 0", got)
	}

	want := map[string]string{}
	for i, vm := range vms {
		ip := fmt.Sprintf("10.1.0.%d", 10+i)
		want[vm.Name] = ip
		if err := vcsim.ReportGuest(ctx, sim.Config(), controllers.VSphereName(&vm), ip); err != nil {
			t.Fatal(err)
		}
	}
	waitState(t, e, sim, ns, "settled on 2 ready by address", func(st vmcheck.State) bool { return st.Settled(2) })
	for _, vm := range guestVMs(t, e, ns) {
		if !slices.Equal(vm.Status.Addresses, []string{want[vm.Name]}) || vm.Status.GuestHeartbeat != "green" {
			t.Errorf("%s: addresses %v heartbeat %q, want [%s] green", vm.Name, vm.Status.Addresses, vm.Status.GuestHeartbeat, want[vm.Name])
		}
		if h := meta.FindStatusCondition(vm.Status.Conditions, controllers.ConditionHealthy); h == nil || h.Status != metav1.ConditionTrue || h.Reason != controllers.ReasonHealthy {
			t.Errorf("%s once its guest reported an address: Healthy %+v; want True Healthy", vm.Name, h)
		}
	}
	out, err := e.Kubectl(ctx, "get", "vm", "-n", ns, "--no-headers")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(out) {
		// NAME POWER-STATE READY IP AGE
		if f := strings.Fields(line); len(f) < 4 || f[1] != "PoweredOn" || f[2] != "True" || f[3] != want[f[0]] {
			t.Errorf("kubectl get vm line %q: want PoweredOn True and the address", line)
		}
	}
}

// TestGuestInvalidMetaData: metadata that is not a YAML mapping fails the
// VirtualMachine with InvalidSpec and leaves nothing in vCenter.
func TestGuestInvalidMetaData(t *testing.T) {
	const ns = "badmeta"
	e, sim := start(t, ns)
	ctx := context.Background()
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	vm := &vmv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"},
		Spec: vmv1.VirtualMachineSpec{Bootstrap: &vmv1.VirtualMachineBootstrap{
			CloudInit: &vmv1.CloudInitBootstrap{MetaData: "local-hostname: [web"},
		}},
	}
	if err := e.Client.Create(ctx, vm); err != nil {
		t.Fatal(err)
	}
	var cond *metav1.Condition
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(vm), vm); err != nil {
			return false, err
		}
		cond = meta.FindStatusCondition(vm.Status.Conditions, "Ready")
		return cond != nil, nil
	})
	if err != nil || cond.Status != metav1.ConditionFalse || cond.Reason != "InvalidSpec" || !strings.Contains(cond.Message, "spec.bootstrap.cloudInit.metaData") {
		t.Fatalf("Ready condition %+v, %v; want False InvalidSpec naming spec.bootstrap.cloudInit.metaData", cond, err)
	}
	names, err := vcsim.VMNames(ctx, sim.Config())
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(names, controllers.VSphereName(vm)) {
		t.Errorf("vCenter holds %s for an invalid spec", controllers.VSphereName(vm))
	}
}

// guestVMs lists the namespace's VirtualMachines.
func guestVMs(t *testing.T, e *testenv.Env, ns string) []vmv1.VirtualMachine {
	t.Helper()
	var l vmv1.VirtualMachineList
	if err := e.Client.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return l.Items
}
