package chaos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	vmv1 "github.com/replicakit/replicakit/examples/vmset/api/v1alpha1"
	"github.com/replicakit/replicakit/examples/vmset/controllers"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/replicaset/kube"
	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// The healing scenarios (issue 34) run a set with spec.remediation while
// its VMs' guests hang (a red heartbeat, played through the simulator:
// vcsim.SetHeartbeats; a reset does not bring one back, green does) and
// count what the operator does about it in vCenter: resets
// (ResetVM_Task), clones (CloneVM_Task) and destroys (Destroy_Task), as
// the simulator's gate counts them from a baseline taken once the set and
// the foreign objects beside it are settled (foreignObjects.made).

// vcCalls are the calls of a simulator's gate that remediate: resets,
// clones and destroys.
type vcCalls struct{ resets, clones, destroys int64 }

// callsOf reads f's counts.
func callsOf(f *vcsim.Faults) vcCalls {
	c := f.Calls()
	return vcCalls{resets: c["ResetVM_Task"], clones: c["CloneVM_Task"], destroys: c["Destroy_Task"]}
}

// since is c less the baseline b.
func (c vcCalls) since(b vcCalls) vcCalls {
	return vcCalls{resets: c.resets - b.resets, clones: c.clones - b.clones, destroys: c.destroys - b.destroys}
}

func (c vcCalls) String() string {
	return fmt.Sprintf("%d resets, %d clones, %d destroys", c.resets, c.clones, c.destroys)
}

// dur is a *metav1.Duration of d.
func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

// healingSet is a set of n VMs on template A (healthy when powered on and
// their heartbeat is not red) healing by rm.
func healingSet(ns string, n int32, rm *vmv1.Remediation) *vmv1.VirtualMachineReplicaSet {
	return &vmv1.VirtualMachineReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: setName},
		Spec: vmv1.VirtualMachineReplicaSetSpec{
			Replicas: ptr.To(n),
			Selector: &vmv1.LabelSelector{MatchLabels: map[string]string{"app": setName}},
			Template: vmv1.VirtualMachineTemplate{
				Metadata: vmv1.TemplateMetadata{Labels: map[string]string{"app": setName}},
				Spec:     templateA,
			},
			Remediation: rm,
		},
	}
}

// health is what the binding keeps of a VM's health
// (kube.AnnotationHealth), as far as the scenarios read it.
type health struct {
	Healthy   bool   `json:"healthy"`
	Unhealthy bool   `json:"unhealthy"`
	Since     string `json:"since"`
	Reason    string `json:"reason"`
}

// healthOf reads vm's kube.AnnotationHealth; none reads as the zero health.
func healthOf(vm *vmv1.VirtualMachine) health {
	var h health
	_ = json.Unmarshal([]byte(vm.Annotations[kube.AnnotationHealth]), &h)
	return h
}

// remediationOf is the set's RemediationAllowed reason and its
// unhealthyReplicas (-1 when unset).
func remediationOf(s *vmv1.VirtualMachineReplicaSet) (reason string, unhealthy int32) {
	unhealthy = -1
	if u := s.Status.UnhealthyReplicas; u != nil {
		unhealthy = *u
	}
	if c := meta.FindStatusCondition(s.Status.Conditions, kube.ConditionRemediationAllowed); c != nil {
		reason = c.Reason
	}
	return reason, unhealthy
}

// getSet reads the set as it is now.
func getSet(e *testenv.Env, set *vmv1.VirtualMachineReplicaSet) (*vmv1.VirtualMachineReplicaSet, error) {
	got := &vmv1.VirtualMachineReplicaSet{}
	err := e.Client.Get(context.Background(), client.ObjectKeyFromObject(set), got)
	return got, err
}

// waitHealed waits until the set holds n VMs on both sides over the
// vCenters of vcs (vmcheck.State.Settled), each with its Healthy condition
// True and recorded healthy by the binding, and the set counting none
// unhealthy with remediation allowed; it returns the state then.
func waitHealed(t testing.TB, e *testenv.Env, vcs []vsphere.Config, set *vmv1.VirtualMachineReplicaSet, n int) vmcheck.State {
	t.Helper()
	var st vmcheck.State
	var why string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := observeAll(e, vcs, set.Namespace)
		if err != nil {
			why = err.Error()
			return false, nil
		}
		st = got
		if !st.Settled(n) {
			why = "not settled"
			return false, nil
		}
		if reason, unhealthy := remediationOf(st.Set); reason != kube.ConditionRemediationAllowed || unhealthy != 0 {
			why = fmt.Sprintf("RemediationAllowed %s, %d unhealthy", reason, unhealthy)
			return false, nil
		}
		for _, vm := range vms(t, e, set.Namespace) {
			if !slices.Contains(st.Live, vm.Name) {
				continue
			}
			h := healthOf(&vm)
			if !meta.IsStatusConditionTrue(vm.Status.Conditions, controllers.ConditionHealthy) || !h.Healthy || h.Unhealthy {
				why = fmt.Sprintf("%s: Healthy %+v, health %+v", vm.Name, meta.FindStatusCondition(vm.Status.Conditions, controllers.ConditionHealthy), h)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the set did not settle healthy at %d in 3 minutes (%s): %v%s", n, why, st, unsettled(e, set.Namespace)+stacks())
	}
	return st
}

// vsphereNames are the vSphere names of the namespace's VirtualMachines
// names.
func vsphereNames(ns string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = controllers.VSphereName(&vmv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}})
	}
	return out
}

