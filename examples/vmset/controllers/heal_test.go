package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// resets is the SOAP method of a VM reset, as vcsim.Faults counts it.
const resets = "ResetVM_Task"

// startCounting is start with a simulator that counts the calls it serves
// (vcsim.Faults with no methods to fail).
func startCounting(t *testing.T, ns string) (*testenv.Env, *vcsimtest.Sim, *vcsim.Faults) {
	t.Helper()
	faults := &vcsim.Faults{}
	e, sim := startFaulty(t, ns, faults)
	return e, sim, faults
}

// startFaulty is start with a simulator behind faults.
func startFaulty(t *testing.T, ns string, faults *vcsim.Faults) (*testenv.Env, *vcsimtest.Sim) {
	t.Helper()
	e := env.Require(t)
	sim := vcsimtest.StartFaulty(t, faults)
	p, err := vsphere.New(context.Background(), sim.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	e.StartManager(t, vmcheck.Scheme(), func(mgr ctrl.Manager) error {
		return controllers.Setup(mgr, controllers.NewVirtualMachineReconciler(p))
	}, testenv.OnlyNamespace(ns))
	return e, sim
}

// createHealingSet creates namespace ns and in it the set test-rs of n
// replicas healing by rm.
func createHealingSet(t *testing.T, e *testenv.Env, ns string, n int32, rm *vmv1.Remediation) {
	t.Helper()
	createSetWith(t, e, ns, n, func(s *vmv1.VirtualMachineReplicaSet) { s.Spec.Remediation = rm })
}

// healthAnnotation is what the binding keeps of a VM's health
// (kube.AnnotationHealth), as far as these tests read it.
type healthAnnotation struct {
	Healthy   bool   `json:"healthy"`
	Unhealthy bool   `json:"unhealthy"`
	Since     string `json:"since"`
	Restarted bool   `json:"restarted"`
}

// vmHealth reads the VirtualMachine ns/name, its Healthy condition and the
// binding's health annotation; a VirtualMachine gone reads as nil.
func vmHealth(ctx context.Context, e *testenv.Env, ns, name string) (*vmv1.VirtualMachine, *metav1.Condition, healthAnnotation, error) {
	var vm vmv1.VirtualMachine
	var h healthAnnotation
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &vm); err != nil {
		return nil, nil, h, client.IgnoreNotFound(err)
	}
	if v, ok := vm.Annotations[kube.AnnotationHealth]; ok {
		if err := json.Unmarshal([]byte(v), &h); err != nil {
			return nil, nil, h, fmt.Errorf("%s: %s %q: %w", name, kube.AnnotationHealth, v, err)
		}
	}
	return &vm, meta.FindStatusCondition(vm.Status.Conditions, controllers.ConditionHealthy), h, nil
}

// waitHealthy waits until each of names has its Healthy condition True
// and the binding has recorded it healthy.
func waitHealthy(t *testing.T, e *testenv.Env, ns string, names []string) {
	t.Helper()
	for _, name := range names {
		var cond *metav1.Condition
		var h healthAnnotation
		err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			var err error
			_, cond, h, err = vmHealth(ctx, e, ns, name)
			return err == nil && cond != nil && cond.Status == metav1.ConditionTrue && h.Healthy && !h.Unhealthy, err
		})
		if err != nil {
			t.Fatalf("%s not seen healthy: Healthy %+v, %s %+v: %v", name, cond, kube.AnnotationHealth, h, err)
		}
	}
}

// waitSick waits until name's Healthy condition says HeartbeatRed and the
// binding has recorded it unhealthy, and returns when it became so.
func waitSick(t *testing.T, e *testenv.Env, ns, name string) time.Time {
	t.Helper()
	var cond *metav1.Condition
	var h healthAnnotation
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		_, cond, h, err = vmHealth(ctx, e, ns, name)
		return err == nil && cond != nil && cond.Reason == vmprovider.ReasonHeartbeatRed && h.Unhealthy, err
	})
	if err != nil {
		t.Fatalf("%s not seen unhealthy: Healthy %+v, %s %+v: %v", name, cond, kube.AnnotationHealth, h, err)
	}
	if cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, "heartbeat is red") {
		t.Errorf("%s: Healthy %+v, want False saying the heartbeat is red", name, cond)
	}
	since, err := time.Parse(time.RFC3339, h.Since)
	if err != nil {
		t.Fatalf("%s: unhealthy since %q: %v", name, h.Since, err)
	}
	return since
}

