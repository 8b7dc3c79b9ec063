package kube

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset"
)

// Annotations of self-healing (Spec.Remediation). The binding keeps a
// child's health and the set's remediation history on the objects
// themselves, so that a restarted controller (or a new leader) does not
// start the windows and the backoff again.
const (
	// AnnotationHealth holds, on each child of an owner with
	// Spec.Remediation, the child's replicaset.Health as the binding keeps
	// it pass to pass: a compact JSON of started, healthy, unhealthy,
	// since, reason, restarted and healthyBefore, times in RFC 3339. The
	// binding writes it, only when it changes; do not edit it.
	AnnotationHealth = "replicakit.io/health"
	// AnnotationSkipRemediation set to "true" on a child opts it out of
	// remediation (replicaset.Health.Skip): it still counts as unhealthy,
	// but it is neither restarted nor replaced.
	AnnotationSkipRemediation = "replicakit.io/skip-remediation"
	// AnnotationRemediate set to "true" on a child asks for it to be
	// remediated now, whatever its health (replicaset.Health.RemediateNow). The
	// binding removes it once it restarted the child; a replaced child
	// goes with it.
	AnnotationRemediate = "replicakit.io/remediate"
	// AnnotationRemediationHistory holds, on an owner with
	// Spec.Remediation, the remediations' part of the set's
	// replicaset.History (Failures, Last, Storming, Storm) as JSON
	// (failures, last, storming, storm): how many replacements in a row
	// failed, when the last one was made, whether a storm is under way,
	// and when the last one ended. The binding writes it, only when it changes.
	AnnotationRemediationHistory = "replicakit.io/remediation-history"
)

// Restarter is implemented by an Adapter that can restart a child in
// place (a VM reset), which an owner whose Spec.Remediation sets Restart
// needs: the binding refuses such a spec (ReplicaFailure InvalidSpec)
// from an Adapter that is no Restarter. Check the signature at compile
// time:
//
//	var _ kube.Restarter[*WorkerPool, *corev1.Pod] = poolAdapter{}
type Restarter[O, C client.Object] interface {
	// Restart restarts child, which owner controls, to remediate it. It
	// is called from a pass's worker; child is the cache's own object:
	// read it, never modify it. Once it returns nil the binding records
	// the restart in the child's AnnotationHealth.
	Restart(ctx context.Context, owner O, child C) error
}

// healthJSON is AnnotationHealth's encoding.
type healthJSON struct {
	Started       string `json:"started,omitempty"`
	Healthy       bool   `json:"healthy,omitempty"`
	Unhealthy     bool   `json:"unhealthy,omitempty"`
	Since         string `json:"since,omitempty"`
	Reason        string `json:"reason,omitempty"`
	Restarted     bool   `json:"restarted,omitempty"`
	HealthyBefore bool   `json:"healthyBefore,omitempty"`
}

// encodeHealth spells h as AnnotationHealth holds it (Skip and Now are
// annotations of their own, and not kept).
func encodeHealth(h replicaset.Health) string {
	raw, _ := json.Marshal(healthJSON{Started: stamp(h.Started), Healthy: h.Healthy, Unhealthy: h.Unhealthy,
		Since: stamp(h.Since), Reason: h.Reason, Restarted: h.Restarted, HealthyBefore: h.HealthyBefore})
	return string(raw)
}

// decodeHealth reads AnnotationHealth; a malformed value reads as no
// health at all, which the pass then writes anew.
func decodeHealth(v string) (replicaset.Health, bool) {
	var j healthJSON
	if err := json.Unmarshal([]byte(v), &j); err != nil {
		return replicaset.Health{}, false
	}
	return replicaset.Health{Started: unstamp(j.Started), Healthy: j.Healthy, Unhealthy: j.Unhealthy,
		Since: unstamp(j.Since), Reason: j.Reason, Restarted: j.Restarted, HealthyBefore: j.HealthyBefore}, true
}

// stamp writes t to the nanosecond (RFC 3339 with the fraction Go keeps,
// none for whole seconds), so that a window or backoff measured from it
// ends when it should; times written to the second, as earlier releases
// did, read back too.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func unstamp(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// healthOf is the child's health in this pass: what its AnnotationHealth
// kept, started once the child has (checkHealth: at its creation
// without a Starter; with one, when it says, or at now when it gives no
// time and the binding had seen the child before, else at its creation),
// updated with the pass's health check (or, for a child that could not
// be seen, its unhealthy spell ended), and with Skip and Now from their
// annotations. It also returns the annotation's value for it, to write
// when it differs from the child's.
func healthOf(c child, now time.Time) (replicaset.Health, string) {
	a := c.obj.GetAnnotations()
	v, seen := a[AnnotationHealth]
	h, valid := decodeHealth(v)
	if h.Started.IsZero() && c.check.started {
		h.Started = c.check.at
		if h.Started.IsZero() && seen && valid {
			h.Started = now
		}
		if h.Started.IsZero() {
			h.Started = c.obj.GetCreationTimestamp().Time
		}
		if h.Started.IsZero() || h.Started.After(now) {
			h.Started = now
		}
	}
	switch {
	case c.check.unseen && h.Healthy:
		// Time unseen counts toward no unhealthy window: a spell under
		// way ends, and one seen unhealthy again starts anew. The
		// start-up window of one never healthy runs on (moving it each
		// pass would write the child each pass).
		h = h.Unseen(now)
	case c.check.checked:
		h = h.Observe(c.check.ok, c.check.reason, now)
	}
	enc := encodeHealth(h)
	if back, ok := decodeHealth(enc); ok {
		h = back // the value read back, as the next pass reads it
	}
	h.Skip = a[AnnotationSkipRemediation] == "true"
	h.RemediateNow = a[AnnotationRemediate] == "true"
	return h, enc
}

