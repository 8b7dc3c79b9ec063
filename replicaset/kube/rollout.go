package kube

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset"
)

// RevisionLabel is the label the binding puts on every child of an owner
// whose Spec.Rollout is set: the revision of the owner's template the
// child was made from, as a Deployment's pods carry pod-template-hash.
//
// A child without it (made before the owner's rollouts were turned on, or
// before the importer upgraded to a replicakit with rollouts) counts as
// made from the owner's current template and is given the label in place:
// turning rollouts on, or upgrading, replaces no child. A template changed
// before that moment is therefore never rolled out to such children, and
// RolledOut says True, unless the Adapter is a [TemplateMatcher], which
// tells the children that do not match the template: those count as made
// from [UnmatchedRevision] and are replaced. Without one, change the
// template again, or delete such children, to roll them.
const RevisionLabel = "replicakit.io/revision"

// UnmatchedRevision is the revision a child without RevisionLabel counts
// as made from when the Adapter's [TemplateMatcher] says it was not made
// from the owner's current template: an older revision, so the child is
// replaced under the owner's strategy, and Status.CurrentRevision may name
// it while such children remain. It is never written to a child, and is
// no label value, so no template's revision is ever it.
const UnmatchedRevision = "(unmatched)"

// TemplateMatcher is implemented by an Adapter that can tell whether a
// child carrying no RevisionLabel was made from the owner's current
// template. Without it such a child counts as current (see RevisionLabel):
// a pool whose template changed under an operator that never rolled
// (before Spec.Rollout was set, or before the importer upgraded) would
// report RolledOut=True for ever on children that do not match. With it,
// a child it says does not match counts as made from [UnmatchedRevision],
// an older revision, and is replaced under Spec.Rollout's strategy; one
// it says matches is labelled with the current revision in place, as
// without it. Check the signature at compile time:
//
//	var _ kube.TemplateMatcher[*WorkerPool, *corev1.Pod] = poolAdapter{}
//
// Only children without RevisionLabel are asked about (on each pass, until
// they are labelled or replaced): the binding labels every child it
// makes, so a matcher that errs (on a field the API server defaults, say)
// replaces each unlabelled child at most once, never its replacements.
// A child labelled earlier, by a replicakit that did not ask, keeps its
// label and is not asked; to have it asked, remove the label from it
// (kubectl label KIND NAME replicakit.io/revision-).
type TemplateMatcher[O, C client.Object] interface {
	// MatchesTemplate reports whether child, which carries no
	// RevisionLabel, is what NewChild would build from owner's template
	// now, in everything a revision covers: all but metadata and status,
	// or, when the Adapter is an InPlaceUpdater, all that UpdateInPlace
	// cannot change. Leave out what is not the template's: the zone
	// SetZone gave the child (a Zoner's), and what the API server and
	// other controllers fill in (defaults, a Pod's node). Both are the
	// cache's own objects: read them, never modify them.
	MatchesTemplate(owner O, child C) bool
}

// InPlaceUpdater is implemented by an Adapter whose children take more of
// their template's changes in place than the binding applies itself (the
// template's labels and annotations, added or changed on every child, as
// Cluster API does for machines). Without it, the revision is a hash of
// everything but the metadata of the child NewChild builds, so any other
// change of the template makes new children. Check the signature at
// compile time (a method of another signature is not found, and the
// binding's own revision is used instead):
//
//	var _ kube.InPlaceUpdater[*WorkerPool, *corev1.Pod] = poolAdapter{}
type InPlaceUpdater[O, C client.Object] interface {
	// Revision returns the revision of the owner's template: a short
	// string, valid as a label value, that changes exactly when a child
	// made from the template would differ from the existing children in
	// what UpdateInPlace cannot change.
	Revision(owner O) (string, error)
	// UpdateInPlace changes child (a copy, never the cache's object) to
	// match the owner's template in what needs no new child, and reports
	// whether it changed anything. The binding patches the difference.
	UpdateInPlace(owner O, child C) bool
}

// revisionOf returns the revision of the template probe was built from: a
// hash of every field of the child but its metadata and status, encoded as
// a label value of ten characters.
func revisionOf(probe client.Object) (string, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(probe)
	if err != nil {
		return "", fmt.Errorf("revision of the template: %w", err)
	}
	for _, k := range []string{"metadata", "status", "apiVersion", "kind"} {
		delete(u, k)
	}
	b, err := json.Marshal(u) // maps marshal in key order: the same template, the same bytes
	if err != nil {
		return "", fmt.Errorf("revision of the template: %w", err)
	}
	return replicaset.HashRevision(b), nil
}

