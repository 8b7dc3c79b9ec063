package controllers_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/replicaset/kube/kubetest"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{filepath.Join("..", "config", "crd", "bases")},
		Scheme:            vmcheck.Scheme(),
	})
}

// start runs vcsim and the operator's manager for the test, its
// controllers seeing only namespace ns.
func start(t *testing.T, ns string) (*testenv.Env, *vcsimtest.Sim) {
	t.Helper()
	e := env.Require(t)
	sim := vcsimtest.Start(t)
	p, err := vsphere.New(context.Background(), sim.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) }) // runs after the manager stops
	e.StartManager(t, vmcheck.Scheme(), func(mgr ctrl.Manager) error {
		return controllers.Setup(mgr, controllers.NewVirtualMachineReconciler(p))
	}, testenv.OnlyNamespace(ns))
	return e, sim
}

// settle waits until the set reports n ready replicas, Kubernetes holds n
// live VirtualMachines, all PoweredOn, and vCenter holds exactly their VMs;
// it returns their names.
func settle(t *testing.T, e *testenv.Env, sim *vcsimtest.Sim, ns string, n int) []string {
	t.Helper()
	st := waitState(t, e, sim, ns, fmt.Sprintf("settled on %d", n), func(st vmcheck.State) bool { return st.Settled(n) })
	return st.Live
}

// waitState polls the namespace (and its set test-rs) until ok holds, for up
// to a minute, and returns the state that satisfied it.
func waitState(t *testing.T, e *testenv.Env, sim *vcsimtest.Sim, ns, what string, ok func(vmcheck.State) bool) vmcheck.State {
	t.Helper()
	var st vmcheck.State
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		st, last = vmcheck.Observe(ctx, e.Client, sim.Config(), ns, "test-rs")
		return last == nil && ok(st), nil // a VM destroyed mid-read: read again
	})
	if err != nil {
		t.Fatalf("%s: not %s: %v (last read error: %v)", ns, what, st, last)
	}
	return st
}

// createSet creates namespace ns and in it the set test-rs of n replicas.
func createSet(t *testing.T, e *testenv.Env, ns string, n int32) {
	t.Helper()
	createSetWith(t, e, ns, n, nil)
}

// createSetWith is createSet with edit changing the set before it is
// created.
func createSetWith(t *testing.T, e *testenv.Env, ns string, n int32, edit func(*vmv1.VirtualMachineReplicaSet)) {
	t.Helper()
	ctx := context.Background()
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	set := &vmv1.VirtualMachineReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "test-rs"},
		Spec: vmv1.VirtualMachineReplicaSetSpec{
			Replicas: ptr.To(n),
			Selector: &vmv1.LabelSelector{MatchLabels: map[string]string{"app": "test-rs"}},
			Template: vmv1.VirtualMachineTemplate{
				Metadata: vmv1.TemplateMetadata{Labels: map[string]string{"app": "test-rs"}},
				Spec:     vmv1.VirtualMachineSpec{CPUs: 1, MemoryMiB: 512},
			},
		},
	}
	if edit != nil {
		edit(set)
	}
	if err := e.Client.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
}

// TestStory plays the seed's kubectl session: create a set of 3, scale to 1,
// scale to 2 (the survivor kept), delete the set; at each step the objects,
// kubectl's view and vCenter agree.
func TestStory(t *testing.T) {
	const ns = "story"
	e, sim := start(t, ns)
	ctx := context.Background()
	createSet(t, e, ns, 3)
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
	waitState(t, e, sim, ns, "emptied by the garbage collector", func(st vmcheck.State) bool {
		return st.Set == nil && len(st.Want) == 0 && len(st.VCenter) == 0
	})
	// kubectl says "No resources found" on standard error, nothing on output.
	if out, err = e.Kubectl(ctx, "get", "vm", "-n", ns); err != nil || out != "" {
		t.Errorf("kubectl get vm after the delete: %q, %v; want nothing", out, err)
	}
}

// TestZeroReplicas: a set created with no replicas still gets its status
// (the first status patch holds nothing but zeros left out), and kubectl
// shows 0.
func TestZeroReplicas(t *testing.T) {
	const ns = "zero"
	e, sim := start(t, ns)
	createSet(t, e, ns, 0)
	waitState(t, e, sim, ns, "reporting 0 replicas", func(st vmcheck.State) bool {
		return st.Settled(0) && st.Set.Status.ObservedGeneration == 1 && st.Set.Status.Selector != ""
	})
	out, err := e.Kubectl(context.Background(), "get", "vmreplicaset", "test-rs", "-n", ns, "--no-headers")
	if f := strings.Fields(out); err != nil || len(f) < 3 || f[1] != "0" || f[2] != "0" {
		t.Errorf("kubectl get vmreplicaset: %q, %v; want REPLICAS 0 READY 0", out, err)
	}
}

// TestStory_UnderItsRole plays the story's scaling and deletion with the
// operator running as a service account bound to exactly the ClusterRole
// controller-gen generates from its markers (config/rbac/role.yaml), with
// self-healing and a pre-delete hook on, so that the set's finalizer and
// remediation history are written too: a marker missing from the
// controllers makes a step here fail with Forbidden, as in a cluster,
// where envtest's administrator would pass it.
func TestStory_UnderItsRole(t *testing.T) {
	const ns = "story-rbac"
	e := env.Require(t)
	sim := vcsimtest.Start(t)
	p, err := vsphere.New(context.Background(), sim.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	createSetWith(t, e, ns, 2, func(s *vmv1.VirtualMachineReplicaSet) {
		s.Spec.Remediation = &vmv1.Remediation{Restart: ptr.To(false)}
		s.Spec.Lifecycle = &vmv1.Lifecycle{PreDelete: []string{"drain"}, Timeout: &metav1.Duration{Duration: time.Second}}
	})
	cfg, err := kubetest.ServiceAccountConfig(t.Context(), e.Config, ns, "vmset-manager", filepath.Join("..", "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e.StartManagerAs(t, cfg, vmcheck.Scheme(), func(mgr ctrl.Manager) error {
		return controllers.Setup(mgr, controllers.NewVirtualMachineReconciler(p))
	}, testenv.OnlyNamespace(ns))
	settle(t, e, sim, ns, 2)
	var set vmv1.VirtualMachineReplicaSet
	if err := e.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "test-rs"}, &set); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(set.Finalizers, kube.FinalizerDrain) {
		t.Errorf("the set's finalizers are %v, want %s (written as the service account)", set.Finalizers, kube.FinalizerDrain)
	}
	patch := []byte(`{"spec":{"replicas":1}}`)
	if err := e.Client.Patch(t.Context(), &set, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	settle(t, e, sim, ns, 1)
	if err := e.Client.Delete(t.Context(), &set); err != nil {
		t.Fatal(err)
	}
	waitState(t, e, sim, ns, "emptied", func(st vmcheck.State) bool {
		return st.Set == nil && len(st.Want) == 0 && len(st.VCenter) == 0
	})
}
