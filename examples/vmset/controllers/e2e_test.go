package controllers_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/simulator"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

var env *testenv.Env

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = vmv1.AddToScheme(s)
	return s
}

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{filepath.Join("..", "config", "crd", "bases")},
		Scheme:            newScheme(),
	})
}

// start runs vcsim and the operator's manager for the test.
func start(t *testing.T) (*testenv.Env, *vcsimtest.Sim) {
	t.Helper()
	e := env.Require(t)
	sim := vcsimtest.Start(t)
	p, err := vsphere.New(context.Background(), sim.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) }) // runs after the manager stops
	e.StartManager(t, newScheme(), func(mgr ctrl.Manager) error {
		return controllers.Setup(mgr, &controllers.VirtualMachineReconciler{Provider: p})
	})
	return e, sim
}

// vcenterVMs returns the names of the VMs in vcsim that belong to ns.
func vcenterVMs(sim *vcsimtest.Sim, ns string) []string {
	var out []string
	for _, ref := range sim.Model.Map().All("VirtualMachine") {
		if vm := ref.(*simulator.VirtualMachine); strings.HasPrefix(vm.Name, ns+"-") {
			out = append(out, vm.Name)
		}
	}
	slices.Sort(out)
	return out
}

// settle waits until the set reports n ready replicas, Kubernetes holds n
// live VirtualMachines, all PoweredOn, and vCenter holds exactly their VMs.
func settle(t *testing.T, e *testenv.Env, sim *vcsimtest.Sim, ns string, n int) []string {
	t.Helper()
	var names, inVC []string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		var l vmv1.VirtualMachineList
		if err := e.Client.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return false, err
		}
		names = nil
		var want []string
		for _, vm := range l.Items {
			if vm.DeletionTimestamp != nil || vm.Status.PowerState != "PoweredOn" {
				return false, nil
			}
			names = append(names, vm.Name)
			want = append(want, controllers.VSphereName(&vm))
		}
		slices.Sort(names)
		slices.Sort(want)
		inVC = vcenterVMs(sim, ns)
		if len(names) != n || !slices.Equal(inVC, want) {
			return false, nil
		}
		if n == -1 {
			return true, nil
		}
		var s vmv1.VirtualMachineReplicaSet
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "test-rs"}, &s); err != nil {
			return false, err
		}
		return s.Status.Replicas == int32(n) && s.Status.ReadyReplicas == int32(n), nil
	})
	if err != nil {
		t.Fatalf("not settled on %d: Kubernetes %v, vCenter %v: %v", n, names, inVC, err)
	}
	return names
}

// TestStory plays the seed's kubectl session: create a set of 3, scale to 1,
// scale to 2 (the survivor kept), delete the set; at each step the objects,
// kubectl's view and vCenter agree.
func TestStory(t *testing.T) {
	e, sim := start(t)
	ctx := context.Background()
	const ns = "story"
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	set := &vmv1.VirtualMachineReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "test-rs"},
		Spec: vmv1.VirtualMachineReplicaSetSpec{
			Replicas: ptr.To[int32](3),
			Selector: &vmv1.LabelSelector{MatchLabels: map[string]string{"app": "test-rs"}},
			Template: vmv1.VirtualMachineTemplate{
				Metadata: vmv1.TemplateMetadata{Labels: map[string]string{"app": "test-rs"}},
				Spec:     vmv1.VirtualMachineSpec{CPUs: 1, MemoryMiB: 512},
			},
		},
	}
	if err := e.Client.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	settle(t, e, sim, ns, 3)
	out, err := e.Kubectl(ctx, "get", "vmreplicaset", "test-rs", "-n", ns, "--no-headers")
	if f := strings.Fields(out); err != nil || len(f) < 3 || f[1] != "3" || f[2] != "3" {
		t.Errorf("kubectl get vmreplicaset: %q, %v; want REPLICAS 3 READY 3", out, err)
	}

	if _, err := e.Kubectl(ctx, "scale", "vmreplicaset", "test-rs", "-n", ns, "--replicas=1"); err != nil {
		t.Fatal(err)
	}
	survivor := settle(t, e, sim, ns, 1)
	out, err = e.Kubectl(ctx, "get", "vm", "-n", ns, "--no-headers")
	if f := strings.Fields(out); err != nil || len(f) < 2 || f[0] != survivor[0] || f[1] != "PoweredOn" {
		t.Errorf("kubectl get vm: %q, %v; want %s PoweredOn", out, err, survivor[0])
	}

	if _, err := e.Kubectl(ctx, "scale", "vmreplicaset", "test-rs", "-n", ns, "--replicas=2"); err != nil {
		t.Fatal(err)
	}
	if two := settle(t, e, sim, ns, 2); !slices.Contains(two, survivor[0]) {
		t.Errorf("after 1→2: %v lost the survivor %s", two, survivor[0])
	}

	if _, err := e.Kubectl(ctx, "delete", "vmreplicaset", "test-rs", "-n", ns); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		var l vmv1.VirtualMachineList
		if err := e.Client.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return false, err
		}
		return len(l.Items) == 0 && len(vcenterVMs(sim, ns)) == 0, nil
	})
	if err != nil {
		t.Fatalf("after deleting the set: vCenter still has %v", vcenterVMs(sim, ns))
	}
	// kubectl says "No resources found" on standard error, nothing on output.
	if out, err = e.Kubectl(ctx, "get", "vm", "-n", ns); err != nil || out != "" {
		t.Errorf("kubectl get vm after the delete: %q, %v; want nothing", out, err)
	}
}
