package testenv_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	if os.Getenv("TESTENV_CRASH_HELPER") == "1" {
		crashHelper()
		return
	}
	testenv.Main(m, &env, testenv.Options{CRDs: []*apiextensionsv1.CustomResourceDefinition{testenv.WidgetCRD()}})
}

var widgetGVK = testenv.WidgetGVK

// newWidget creates a Widget and a ConfigMap it controls.
func newWidget(t *testing.T, c client.Client, ns, name string) (*unstructured.Unstructured, *corev1.ConfigMap) {
	t.Helper()
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(widgetGVK)
	w.SetNamespace(ns)
	w.SetName(name)
	if err := unstructured.SetNestedField(w.Object, int64(3), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, w); err != nil {
		t.Fatalf("create widget: %v", err)
	}
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: name + "-child",
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: widgetGVK.GroupVersion().String(), Kind: widgetGVK.Kind, Name: name, UID: w.GetUID(),
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}},
	}}
	if err := c.Create(ctx, child); err != nil {
		t.Fatalf("create child: %v", err)
	}
	return w, child
}

// waitGone polls until obj no longer exists.
func waitGone(t *testing.T, c client.Client, obj client.Object, within time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		t.Fatalf("%s %s still exists after %v: %v", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), within, err)
	}
}

// TestGarbageCollection deletes an owner with each propagation policy and
// checks that the real garbage collector removes its child (and, in the
// foreground case, then the owner).
func TestGarbageCollection(t *testing.T) {
	e := env.Require(t)
	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground} {
		t.Run(string(policy), func(t *testing.T) {
			ns := "gc-" + strings.ToLower(string(policy))
			w, child := newWidget(t, e.Client, ns, "owner")
			if err := e.Client.Delete(context.Background(), w, client.PropagationPolicy(policy)); err != nil {
				t.Fatalf("delete owner: %v", err)
			}
			waitGone(t, e.Client, child, 30*time.Second)
			waitGone(t, e.Client, w, 30*time.Second)
		})
	}
}

// TestScaleSubresource reads and writes the replica count through /scale.
func TestScaleSubresource(t *testing.T) {
	e := env.Require(t)
	ctx := context.Background()
	w, _ := newWidget(t, e.Client, "scale", "scaled")

	// The owner is unstructured, so the Scale is too.
	scale := &unstructured.Unstructured{}
	scale.SetGroupVersionKind(autoscalingv1.SchemeGroupVersion.WithKind("Scale"))
	if err := e.Client.SubResource("scale").Get(ctx, w, scale); err != nil {
		t.Fatalf("get /scale: %v", err)
	}
	if got, _, _ := unstructured.NestedInt64(scale.Object, "spec", "replicas"); got != 3 {
		t.Fatalf("/scale spec.replicas = %d, want 3", got)
	}
	if err := unstructured.SetNestedField(scale.Object, int64(5), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.SubResource("scale").Update(ctx, w, client.WithSubResourceBody(scale)); err != nil {
		t.Fatalf("update /scale: %v", err)
	}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedInt64(w.Object, "spec", "replicas"); got != 5 {
		t.Errorf("after /scale update: spec.replicas = %d, want 5", got)
	}

	// kubectl scale goes through the same subresource.
	if _, err := e.Kubectl(ctx, "scale", "-n", "scale", "widget/scaled", "--replicas=2"); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedInt64(w.Object, "spec", "replicas"); got != 2 {
		t.Errorf("after kubectl scale: spec.replicas = %d, want 2", got)
	}
}

func TestKubectl(t *testing.T) {
	e := env.Require(t)
	newWidget(t, e.Client, "kubectl", "listed")
	out, err := e.Kubectl(context.Background(), "get", "widgets,configmaps", "-n", "kubectl", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"widget.test.replicakit.io/listed", "configmap/listed-child"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get printed %q, want a line %q", out, want)
		}
	}
	out, err = e.Kubectl(context.Background(), "version", "-o", "json")
	if err != nil || !strings.Contains(out, `"gitVersion": "v1.37.2"`) {
		t.Errorf("kubectl version = %q, %v; want server and client v1.37.2", out, err)
	}
}

func TestStart_MissingBinaries(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", t.TempDir())
	_, err := testenv.Start(testenv.Options{})
	if !errors.Is(err, testenv.ErrMissingBinaries) {
		t.Fatalf("Start with an empty binary folder: %v, want ErrMissingBinaries", err)
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kubectl", "make tools"} {
		if !strings.Contains(err.Error(), b) {
			t.Errorf("error %q does not mention %s", err, b)
		}
	}
}

// crashHelper starts an environment, prints the process groups of the
// control plane, and panics as a failing test would.
func crashHelper() {
	e, err := testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Println("start:", err)
		os.Exit(2)
	}
	_ = e
	out, _ := exec.Command("ps", "-o", "pid=", "--ppid", strconv.Itoa(os.Getpid())).Output()
	fmt.Printf("children:%s\n", strings.Join(strings.Fields(string(out)), ","))
	panic("a test panicked")
}

// TestNoProcessLeftBehind runs a test process that starts the control plane
// and panics, and checks that every process it started is gone soon after.
func TestNoProcessLeftBehind(t *testing.T) {
	env.Require(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TESTENV_CRASH_HELPER=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var children []int
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if list, ok := strings.CutPrefix(sc.Text(), "children:"); ok {
			for _, f := range strings.Split(list, ",") {
				if pid, err := strconv.Atoi(f); err == nil {
					children = append(children, pid)
				}
			}
		}
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the crash helper exited cleanly; want a panic")
	}
	// etcd, kube-apiserver, kube-controller-manager and the watchdog.
	if len(children) < 4 {
		t.Fatalf("crash helper reported children %v, want at least 4", children)
	}
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		for _, pid := range children {
			if syscall.Kill(pid, 0) == nil && !zombie(pid) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		for _, pid := range children {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		t.Fatalf("processes %v outlived the crashed test process", children)
	}
}

func zombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] == "Z"
}