// rolledOut is the RolledOut condition: True once every live child is on
// the owner's current template (those Partition keeps aside) and
// available; else False, saying what holds the rollout, or that it
// progresses.
func rolledOut(o *observation, d decision, rs replicaset.RolloutStatus) metav1.Condition {
	c := metav1.Condition{Type: ConditionRolledOut, Status: metav1.ConditionFalse, ObservedGeneration: o.owner.GetGeneration()}
	counts := fmt.Sprintf("%d of %d replicas on revision %s, %d available; %d on older revisions",
		rs.Updated, o.spec.Replicas, o.revision, rs.UpdatedAvailable, rs.Old)
	var held []string
	kind := ""
	inPlace := len(d.plan.Update) + len(d.plan.PrepareUpdate)
	for _, h := range d.plan.Holds {
		if h.By == replicaset.HoldMaxSurge {
			continue // new children waiting for room: the rollout still moves
		}
		held = append(held, h.Reason)
		if kind == "" {
			kind = h.By.String()
		}
	}
	if stuck, _ := stalled(o, rs); stuck {
		c.Reason = ReasonProgressDeadlineExceeded
		c.Message = fmt.Sprintf("%s; no progress for %s (ProgressDeadline)", counts, o.spec.ProgressDeadline)
		if len(held) > 0 {
			c.Message += "; held by " + kind + ": " + strings.Join(held, "; ")
		}
		return c
	}
	switch {
	case rs.Complete && rs.Old > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonRolloutPartitioned, counts
	case rs.Complete:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonRolloutComplete, counts
	case d.hold == holdFailure:
		c.Reason, c.Message = ConditionReplicaFailure, counts+"; nothing moves until the spec is fixed (ReplicaFailure)"
	case o.spec.Rollout.Paused:
		c.Reason, c.Message = ReasonRolloutPaused, counts
	case len(held) > 0 && len(d.delete) == 0 && len(d.create) == 0 && inPlace == 0 && !waitsOnItsOwn(d.plan.Holds, rs, len(d.plan.Deleting)):
		c.Reason, c.Message = ReasonRolloutHeld, counts+"; held by "+kind+": "+strings.Join(held, "; ")
	case inPlace > 0:
		c.Reason, c.Message = ReasonRolloutProgressing, fmt.Sprintf("%s; changing %d in place", counts, inPlace)
	case len(d.delete) == 0 && len(d.create) == 0 && rs.Updated > rs.UpdatedAvailable:
		c.Reason, c.Message = ReasonRolloutProgressing, fmt.Sprintf("%s; waiting for %d on revision %s to become available",
			counts, rs.Updated-rs.UpdatedAvailable, o.revision)
	case len(d.delete) == 0 && len(d.create) == 0 && len(d.plan.Deleting) > 0:
		c.Reason, c.Message = ReasonRolloutProgressing, fmt.Sprintf("%s; waiting for %d being deleted to go",
			counts, len(d.plan.Deleting))
	default:
		c.Reason, c.Message = ReasonRolloutProgressing, counts
	}
	if c.Status == metav1.ConditionFalse && len(d.plan.Fallback) > 0 {
		c.Message += "; replacing, as they cannot change in place: " + fallbacks(d.plan.Fallback)
	}
	return c
}

// fallbacks names the first replicas of fs, each with why it is not
// changed in place.
func fallbacks(fs []replicaset.Fallback) string {
	const most = 3
	var parts []string
	for _, f := range fs[:min(len(fs), most)] {
		parts = append(parts, fmt.Sprintf("%s (%s)", f.Replica.Name, f.Reason))
	}
	if len(fs) > most {
		parts = append(parts, fmt.Sprintf("and %d more", len(fs)-most))
	}
	return strings.Join(parts, "; ")
}

// waitsOnItsOwn reports whether a rollout whose pass did nothing is only
// waiting for what it started: children on the current template coming up
// (not yet available) or children being deleted going, with every hold
// one that lifts when they do (MaxSurge, MaxUnavailable, LastAvailable),
// or one that only orders the rollout (MaxPerPass, ZoneByZone). Every
// healthy rollout waits so between steps; RolloutHeld is for a rollout
// that nothing under way will move (creates failing, a zone backing off,
// protection, OnDelete).
func waitsOnItsOwn(holds []replicaset.Hold, rs replicaset.RolloutStatus, deleting int) bool {
	if rs.Updated <= rs.UpdatedAvailable && deleting == 0 {
		return false
	}
	for _, h := range holds {
		switch h.By {
		case replicaset.HoldMaxSurge, replicaset.HoldMaxUnavailable, replicaset.HoldLastAvailable,
			replicaset.HoldMaxPerPass, replicaset.HoldZoneByZone:
		default:
			return false
		}
	}
	return true
}

// progress is where an owner's rollout stood when it last moved: its
// revision, its available children on that revision, its children on
// older ones, and when.
type progress struct {
	revision  string
	available int32
	old       int32
	at        time.Time
}

// moved reports whether the rollout moved from p to (revision, available,
// old): another revision, more available children on it, or fewer on
// older ones.
func (p progress) moved(revision string, available, old int32) bool {
	return p.at.IsZero() || p.revision != revision || available > p.available || old < p.old
}

// progressLog remembers, per owner, where its rollout last moved. It lives
// in memory: a restarted controller measures the progress deadline from
// its first pass.
type progressLog struct {
	mu sync.Mutex
	m  map[string]progress // by owner key
}

func (l *progressLog) get(key string) progress {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[key]
}

// record notes the owner's rollout as st reports it at now, when it moved
// (or first seen); a complete rollout is forgotten.
func (l *progressLog) record(key string, st Status, complete bool, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if complete {
		delete(l.m, key)
		return
	}
	old := st.Replicas - st.UpdatedReplicas
	if p := l.m[key]; p.moved(st.UpdateRevision, st.UpdatedAvailableReplicas, old) {
		if l.m == nil {
			l.m = map[string]progress{}
		}
		l.m[key] = progress{revision: st.UpdateRevision, available: st.UpdatedAvailableReplicas, old: old, at: now}
	}
}

func (l *progressLog) forget(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, key)
}

// stalled reports, with Spec.ProgressDeadline set, whether the rollout has
// not moved for that long at now, and when its deadline is (zero when it
// has none: no deadline, complete, or paused). A rollout that moves in
// this pass has its deadline a whole ProgressDeadline away.
func stalled(o *observation, rs replicaset.RolloutStatus) (bool, time.Time) {
	deadline := o.spec.ProgressDeadline
	switch {
	case o.spec.Rollout == nil || deadline <= 0 || rs.Complete || o.spec.Rollout.Paused:
		return false, time.Time{}
	case o.progress.moved(o.revision, int32(rs.UpdatedAvailable), int32(rs.Old)):
		return false, o.now.Add(deadline)
	}
	at := o.progress.at.Add(deadline)
	return !o.now.Before(at), at
}