// waitSet waits until the namespace's set test-rs satisfies ok, and
// returns it.
func waitSet(t *testing.T, e *testenv.Env, ns, what string, ok func(*vmv1.VirtualMachineReplicaSet) bool) *vmv1.VirtualMachineReplicaSet {
	t.Helper()
	set := &vmv1.VirtualMachineReplicaSet{}
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "test-rs"}, set)
		return err == nil && ok(set), err
	})
	if err != nil {
		t.Fatalf("set not %s: status %+v: %v", what, set.Status, err)
	}
	return set
}

// remediation returns a set's RemediationAllowed condition's status and
// reason, and its unhealthyReplicas (-1 when unset).
func remediation(set *vmv1.VirtualMachineReplicaSet) (status metav1.ConditionStatus, reason string, unhealthy int32) {
	unhealthy = -1
	if u := set.Status.UnhealthyReplicas; u != nil {
		unhealthy = *u
	}
	if c := meta.FindStatusCondition(set.Status.Conditions, kube.ConditionRemediationAllowed); c != nil {
		return c.Status, c.Reason, unhealthy
	}
	return "", "", unhealthy
}

// waitEvent waits for an event of reason about the object named regarding
// whose note names name, and returns its note.
func waitEvent(t *testing.T, e *testenv.Env, ns, regarding, reason, name string) string {
	t.Helper()
	var note string
	var seen []string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var l eventsv1.EventList
		if err := e.Client.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return false, err
		}
		seen = nil
		for _, ev := range l.Items {
			seen = append(seen, ev.Regarding.Name+"/"+ev.Reason)
			if ev.Regarding.Name == regarding && ev.Reason == reason && strings.Contains(ev.Note, name) {
				note = ev.Note
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no event %s on %s naming %s; events %v", reason, regarding, name, seen)
	}
	return note
}

