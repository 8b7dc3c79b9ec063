package main

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/types"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/testcert"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// TestSecrets runs the manager as an operator does, as a process of its
// own configured by flags and VSPHERE_* variables, against a vCenter
// simulator over TLS, through every way vCenter fails: a wrong password,
// a CA or thumbprint that does not match vCenter's certificate, a vCenter
// that does not listen, sessions ended under the running manager (with
// the password still accepted, and after it was changed), tasks vCenter
// refuses, and vCenter gone while sets scale. After each it searches
// every line the manager logged (at debug level), the error it exited
// with, every Event, VirtualMachine, VirtualMachineReplicaSet and Lease,
// and its metrics for the passwords it was given, as they are and in the
// encodings a leak would use; and it requires each failure to show where
// an operator would look for it, so that a path the test no longer drives
// fails it.
func TestSecrets(t *testing.T) {
	e := env.Require(t)
	dir := t.TempDir()

	faults := &vcsim.Faults{}
	// changed makes vCenter refuse the password the manager has, as when
	// an administrator changes it.
	var changed atomic.Bool
	sim, err := vcsim.New(faults.Serialized, func(m *simulator.Model) {
		m.Map().SessionManager().ValidLogin = func(req *types.Login) bool {
			return !changed.Load() && req.UserName == vcsim.Username && req.Password == vcsim.Password
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)

	known := newSecret("vCenter's password", vcsim.Username, vcsim.Password)
	wrong := newSecret("the wrong password the manager was given", vcsim.Username, wrongPassword)
	vc := sim.Config()
	vcEnv := map[string]string{
		"VSPHERE_URL": vc.URL, "VSPHERE_USERNAME": vc.Username, "VSPHERE_PASSWORD": vc.Password,
		"VSPHERE_CA_FILE":    writeFile(t, dir, "vcenter-ca.pem", string(sim.CA)),
		"VSPHERE_DATACENTER": vc.Datacenter, "VSPHERE_FOLDER": vc.Folder, "VSPHERE_RESOURCE_POOL": vc.ResourcePool,
		"VSPHERE_DATASTORE": vc.Datastore, "VSPHERE_TEMPLATE": vc.Template,
	}
	base := []string{"-kubeconfig=" + e.Kubeconfig, "-log-level=debug"}

	t.Run("the manager refuses to start", func(t *testing.T) {
		tests := []struct {
			name    string
			env     map[string]string
			args    []string
			secrets []secret
			// want is in the error the manager exits with.
			want string
			// sent says whether the password reached vCenter.
			sent bool
		}{{
			name:    "wrong password from the environment",
			env:     with(vcEnv, "VSPHERE_PASSWORD", wrongPassword),
			args:    []string{"-log-format=json"},
			secrets: []secret{wrong, known},
			want:    "ServerFaultCode: Login failure",
			sent:    true,
		}, {
			name:    "wrong password from a file",
			env:     with(vcEnv, "VSPHERE_PASSWORD", ""),
			args:    []string{"-log-format=text", "-vsphere-password-file=" + writeFile(t, dir, "wrong-password", wrongPassword+"\n")},
			secrets: []secret{wrong, known},
			want:    "ServerFaultCode: Login failure",
			sent:    true,
		}, {
			name:    "a CA that did not sign vCenter's certificate",
			env:     with(vcEnv, "VSPHERE_CA_FILE", writeFile(t, dir, "other-ca.pem", otherCA(t))),
			args:    []string{"-log-format=text"},
			secrets: []secret{known},
			want:    "x509: certificate signed by unknown authority",
		}, {
			name:    "a thumbprint that is not vCenter's certificate's",
			env:     with(with(vcEnv, "VSPHERE_CA_FILE", ""), "VSPHERE_THUMBPRINT", strings.Repeat("AB:", 31)+"AB"),
			args:    []string{"-log-format=json"},
			secrets: []secret{known},
			want:    "thumbprint does not match",
		}, {
			name:    "a vCenter that does not listen",
			env:     with(vcEnv, "VSPHERE_URL", "https://"+freeAddr(t)+"/sdk"),
			args:    []string{"-log-format=json"},
			secrets: []secret{known},
			want:    "connect: connection refused",
		}}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				logins := faults.Calls()["Login"]
				m := startManager(t, "vmset-manager", tt.env, slices.Concat(base, tt.args)...)
				if code := m.exit(t, time.Minute); code != 1 {
					t.Errorf("exit code %d, want 1", code)
				}
				check := newLeakCheck(tt.secrets...)
				lines := check.output(t, m)
				if len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], "vmset-manager: ") || !strings.Contains(lines[len(lines)-1], tt.want) {
					t.Errorf("the manager did not end with an error holding %q; its output:\n%s", tt.want, m.out.String())
				} else {
					t.Log(strings.TrimSpace(lines[len(lines)-1]))
				}
				if slices.Contains(tt.args, "-log-format=json") {
					jsonLog(t, m.name, lines)
				}
				if sent := faults.Calls()["Login"] > logins; sent != tt.sent {
					t.Errorf("the password reached vCenter: %v, want %v", sent, tt.sent)
				}
			})
		}
	})

	ctx := context.Background()
	// A namespace of the run's own: one a run before (go test -count)
	// left may still be terminating.
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "secrets-"}}
	if err := e.Client.Create(ctx, namespace); err != nil {
		t.Fatal(err)
	}
	ns := namespace.Name
	t.Cleanup(func() { release(t, e, ns) })
	admin, logout, err := vsphere.Connect(ctx, vc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logout(ctx) }) // fails once vCenter is gone

	metricsAddr, probeAddr := freeAddr(t), freeAddr(t)
	metricsURL := "http://" + metricsAddr + "/metrics"
	m := startManager(t, "vmset-manager", with(vcEnv, "VSPHERE_PASSWORD", ""), slices.Concat(base, []string{
		"-log-format=json",
		"-vsphere-password-file=" + writeFile(t, dir, "password", vcsim.Password+"\n"),
		"-metrics-secure=false", "-metrics-bind-address=" + metricsAddr,
		"-health-probe-bind-address=" + probeAddr,
		"-leader-elect", "-leader-election-namespace=" + ns, "-leader-election-id=vmset-secrets",
	})...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the manager's last output:\n%s", m.out.Tail(6000))
		}
	})
	check := newLeakCheck(known)
	scan := func(t *testing.T) {
		t.Helper()
		check.output(t, m)
		check.api(t, e.Client)
		check.metrics(t, metricsURL)
	}
	if body := poll(t, "http://"+probeAddr+"/readyz", "", "ok"); body == "" {
		t.Fatalf("the manager never became ready; its output:\n%s", m.out.Tail(3000))
	}

	steps := []struct {
		name string
		run  func(t *testing.T)
	}{{
		name: "a set of two",
		run: func(t *testing.T) {
			create(t, e, newSet(ns, "first", 2))
			waitReady(t, e, ns, "first", 2)
		},
	}, {
		name: "expired session",
		run: func(t *testing.T) {
			logins := faults.Calls()["Login"]
			ended := endSessions(t, admin)
			create(t, e, newSet(ns, "later", 1))
			waitReady(t, e, ns, "later", 1)
			// Nothing else logs in meanwhile: the test's own session
			// was kept.
			again := faults.Calls()["Login"] - logins
			if again == 0 {
				t.Errorf("the manager never logged in again after its session ended")
			}
			t.Logf("ended %d session(s); the manager logged in %d time(s) since, and made a set ready", ended, again)
		},
	}, {
		name: "expired session and the password changed",
		run: func(t *testing.T) {
			changed.Store(true)
			endSessions(t, admin)
			create(t, e, newSet(ns, "changed", 1))
			waitFailure(t, e, ns, "changed", "", "session expired and logging in again failed", "Login failure")
			scan(t)
			changed.Store(false)
			waitReady(t, e, ns, "changed", 1)
		},
	}, {
		name: "refused tasks",
		run: func(t *testing.T) {
			injected := faults.Injected()
			// Each refusal is lifted when the step ends.
			defer faults.Refuse("CloneVM_Task", vmRef(t, admin, vc.Template))()
			create(t, e, newSet(ns, "refused", 1))
			waitFailure(t, e, ns, "refused", controllers.ReasonCreateFailed, "injected by vcsim.Faults")
			var vms vmv1.VirtualMachineList
			if err := e.Client.List(ctx, &vms, client.InNamespace(ns), client.MatchingLabels{"app": "first"}); err != nil {
				t.Fatal(err)
			}
			for _, vm := range vms.Items {
				defer faults.Refuse("Destroy_Task", vmRef(t, admin, controllers.VSphereName(&vm)))()
			}
			scale(t, e, ns, "first", 1)
			waitFailure(t, e, ns, "first", "DeleteFailed", "injected by vcsim.Faults")
			if faults.Injected() == injected {
				t.Errorf("vCenter refused no task")
			}
			scan(t)
		},
	}, {
		name: "vCenter unreachable",
		run: func(t *testing.T) {
			// Connections in flight (the watch's long poll) are cut, so
			// that the server need not wait for them to end.
			sim.Server.CloseClientConnections()
			sim.Server.Close()
			scale(t, e, ns, "later", 2)
			scale(t, e, ns, "first", 0)
			waitFailure(t, e, ns, "later", controllers.ReasonVCenterUnreachable, "connect: connection refused")
			waitFailure(t, e, ns, "first", "DeleteFailed", "connect: connection refused")
			scan(t)
		},
	}}
	for _, s := range steps {
		// The search runs also when the step fails, to say where a
		// secret is should a leak have changed what the step waits for.
		if !t.Run(s.name, func(t *testing.T) { defer scan(t); s.run(t) }) {
			return
		}
	}

	metrics := check.metrics(t, metricsURL)
	if !strings.Contains(metrics, "controller_runtime_reconcile_errors_total") {
		t.Errorf("the metrics lack the controllers' counters:\n%.2000s", metrics)
	}
	if code := m.stop(t); code != 0 {
		t.Errorf("the manager exited with %d after SIGTERM, want 0", code)
	}
	if debug := jsonLog(t, m.name, check.output(t, m)); debug == 0 {
		t.Errorf("the manager logged nothing at debug level: the search missed what -log-level=debug adds")
	}
	check.api(t, e.Client)
	for _, kind := range []string{"log line", "Event", "events.k8s.io Event", "VirtualMachine", "VirtualMachineReplicaSet", "Lease", "metrics"} {
		if check.searched[kind] == 0 {
			t.Errorf("the search saw no %s", kind)
		}
	}
	t.Logf("searched %v", check.searched)
}