// heal gives each of current, the members' replicas, its Health (with
// Spec.Remediation), and returns the copies of members whose
// AnnotationHealth changes, by UID.
func heal(o *observation, members []child, current []replicaset.Replica) map[string]client.Object {
	if o.spec.Remediation == nil {
		return nil
	}
	var changed map[string]client.Object
	for i, c := range members {
		if current[i].Unreachable && !c.check.unseen {
			c.check.checked, c.check.unseen = false, true // in an unreachable zone (unknownIn)
		}
		h, enc := healthOf(c, o.now)
		current[i].Health = &h
		if c.obj.GetAnnotations()[AnnotationHealth] == enc {
			continue
		}
		if changed == nil {
			changed = map[string]client.Object{}
		}
		changed[c.replica.UID] = withAnnotations(c.obj, map[string]string{AnnotationHealth: enc})
	}
	return changed
}

// cycledHealth is the health of obj, as its AnnotationHealth keeps it,
// once a power cycle of an in-place update began at now: started again,
// not healthy since, healthy before if it ever was; Skip is an
// annotation of its own.
func cycledHealth(obj client.Object, now time.Time) replicaset.Health {
	h, _ := decodeHealth(obj.GetAnnotations()[AnnotationHealth])
	return replicaset.Health{Started: now, HealthyBefore: h.Healthy || h.HealthyBefore}
}

// withAnnotations returns a copy of obj with set's annotations set, and
// those whose value in set is "" removed.
func withAnnotations(obj client.Object, set map[string]string) client.Object {
	out := obj.DeepCopyObject().(client.Object)
	setAnnotations(out, set)
	return out
}

// historyJSON is AnnotationRemediationHistory's encoding.
type historyJSON struct {
	Failures int    `json:"failures,omitempty"`
	Last     string `json:"last,omitempty"`
	Storming bool   `json:"storming,omitempty"`
	Storm    string `json:"storm,omitempty"`
	// Revision is the template revision (RevisionLabel) the failures
	// were counted under, with Spec.Rollout: a pass on another revision
	// clears them, so that a template mended (or one rolled back to)
	// heals again instead of staying suspended.
	Revision string `json:"revision,omitempty"`
}

// historyFor is the owner's history as o's pass plans with it: its
// AnnotationRemediationHistory, or the value the last pass could not
// write there (o.unwrittenHistory), a malformed or missing one being no
// history; the failures counted under another template revision than
// o's are cleared (historyJSON.Revision). changed reports that the
// annotation no longer says so.
func historyFor(o *observation) (h replicaset.History, changed bool) {
	v := cmp.Or(o.unwrittenHistory, o.owner.GetAnnotations()[AnnotationRemediationHistory])
	var j historyJSON
	if err := json.Unmarshal([]byte(v), &j); err != nil {
		return replicaset.History{}, false
	}
	h = replicaset.History{Failures: j.Failures, Last: unstamp(j.Last), Storming: j.Storming, Storm: unstamp(j.Storm)}
	if h.Failures > 0 && o.revision != "" && j.Revision != "" && j.Revision != o.revision {
		h.Failures, h.Last = 0, time.Time{}
		return h, true
	}
	return h, o.unwrittenHistory != ""
}

// unwrittenHistories keeps, per owner, the AnnotationRemediationHistory
// a pass could not write (the owner's RBAC lacks patch, say), so that the
// next passes plan with the history the remediations made, not with the
// one the annotation still holds: the backoff and suspension after
// failed replacements hold while the write fails, for as long as this
// process lives.
type unwrittenHistories struct {
	mu sync.Mutex
	m  map[string]string // by owner key
}

func (u *unwrittenHistories) get(key string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.m[key]
}

// record keeps v as key's history unwritten when err says its write
// failed, and forgets it when the write succeeded.
func (u *unwrittenHistories) record(key, v string, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if err == nil {
		delete(u.m, key)
		return
	}
	if u.m == nil {
		u.m = map[string]string{}
	}
	u.m[key] = v
}

