package kube

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/execute"
)

// The fixtures of the pure tests: an owner "web" (UID uid-web) selecting
// app=web, whose children are ConfigMaps in namespace ns.

const ownerUID = "uid-web"

var testNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// kidOpt changes a fixture child before it is described.
type kidOpt func(cm *corev1.ConfigMap, ready *bool)

var (
	orphan       kidOpt = func(cm *corev1.ConfigMap, _ *bool) { cm.OwnerReferences = nil }
	notReady     kidOpt = func(_ *corev1.ConfigMap, ready *bool) { *ready = false }
	deleting     kidOpt = func(cm *corev1.ConfigMap, _ *bool) { cm.DeletionTimestamp = &metav1.Time{Time: testNow} }
	unlabelled   kidOpt = func(cm *corev1.ConfigMap, _ *bool) { cm.Labels = map[string]string{"app": "other"} }
	foreignOwned kidOpt = func(cm *corev1.ConfigMap, _ *bool) { cm.OwnerReferences = controlledBy("uid-db") }
)

// failedMark marks a fixture child that the Adapter describes as failed.
const failedMark = "test.replicakit.io/failed"

// unreadableMark marks a fixture child that the Adapter describes as
// unknown (replicaset.Replica.Unreachable), as a VM vCenter cannot read.
const unreadableMark = "test.replicakit.io/unreadable"

// unreadable marks a child as unknown, not ready.
var unreadable kidOpt = func(cm *corev1.ConfigMap, ready *bool) {
	*ready = false
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[unreadableMark] = "true"
}

// failed marks a child as failed (replicaset.PhaseFailed).
var failed kidOpt = func(cm *corev1.ConfigMap, ready *bool) {
	*ready = false
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[failedMark] = "true"
}

// inZone puts a child in zone z (its ZoneLabel label).
func inZone(z string) kidOpt {
	return func(cm *corev1.ConfigMap, _ *bool) { cm.Labels[ZoneLabel] = z }
}

// unhealthyMark marks a fixture child whose health check fails, its value
// the reason.
const unhealthyMark = "test.replicakit.io/unhealthy"

// sick makes a child's health check fail with reason (it stays ready).
func sick(reason string) kidOpt { return withAnnotation(unhealthyMark, reason) }

// kept gives a child the health an earlier pass kept (AnnotationHealth).
func kept(h replicaset.Health) kidOpt { return withAnnotation(AnnotationHealth, encodeHealth(h)) }

// withAnnotation adds an annotation to a child, keeping the others.
func withAnnotation(k, v string) kidOpt {
	return func(cm *corev1.ConfigMap, _ *bool) {
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations[k] = v
	}
}

func annotated(k, v string) kidOpt {
	return func(cm *corev1.ConfigMap, _ *bool) { cm.Annotations = map[string]string{k: v} }
}

func controlledBy(uid string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "test.replicakit.io/v1", Kind: "Widget", Name: "x", UID: types.UID(uid), Controller: ptr.To(true)}}
}

// kid is a child as read would describe it: ready and running unless told.
func kid(name string, opts ...kidOpt) child {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
		Labels: map[string]string{"app": "web"}, OwnerReferences: controlledBy(ownerUID),
		CreationTimestamp: metav1.Time{Time: testNow.Add(-time.Hour)}}}
	ready := true
	for _, o := range opts {
		o(cm, &ready)
	}
	rep, err := ReplicaOf(cm)
	rep.Phase, rep.Ready, rep.ReadySince = replicaset.PhaseRunning, ready, cm.CreationTimestamp.Time
	rep.Zone = cm.Labels[ZoneLabel]
	if cm.Annotations[failedMark] != "" {
		rep.Phase = replicaset.PhaseFailed
	}
	if cm.Annotations[unreadableMark] != "" {
		rep.Unreachable = true
	}
	check := healthCheck{checked: true, ok: ready && cm.Annotations[unhealthyMark] == "", started: true, at: cm.CreationTimestamp.Time}
	if !check.ok {
		check.reason = cmp.Or(cm.Annotations[unhealthyMark], reasonNotReady)
	}
	return child{obj: cm, replica: rep, costErr: err, check: check}
}

// observed is an observation of owner web wanting replicas, with the given
// own children; change edits it further.
func observed(replicas int, children []child, change ...func(*observation)) *observation {
	owner := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: ownerUID, Generation: 1}}
	o := &observation{owner: owner, key: "ns/web", seed: 1, now: testNow, backoffFor: replicaset.DefaultZoneBackoff,
		spec:     Spec{Replicas: replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		selector: labels.SelectorFromSet(labels.Set{"app": "web"}), template: labels.Set{"app": "web"}}
	for _, c := range children {
		if metav1.GetControllerOfNoCopy(c.obj) == nil {
			o.orphans = append(o.orphans, c)
		} else {
			o.children = append(o.children, c)
		}
	}
	for _, f := range change {
		f(o)
	}
	return o
}

func kids(cs ...child) []child { return cs }

var ordinal = rules{policies: deletionpolicy.Default(), naming: OrdinalNames}

// succeeded is the outcome of a decision carried out without a failure.
func succeeded(d decision) outcome {
	out := outcome{adopted: namesOf(d.adopt), released: namesOf(d.release), restarted: d.restart}
	for _, u := range d.update {
		out.updated = append(out.updated, u.from.GetName())
	}
	if len(d.create) > 0 || len(d.delete) > 0 {
		out.ran = true
		out.acted.Created = d.create
		for _, r := range d.delete {
			out.acted.Deleted = append(out.acted.Deleted, r.Name)
		}
	}
	return out
}