// with returns a copy of env with k set to v, or removed when v is empty.
func with(env map[string]string, k, v string) map[string]string {
	out := maps.Clone(env)
	if v == "" {
		delete(out, k)
	} else {
		out[k] = v
	}
	return out
}

// writeFile writes content to name in dir, readable by its owner only, and
// returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// otherCA returns the PEM of a self-signed certificate authority made for
// the test, which signed nothing of vCenter's.
func otherCA(t *testing.T) string {
	t.Helper()
	ca := testcert.New(t, x509.Certificate{Subject: pkix.Name{CommonName: "not vCenter's CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign})
	crt, _ := testcert.PEM(t, ca)
	return crt
}

// endSessions ends every vCenter session but c's, as an administrator or
// vCenter's idle timeout does, and returns how many it ended.
func endSessions(t *testing.T, c *vim25.Client) int {
	t.Helper()
	n, err := vcsim.EndSessions(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// vmRef finds the VM called name in the datacenter's VM folder.
func vmRef(t *testing.T, c *vim25.Client, name string) types.ManagedObjectReference {
	t.Helper()
	vm, err := find.NewFinder(c).VirtualMachine(context.Background(), "/DC0/vm/"+name)
	if err != nil {
		t.Fatal(err)
	}
	return vm.Reference()
}

func create(t *testing.T, e *testenv.Env, set *vmv1.VirtualMachineReplicaSet) {
	t.Helper()
	if err := e.Client.Create(context.Background(), set); err != nil {
		t.Fatal(err)
	}
}

// scale sets the replicas of the set called name.
func scale(t *testing.T, e *testenv.Env, ns, name string, n int32) {
	t.Helper()
	ctx := context.Background()
	var set vmv1.VirtualMachineReplicaSet
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &set); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(set.DeepCopy())
	set.Spec.Replicas = ptr.To(n)
	if err := e.Client.Patch(ctx, &set, patch); err != nil {
		t.Fatal(err)
	}
}

// waitReady waits until the set called name reports n replicas, all ready,
// for its current generation.
func waitReady(t *testing.T, e *testenv.Env, ns, name string, n int32) {
	t.Helper()
	var set vmv1.VirtualMachineReplicaSet
	waitFor(t, fmt.Sprintf("%d ready replicas of %s", n, name), func(ctx context.Context) (bool, error) {
		err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &set)
		st := set.Status
		return err == nil && st.ObservedGeneration == set.Generation && st.Replicas == n && st.ReadyReplicas == n, err
	})
}

// waitFailure waits until a VirtualMachine of the set called set has a
// Ready condition that is not true, with reason (any, when empty) and a
// message holding each of want, and an event with that reason and note
// says so too: where an operator looks when vCenter fails.
func waitFailure(t *testing.T, e *testenv.Env, ns, set, reason string, want ...string) {
	t.Helper()
	var seen []string
	defer func() {
		if t.Failed() {
			t.Logf("the VirtualMachines' Ready conditions: %q", seen)
		}
	}()
	says := func(msg string) bool {
		return !slices.ContainsFunc(want, func(w string) bool { return !strings.Contains(msg, w) })
	}
	waitFor(t, fmt.Sprintf("a VirtualMachine's condition and event saying %q", want), func(ctx context.Context) (bool, error) {
		var vms vmv1.VirtualMachineList
		if err := e.Client.List(ctx, &vms, client.InNamespace(ns), client.MatchingLabels{"app": set}); err != nil {
			return false, err
		}
		var evs eventsv1.EventList
		if err := e.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		seen = seen[:0]
		failed := map[string]bool{}
		for _, vm := range vms.Items {
			c := meta.FindStatusCondition(vm.Status.Conditions, "Ready")
			if c == nil {
				continue
			}
			seen = append(seen, fmt.Sprintf("%s: %s %s", vm.Name, c.Reason, c.Message))
			if c.Status != metav1.ConditionTrue && (reason == "" || c.Reason == reason) && says(c.Message) {
				failed[vm.Name] = true
			}
		}
		for _, ev := range evs.Items {
			if failed[ev.Regarding.Name] && (reason == "" || ev.Reason == reason) && says(ev.Note) {
				t.Logf("VirtualMachine %s: %s event: %s", ev.Regarding.Name, ev.Reason, ev.Note)
				return true, nil
			}
		}
		return false, nil
	})
}

// release lets the namespace's VirtualMachines go without the manager, which
// has stopped, and deletes the namespace.
func release(t *testing.T, e *testenv.Env, ns string) {
	ctx := context.Background()
	var vms vmv1.VirtualMachineList
	if err := e.Client.List(ctx, &vms, client.InNamespace(ns)); err != nil {
		t.Error(err)
		return
	}
	for _, vm := range vms.Items {
		patch := client.MergeFrom(vm.DeepCopy())
		vm.Finalizers = nil
		if err := client.IgnoreNotFound(e.Client.Patch(ctx, &vm, patch)); err != nil {
			t.Error(err)
		}
	}
	if err := e.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Error(err)
	}
}
