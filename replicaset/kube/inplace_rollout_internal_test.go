package kube

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset"
)

// sizeIP is an InPlaceRollout over annotations: "size" is what a child
// asks for, "running" what it runs with.
type sizeIP struct{}

func (sizeIP) InPlace(child, want client.Object) (replicaset.InPlace, string) {
	return replicaset.InPlaceLive, ""
}
func (sizeIP) ApplyInPlace(child, want client.Object, pc bool) bool {
	a := child.GetAnnotations()
	ch := a["size"] != want.GetAnnotations()["size"]
	a["size"] = want.GetAnnotations()["size"]
	child.SetAnnotations(a)
	return ch
}
func (sizeIP) ShowsInPlace(child, want client.Object) bool {
	return child.GetAnnotations()["running"] == want.GetAnnotations()["size"]
}

// setupInPlace describes o's children as a pass with sizeIP would.
func setupInPlace(o *observation, want client.Object) {
	ip := sizeIP{}
	lc := &lifecycleRead{domain: DefaultHookDomain, now: testNow, gates: true}
	for i := range o.children {
		_ = lc.describe(o.children[i].obj, &o.children[i].replica)
	}
	describeInPlace[client.Object, client.Object](ip, want, o.revision, o.children)
	o.want = want
}

// TestInPlace_RollbackInFlightCountsAsOld: a rollback B→A in flight
// (label A, in-place annotation A, the child still running B's size)
// counts as on an older revision until it shows A, so the rollout goes on
// with it (found in review).
func TestInPlace_RollbackInFlightCountsAsOld(t *testing.T) {
	want := &corev1.ConfigMap{}
	want.SetAnnotations(map[string]string{"size": "4"})
	c := kid("web-0", withAnnotation(AnnotationInPlaceRevision, "A"), withAnnotation("size", "4"), withAnnotation("running", "8"))
	c.obj.SetLabels(map[string]string{"app": "web", RevisionLabel: "A"})
	c.replica.Revision = "A"
	o := observed(1, kids(c), func(o *observation) {
		o.revision = "A"
		o.spec.Rollout = &replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible}
	})
	setupInPlace(o, want)
	t.Logf("replica revision %q inPlace %v", o.children[0].replica.Revision, o.children[0].replica.InPlace)
	d := decide(o, ordinal)
	t.Logf("plan %v, %d updates", d.plan, len(d.update))
	if o.children[0].replica.Revision == "A" {
		t.Errorf("a child whose in-place change back to A does not show counts as on A: the rollout is done with it half-changed")
	}
}

// recordingPass decides a pass of an owner on revision B with a drain
// hook, whose child web-0 is on B and whose child web-1 (on A, marked for
// B, with extra options) runs B's size: the pass records web-1's change.
func recordingPass(t *testing.T, extra ...kidOpt) decision {
	t.Helper()
	want := &corev1.ConfigMap{}
	want.SetAnnotations(map[string]string{"size": "8"})
	c0 := kid("web-0", withAnnotation("size", "8"), withAnnotation("running", "8"))
	c0.obj.SetLabels(map[string]string{"app": "web", RevisionLabel: "B"})
	c0.replica.Revision = "B"
	c1 := kid("web-1", append([]kidOpt{withAnnotation(AnnotationInPlaceRevision, "B"), withAnnotation("size", "8"), withAnnotation("running", "8")}, extra...)...)
	c1.obj.SetLabels(map[string]string{"app": "web", RevisionLabel: "A"})
	c1.replica.Revision = "A"
	o := observed(1, kids(c0, c1), func(o *observation) {
		o.revision = "B"
		o.spec.Rollout = &replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible}
		o.spec.Lifecycle = &Lifecycle{PreDelete: []string{"drain"}}
	})
	setupInPlace(o, want)
	d := decide(o, ordinal)
	t.Logf("plan %v", d.plan)
	return d
}

// TestInPlace_RecordingKeepsPrepare: a child that shows its in-place
// change and is chosen to prepare to leave in the same pass keeps the
// preparation in the pass's write (found in review).
func TestInPlace_RecordingKeepsPrepare(t *testing.T) {
	d := recordingPass(t)
	for _, u := range d.update {
		t.Logf("%s: labels %v annotations %v", u.from.GetName(), u.to.GetLabels(), u.to.GetAnnotations())
		for _, p := range d.plan.Prepare {
			if p.Name == u.from.GetName() {
				if _, ok := u.to.GetAnnotations()[AnnotationPreparing]; !ok {
					t.Errorf("%s is in Plan.Prepare but its write removes %s", p.Name, AnnotationPreparing)
				}
			}
		}
	}
}