// createsFail is the outcome of a decision whose first create failed with
// err and whose other creates were never started.
func createsFail(err error) func(decision) outcome {
	return func(d decision) outcome {
		out := outcome{ran: true}
		out.acted.Err = &execute.OpError{Op: execute.OpCreate, Name: d.create[0], Err: err}
		out.acted.Skipped = d.create[1:]
		return out
	}
}

// deletesFindChanged is the outcome of a decision whose creates
// succeeded and whose deletes each found its child changed since the
// read (apply takes those out of the result's errors).
func deletesFindChanged(d decision) outcome {
	out := outcome{ran: true}
	out.acted.Created = d.create
	for _, r := range d.delete {
		out.changed = append(out.changed, r.Name)
	}
	return out
}

// zoneFails is the outcome of a decision whose creates in zone failed
// with err (refused) and whose other creates succeeded.
func zoneFails(zone string, err error) func(decision) outcome {
	return func(d decision) outcome {
		out := outcome{ran: true}
		var errs []error
		for i, n := range d.create {
			if d.plan.CreateZones[i] != zone {
				out.acted.Created = append(out.acted.Created, n)
				continue
			}
			errs = append(errs, &execute.OpError{Op: execute.OpCreate, Name: n, Zone: zone, Err: err})
		}
		out.acted.Err = errors.Join(errs...)
		if len(errs) > 0 {
			out.acted.FailedZones = []string{zone}
		}
		return out
	}
}

// render prints a decision and its verdict the way the tables state them.
func render(d decision, v verdict) string {
	var b strings.Builder
	holds := [...]string{"none", "failure", "deleting", "paused", "waiting"}
	fmt.Fprintf(&b, "hold=%s adopt=%v release=%v create=%v delete=%v\n",
		holds[d.hold], namesOf(d.adopt), namesOf(d.release), d.create, replicaNames(d.delete))
	if len(d.plan.CreateZones) > 0 {
		fmt.Fprintf(&b, "createZones=%v\n", d.plan.CreateZones)
	}
	st := v.status
	if len(st.Zones) > 0 {
		fmt.Fprintf(&b, "zones %s", replicaset.Spread(st.Zones))
		for _, z := range st.Zones {
			if !z.BackoffUntil.IsZero() {
				fmt.Fprintf(&b, " backoff(%s until +%v)", z.Zone, z.BackoffUntil.Sub(testNow))
			}
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "status replicas=%d ready=%d available=%d terminating=%d fullyLabeled=%d",
		st.Replicas, st.ReadyReplicas, st.AvailableReplicas, st.TerminatingReplicas, st.FullyLabeledReplicas)
	if st.UnknownReplicas > 0 {
		fmt.Fprintf(&b, " unknown=%d", st.UnknownReplicas)
	}
	b.WriteString("\n")
	for _, c := range st.Conditions {
		fmt.Fprintf(&b, "%s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	renderHealing(&b, d, v)
	for _, e := range v.events {
		fmt.Fprintf(&b, "event %s %s: %s\n", e.kind, e.reason, e.text)
	}
	fmt.Fprintf(&b, "publish=%v forgive=%v forgiveUIDs=%v taken=%v requeue=%v retry=%v terminal=%v",
		v.publish, v.forgive, v.forgiveUIDs, v.taken, v.requeue, v.retry != nil, v.terminal != nil)
	return b.String()
}

func replicaNames(rs []replicaset.Replica) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Name
	}
	return out
}

var _ client.Object = (*metav1.PartialObjectMetadata)(nil)

// renderHealing prints what a pass with Spec.Remediation decided of its
// children's health: nothing without it, so that the other cases read as
// they did before self-healing.
func renderHealing(b *strings.Builder, d decision, v verdict) {
	if !slices.ContainsFunc(v.status.Conditions, func(c metav1.Condition) bool { return c.Type == ConditionRemediationAllowed }) {
		return
	}
	h := d.plan.Health
	fmt.Fprintf(b, "health unhealthy=%d allowed=%d inFlight=%d storm=%v suspended=%v replace=%v restart=%v",
		v.status.UnhealthyReplicas, v.status.RemediationsAllowed, h.InFlight, h.Storm, h.Suspended, replicaNames(d.plan.Replace), replicaNames(d.plan.Restart))
	if !h.NextCheck.IsZero() {
		fmt.Fprintf(b, " nextCheck=+%v", h.NextCheck.Sub(testNow))
	}
	b.WriteString("\n")
	for _, hd := range d.plan.Holds {
		fmt.Fprintf(b, "held %v (%d): %s\n", hd.By, hd.Waiting, hd.Reason)
	}
	for _, u := range d.update {
		if a, ok := u.to.GetAnnotations()[AnnotationHealth]; ok && a != u.from.GetAnnotations()[AnnotationHealth] {
			fmt.Fprintf(b, "write %s %s=%s\n", u.from.GetName(), AnnotationHealth, a)
		}
	}
	for _, r := range d.restart {
		fmt.Fprintf(b, "restart %s, then write %s=%s\n", r.from.GetName(), AnnotationHealth, r.to.GetAnnotations()[AnnotationHealth])
	}
	if d.historyChanged {
		fmt.Fprintf(b, "write owner %s=%s\n", AnnotationRemediationHistory, encodeHistory(d.history, ""))
	}
}