// hang sets the heartbeat of the namespace's VirtualMachines names to h
// in the vCenter cfg reaches, all at once (vcsim.SetHeartbeats), and
// returns how long that took.
func hang(t testing.TB, cfg vsphere.Config, ns string, names []string, h vmprovider.Heartbeat) time.Duration {
	t.Helper()
	took, err := vcsim.SetHeartbeats(context.Background(), cfg, vsphereNames(ns, names), h)
	if err != nil {
		t.Fatal(err)
	}
	return took
}

// holdFor calls check every 100 ms for d, and returns the first thing it
// reports ("" while all is as it must be) and how many checks it made.
func holdFor(d time.Duration, check func() string) (string, int) {
	end := time.Now().Add(d)
	polls := 0
	for {
		polls++
		if why := check(); why != "" {
			return why, polls
		}
		if !time.Now().Before(end) {
			return "", polls
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// remediationEvents counts the set's events Remediating and Restarting.
func remediationEvents(e *testenv.Env, ns string) (replacing, restarting int, err error) {
	evs, err := setEvents(e, ns)
	return len(evs["Remediating"]), len(evs["Restarting"]), err
}

// setEvents returns the notes of the set's events, by reason.
func setEvents(e *testenv.Env, ns string) (map[string][]string, error) {
	var l eventsv1.EventList
	if err := e.Client.List(context.Background(), &l, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, ev := range l.Items {
		if ev.Regarding.Name == setName {
			out[ev.Reason] = append(out[ev.Reason], ev.Note)
		}
	}
	return out, nil
}

// finish fills in r's leaks, duplicates and foreign objects changed over
// the vCenters of vcs (the first holding the foreign VM), fails on any,
// and marks r failed when t did.
func finish(t *seeded, e *testenv.Env, vcs []vsphere.Config, ns string, planted *foreignObjects, r *row, begin time.Time) {
	st, err := observeAll(e, vcs, ns)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range st.VCenter {
		if i > 0 && st.VCenter[i-1] == name {
			r.duplicates++
			t.Errorf("VM name %s is held twice", name)
		}
		if !slices.Contains(st.Want, name) {
			r.leaked++
			t.Errorf("leaked vSphere VM %s", name)
		}
	}
	r.foreignChanged = planted.changed(t, e)
	if r.leaked+r.duplicates+r.foreignChanged > 0 {
		t.Errorf("%d leaked vSphere VMs, %d duplicates, %d foreign objects changed", r.leaked, r.duplicates, r.foreignChanged)
	}
	if t.Failed() {
		r.final = "FAILED"
	}
	r.took = time.Since(begin)
}

// describeReasons lists the reasons of seen in the order first seen.
func describeReasons(seen []string) string { return strings.Join(seen, "→") }

// inNamespace lists in ns.
func inNamespace(ns string) client.ListOption { return client.InNamespace(ns) }

// controllerOf is the UID of vm's controller, "" when none.
func controllerOf(vm *vmv1.VirtualMachine) types.UID {
	if ref := metav1.GetControllerOfNoCopy(vm); ref != nil {
		return ref.UID
	}
	return ""
}

// healScene starts what a healing scenario of one vCenter runs on: the
// namespace name, a simulator behind a gate that counts and holds its
// calls, the foreign objects planted beside the set, and the operator,
// started (stop it when the scenario ends).
func healScene(t *seeded, e *testenv.Env, name string) (ns string, gate *vcsim.Faults, sim *vcsimtest.Sim, planted *foreignObjects, op *operator) {
	ns = namespace(t, e, name)
	gate = &vcsim.Faults{}
	sim = vcsimtest.StartFaulty(t, gate)
	planted = plantForeign(t, e, sim, ns)
	op = &operator{t: t, e: e, ns: ns, sim: sim}
	op.start()
	return ns, gate, sim, planted, op
}

// scene is the world healScene starts, with the simulator's config.
type scene struct {
	ns      string
	gate    *vcsim.Faults
	sim     *vcsimtest.Sim
	vcs     []vsphere.Config
	planted *foreignObjects
	op      *operator
}

// startScene starts healScene's world named name.
func startScene(t *seeded, e *testenv.Env, name string) scene {
	var s scene
	s.ns, s.gate, s.sim, s.planted, s.op = healScene(t, e, name)
	s.vcs = []vsphere.Config{s.sim.Config()}
	return s
}