// TestInPlace_RecordingKeepsDeletePreparation: a child already preparing
// to leave (not for an update) that now shows its earlier in-place change
// keeps its preparation (found in review).
func TestInPlace_RecordingKeepsDeletePreparation(t *testing.T) {
	d := recordingPass(t, withAnnotation(AnnotationPreparing, stamp(testNow)), withAnnotation(PreDeleteHookAnnotation(DefaultHookDomain, "drain"), "web"))
	for _, u := range d.update {
		t.Logf("%s: labels %v annotations %v", u.from.GetName(), u.to.GetLabels(), u.to.GetAnnotations())
		if u.from.GetName() == "web-1" {
			if _, ok := u.to.GetAnnotations()[AnnotationPreparing]; !ok && len(d.plan.Cancel) == 0 {
				t.Errorf("web-1's deletion preparation is removed by the recording, with no Plan.Cancel")
			}
		}
	}
}

// cycleIP is sizeIP whose every change needs a power cycle.
type cycleIP struct{ sizeIP }

func (cycleIP) InPlace(child, want client.Object) (replicaset.InPlace, string) {
	return replicaset.InPlacePowerCycle, "size changed with hot-add off"
}

// TestInPlace_PowerCycleIsNoStorm: with Spec.Remediation, a power cycle
// of an in-place rollout starts the child's start-up window again, so
// the children it takes down (not ready, as readiness now counts with the
// health check) are neither counted unhealthy, which two of three would
// make a storm, nor remediated, until the window ends (found in review).
func TestInPlace_PowerCycleIsNoStorm(t *testing.T) {
	want := &corev1.ConfigMap{}
	want.SetAnnotations(map[string]string{"size": "8"})
	healthy := replicaset.Health{Started: testNow.Add(-time.Hour), Healthy: true}
	var cs []child
	for _, n := range []string{"web-0", "web-1", "web-2"} {
		c := kid(n, kept(healthy), withAnnotation("size", "4"), withAnnotation("running", "4"))
		c.obj.SetLabels(map[string]string{"app": "web", RevisionLabel: "A"})
		c.replica.Revision = "A"
		cs = append(cs, c)
	}
	pass := func(cs []child, now time.Time) decision {
		o := observed(3, cs, func(o *observation) {
			o.revision, o.now = "B", now
			o.spec.Rollout = &replicaset.Strategy{Method: replicaset.UpdateInPlaceIfPossible, MaxUnavailable: replicaset.Count(2), MaxSurge: replicaset.Count(0)}
			o.spec.Remediation = &replicaset.Remediation{UnhealthyWindow: time.Second}
		})
		describeInPlace[client.Object, client.Object](cycleIP{}, want, o.revision, o.children)
		o.want = want
		return decide(o, ordinal)
	}
	d := pass(cs, testNow)
	if len(d.plan.Update) != 2 {
		t.Fatalf("plan %v: want two children cycled in place", d.plan)
	}
	// The next pass, a minute on: the two cycle, not ready, their Health
	// as the first pass wrote it.
	var next []child
	for _, c := range cs {
		for _, u := range d.update {
			if u.from.GetName() == c.obj.GetName() {
				c = kid(c.obj.GetName(), notReady)
				c.obj.SetAnnotations(u.to.GetAnnotations())
				c.obj.SetLabels(u.to.GetLabels())
				c.replica.Revision = "A"
				h, _ := decodeHealth(u.to.GetAnnotations()[AnnotationHealth])
				if h.Healthy || !h.Started.Equal(testNow) || !h.HealthyBefore {
					t.Errorf("%s cycled: health %+v, want started at %v, healthy before", c.obj.GetName(), h, testNow)
				}
			}
		}
		next = append(next, c)
	}
	d = pass(next, testNow.Add(time.Minute))
	if h := d.plan.Health; h.Unhealthy != 0 || h.Storm || len(d.plan.Replace) > 0 || len(d.plan.Restart) > 0 {
		t.Errorf("two children power-cycling, a minute in: health %+v, replace %v, restart %v; want none unhealthy", h, d.plan.Replace, d.plan.Restart)
	}
}