// ofTemplate is p with only the replacements of children on revision
// (all of them when revision is ""): a child on an older template
// that never became healthy says nothing of the template now, so its
// replacement is no failure of the history (replicaset.History.After).
func ofTemplate(p replicaset.Plan, revision string) replicaset.Plan {
	if revision == "" || !slices.ContainsFunc(p.Replace, func(r replicaset.Replica) bool { return r.Revision != "" && r.Revision != revision }) {
		return p
	}
	p.Replace = slices.DeleteFunc(slices.Clone(p.Replace), func(r replicaset.Replica) bool { return r.Revision != "" && r.Revision != revision })
	return p
}

// encodeHistory spells h as AnnotationRemediationHistory holds it, its
// failures counted under the template revision revision ("" without
// Spec.Rollout). The last failed replacement is kept to the second, as
// the API server stamps a child's creation, from which its start-up
// window runs: a replacement made in the pass that recorded the failure
// then counts as started since (replicaset.HealthStatus.Recovered), as it
// is, although its creation reads as up to a second earlier.
func encodeHistory(h replicaset.History, revision string) string {
	j := historyJSON{Failures: h.Failures, Last: stamp(h.Last.Truncate(time.Second)), Storming: h.Storming, Storm: stamp(h.Storm)}
	if h.Failures > 0 {
		j.Revision = revision
	}
	raw, _ := json.Marshal(j)
	return string(raw)
}

// restart is a member the pass restarts, and its copy once restarted:
// AnnotationHealth recording the restart, AnnotationRemediate removed.
type restart struct {
	from, to client.Object
	reason   string // the child's health reason, for the event
}

// restarts lists the plan's restarts, each with its copy once restarted.
func restarts(o *observation, members []child, plan replicaset.Plan) []restart {
	if len(plan.Restart) == 0 {
		return nil
	}
	byUID := make(map[string]child, len(members))
	for _, c := range members {
		byUID[c.replica.UID] = c
	}
	var out []restart
	for _, r := range plan.Restart {
		c, ok := byUID[r.UID]
		if !ok || r.Health == nil {
			continue
		}
		to := withAnnotations(c.obj, map[string]string{AnnotationHealth: encodeHealth(r.Health.Restart(o.now)), AnnotationRemediate: ""})
		out = append(out, restart{from: c.obj, to: to, reason: r.Health.Reason})
	}
	return out
}

// remediationSpecErr says why the owner's Spec.Remediation cannot be
// acted on by this Reconciler, or nil.
func remediationSpecErr(s Spec, restarter bool) error {
	if s.Remediation != nil && s.Remediation.Restart && !restarter {
		return fmt.Errorf("spec.remediation restarts children first (Restart), but the Adapter is no kube.Restarter: implement Restart(ctx, owner, child) or turn Restart off")
	}
	return nil
}

// restart has the Adapter's Restarter restart each of rs and, for each
// that it restarted, records the restart on the child (restart.to); it
// returns those restarted and recorded, joining the failures.
func (r *Reconciler[O, C]) restart(ctx context.Context, o *observation, rs []restart) ([]restart, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	rst, ok := any(r.Adapter).(Restarter[O, C])
	if !ok {
		return nil, errors.New("the Adapter is no kube.Restarter") // decide refuses such a spec first
	}
	var done []restart
	var errs []error
	for _, x := range rs {
		c, ok := x.from.(C)
		if !ok {
			continue
		}
		if err := rst.Restart(ctx, o.owner.(O), c); err != nil {
			errs = append(errs, fmt.Errorf("restart %s: %w", x.from.GetName(), err))
			continue
		}
		if err := r.Client.Patch(ctx, x.to, client.MergeFrom(x.from)); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("record the restart of %s: %w", x.from.GetName(), err))
			continue
		}
		done = append(done, x)
	}
	return done, errors.Join(errs...)
}

// writeHistory patches the owner's AnnotationRemediationHistory to h
// (removing it when h is the zero history), reading nothing back.
func (r *Reconciler[O, C]) writeHistory(ctx context.Context, owner client.Object, h replicaset.History, revision string) error {
	var v any = encodeHistory(h, revision)
	if sameRemediations(h, replicaset.History{}) {
		v = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{AnnotationRemediationHistory: v}}})
	if err != nil {
		return err
	}
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: owner.GetNamespace(), Name: owner.GetName()}}
	m.SetGroupVersionKind(r.ownerGVK)
	if err := r.Client.Patch(ctx, m, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("write the remediation history of %s: %w", owner.GetName(), err)
	}
	return nil
}

// sameRemediations reports whether a and b hold the same remediations'
// part of a History, the part AnnotationRemediationHistory holds (the
// zones' backoff lives in the Reconciler's memory).
func sameRemediations(a, b replicaset.History) bool {
	return a.Failures == b.Failures && a.Last.Equal(b.Last) && a.Storming == b.Storming && a.Storm.Equal(b.Storm)
}