// holdStill fails the test if, until the moment after, name is deleted
// or reset, or the set's RemediationAllowed condition is not reason.
func holdStill(t *testing.T, e *testenv.Env, faults *vcsim.Faults, ns, name, reason string, after time.Time) {
	t.Helper()
	ctx := context.Background()
	for time.Now().Before(after) {
		vm, _, _, err := vmHealth(ctx, e, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if vm == nil || vm.DeletionTimestamp != nil {
			t.Fatalf("%s was deleted, though %s should hold it", name, reason)
		}
		if n := faults.Calls()[resets]; n != 0 {
			t.Fatalf("%d resets, though %s should hold them", n, reason)
		}
		var set vmv1.VirtualMachineReplicaSet
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "test-rs"}, &set); err != nil {
			t.Fatal(err)
		}
		if _, r, _ := remediation(&set); r != reason {
			t.Fatalf("RemediationAllowed says %s, want %s", r, reason)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kubectlColumn returns the value in the column header of `kubectl get`
// args' output for the row named row.
func kubectlColumn(t *testing.T, e *testenv.Env, header, row string, args ...string) string {
	t.Helper()
	out, err := e.Kubectl(context.Background(), append([]string{"get"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	// kubectl aligns a column's values where its header starts, and
	// leaves an empty value blank.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	at := strings.Index(lines[0], " "+header+" ")
	if strings.HasSuffix(lines[0], " "+header) {
		at = len(lines[0]) - len(header) - 1
	}
	if at < 0 {
		t.Fatalf("kubectl get %v has no column %s:\n%s", args, header, out)
	}
	at++
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) == 0 || f[0] != row {
			continue
		}
		if at >= len(l) || l[at] == ' ' {
			return ""
		}
		return strings.Fields(l[at:])[0]
	}
	t.Fatalf("kubectl get %v has no row %s:\n%s", args, row, out)
	return ""
}

// TestHeal_SkipThenResetThenReplace: a set of 3 healing with an unhealthy
// window of 1s and a start-up window of 3s. One VM, annotated
// skip-remediation, whose guest's heartbeat goes red: its Healthy
// condition says HeartbeatRed (kubectl get vm -o wide shows it), the set
// counts it unhealthy (kubectl get vmrs shows UNHEALTHY 1), and nothing is
// done to it for seconds after its window ended. Once the annotation is
// removed, it is reset in vCenter (one ResetVM_Task; events Restarting on
// the set, Reset on the VM) and, still red when its start-up window ends,
// replaced: gone from Kubernetes and vCenter, a new VM in its place (event
// Remediating), and the set healthy again.
func TestHeal_SkipThenResetThenReplace(t *testing.T) {
	const ns = "heal"
	e, sim, faults := startCounting(t, ns)
	ctx := context.Background()
	// The start-up window is an hour until every VM has been healthy, so
	// that a VM slow to come up on a busy machine is not reset; then 3s,
	// the window a reset gives.
	createHealingSet(t, e, ns, 3, &vmv1.Remediation{
		StartupWindow: &metav1.Duration{Duration: time.Hour}, UnhealthyWindow: &metav1.Duration{Duration: time.Second}})
	live := settle(t, e, sim, ns, 3)
	waitHealthy(t, e, ns, live)
	short := []byte(`{"spec":{"remediation":{"startupWindow":"3s"}}}`)
	if err := e.Client.Patch(ctx, &vmv1.VirtualMachineReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "test-rs"}},
		client.RawPatch(types.MergePatchType, short)); err != nil {
		t.Fatal(err)
	}
	waitSet(t, e, ns, "healthy, remediation allowed", func(s *vmv1.VirtualMachineReplicaSet) bool {
		st, _, unhealthy := remediation(s)
		return st == metav1.ConditionTrue && unhealthy == 0 && s.Status.RemediationsAllowed != nil && *s.Status.RemediationsAllowed == 1
	})
	if got := kubectlColumn(t, e, "UNHEALTHY", "test-rs", "vmrs", "-n", ns); got != "0" {
		t.Errorf("kubectl get vmrs: UNHEALTHY %s, want 0", got)
	}

	sick := live[1]
	vm, _, _, err := vmHealth(ctx, e, ns, sick)
	if err != nil || vm == nil {
		t.Fatalf("%s: %v", sick, err)
	}
	skip := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"true"}}}`, kube.AnnotationSkipRemediation)
	if err := e.Client.Patch(ctx, vm, client.RawPatch(types.MergePatchType, skip)); err != nil {
		t.Fatal(err)
	}
	if err := vcsim.SetHeartbeat(ctx, sim.Config(), controllers.VSphereName(vm), vmprovider.HeartbeatRed); err != nil {
		t.Fatal(err)
	}
	since := waitSick(t, e, ns, sick)
	waitSet(t, e, ns, "counting 1 unhealthy", func(s *vmv1.VirtualMachineReplicaSet) bool {
		_, _, unhealthy := remediation(s)
		return unhealthy == 1
	})
	if got := kubectlColumn(t, e, "UNHEALTHY", "test-rs", "vmrs", "-n", ns); got != "1" {
		t.Errorf("kubectl get vmrs: UNHEALTHY %s, want 1", got)
	}
	if got := kubectlColumn(t, e, "HEALTH", sick, "vm", "-n", ns, "-o", "wide"); got != vmprovider.ReasonHeartbeatRed {
		t.Errorf("kubectl get vm -o wide: HEALTH %s for %s, want HeartbeatRed", got, sick)
	}
	// Its window (1s) ends by since+2s,
	// and the pass the set's requeue makes then holds it: for 3s more,
	// nothing is done.
	holdStill(t, e, faults, ns, sick, kube.ConditionRemediationAllowed, since.Add(2*time.Second+3*time.Second))

	unskip := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, kube.AnnotationSkipRemediation)
	if err := e.Client.Patch(ctx, vm, client.RawPatch(types.MergePatchType, unskip)); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return faults.Calls()[resets] > 0, nil
	})
	if err != nil {
		t.Fatalf("%s, unhealthy and no longer skipped, was not reset in vCenter", sick)
	}
	if note := waitEvent(t, e, ns, "test-rs", "Restarting", sick); !strings.Contains(note, vmprovider.ReasonHeartbeatRed) {
		t.Errorf("event Restarting %q, want it to say HeartbeatRed", note)
	}
	if note := waitEvent(t, e, ns, sick, "Reset", controllers.VSphereName(vm)); !strings.Contains(note, vmprovider.ReasonHeartbeatRed) {
		t.Errorf("event Reset on %s %q, want it to say HeartbeatRed", sick, note)
	}

	// The reset did not help (the simulated guest stays red): once its
	// start-up window ends, it is replaced.
	st := waitState(t, e, sim, ns, "with "+sick+" replaced", func(st vmcheck.State) bool {
		return st.Settled(3) && !slices.Contains(st.Live, sick)
	})
	if slices.Contains(st.VCenter, controllers.VSphereName(vm)) {
		t.Errorf("vCenter still holds %s: %v", controllers.VSphereName(vm), st.VCenter)
	}
	if note := waitEvent(t, e, ns, "test-rs", "Remediating", sick); !strings.Contains(note, vmprovider.ReasonHeartbeatRed) {
		t.Errorf("event Remediating %q, want it to say HeartbeatRed", note)
	}
	if n := faults.Calls()[resets]; n != 1 {
		t.Errorf("%d resets, want 1: the VM was reset once, then replaced", n)
	}
	var fresh []string
	for _, name := range st.Live {
		if !slices.Contains(live, name) {
			fresh = append(fresh, name)
		}
	}
	if len(fresh) != 1 {
		t.Errorf("after the replacement: VMs %v, from %v; want one new", st.Live, live)
	}
	waitHealthy(t, e, ns, st.Live)
	waitSet(t, e, ns, "healthy again", func(s *vmv1.VirtualMachineReplicaSet) bool {
		status, _, unhealthy := remediation(s)
		return status == metav1.ConditionTrue && unhealthy == 0
	})
}

// TestHeal_StormReplacesNothing: a set of 3 with maxUnhealthy 1. Two VMs
// whose heartbeats go red are a storm: the set's RemediationAllowed
// condition says TooManyUnhealthy with 2 unhealthy and none allowed, and
// nothing is reset or replaced for seconds after their window ended. Once
// their heartbeats are green again, remediation is allowed again.
//
// The window is an hour while the two go red (else the first could be
// remediated before the second joins it), and a second once the storm
// is seen.
func TestHeal_StormReplacesNothing(t *testing.T) {
	const ns = "storm"
	e, sim, faults := startCounting(t, ns)
	ctx := context.Background()
	createHealingSet(t, e, ns, 3, &vmv1.Remediation{
		UnhealthyWindow: &metav1.Duration{Duration: time.Hour}, MaxUnhealthy: ptr.To(intstr.FromInt32(1))})
	live := settle(t, e, sim, ns, 3)
	waitHealthy(t, e, ns, live)
	waitSet(t, e, ns, "remediation allowed", func(s *vmv1.VirtualMachineReplicaSet) bool {
		st, _, _ := remediation(s)
		return st == metav1.ConditionTrue
	})

	var latest time.Time
	for _, name := range live[:2] {
		vm := &vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if err := vcsim.SetHeartbeat(ctx, sim.Config(), controllers.VSphereName(vm), vmprovider.HeartbeatRed); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range live[:2] {
		if since := waitSick(t, e, ns, name); since.After(latest) {
			latest = since
		}
	}
	set := waitSet(t, e, ns, "in a storm", func(s *vmv1.VirtualMachineReplicaSet) bool {
		st, reason, unhealthy := remediation(s)
		return st == metav1.ConditionFalse && reason == replicaset.HoldTooManyUnhealthy.String() && unhealthy == 2
	})
	if c := meta.FindStatusCondition(set.Status.Conditions, kube.ConditionRemediationAllowed); !strings.HasPrefix(c.Message, "2 unhealthy") {
		t.Errorf("TooManyUnhealthy says %q, want 2 unhealthy", c.Message)
	}
	if a := set.Status.RemediationsAllowed; a == nil || *a != 0 {
		t.Errorf("remediationsAllowed %v in the storm, want 0", a)
	}

	window := []byte(`{"spec":{"remediation":{"unhealthyWindow":"1s"}}}`)
	if err := e.Client.Patch(ctx, set, client.RawPatch(types.MergePatchType, window)); err != nil {
		t.Fatal(err)
	}
	// Both are past their window once the spec says 1s; for 3s more,
	// nothing may be done to either.
	waitSet(t, e, ns, "seeing the 1s window", func(s *vmv1.VirtualMachineReplicaSet) bool {
		return s.Status.ObservedGeneration == s.Generation
	})
	holdStill(t, e, faults, ns, live[0], replicaset.HoldTooManyUnhealthy.String(), time.Now().Add(3*time.Second))
	st, err := vmcheck.Observe(ctx, e.Client, sim.Config(), ns, "test-rs")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(live, st.Live); diff != "" || len(st.Deleting) > 0 {
		t.Errorf("in the storm, VMs changed (-before +after):\n%s(deleting %v)", diff, st.Deleting)
	}

	// Two heartbeats cannot turn green at once: a pass between the two
	// may see one unhealthy, its window running from the storm's end, and
	// remediate it on a slow machine. So the end is only: allowed again.
	for _, name := range live[:2] {
		vm := &vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if err := vcsim.SetHeartbeat(ctx, sim.Config(), controllers.VSphereName(vm), vmprovider.HeartbeatGreen); err != nil {
			t.Fatal(err)
		}
	}
	waitSet(t, e, ns, "allowed again", func(s *vmv1.VirtualMachineReplicaSet) bool {
		st, _, unhealthy := remediation(s)
		return st == metav1.ConditionTrue && unhealthy == 0
	})
}
