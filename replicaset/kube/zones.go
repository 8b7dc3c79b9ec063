package kube

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset"
)

// ZoneLabel is the label a child's zone is read from and written to when
// the Adapter is not a [Zoner]: Kubernetes' well-known
// topology.kubernetes.io/zone.
const ZoneLabel = corev1.LabelTopologyZone

// Zoner is implemented by an Adapter whose children record their zone
// somewhere else than the [ZoneLabel] label, such as a field of their
// spec, or whose zone must be set where something acts on it: a Pod is
// placed by the scheduler, which reads no label of the Pod's ([PodZones]
// is a ready Zoner for Pods). An Adapter that is not a Zoner gets the
// label. The Reconciler finds it by a type assertion, so an Adapter whose
// methods have another signature is silently not a Zoner (set-up logs
// which optional interfaces it found); check it at compile time:
//
//	var _ kube.Zoner[*corev1.Pod] = poolAdapter{}
type Zoner[C client.Object] interface {
	// Zone returns the child's zone, or "" when it has none. The child is
	// the cache's own object: read it, never modify it.
	Zone(child C) string
	// SetZone puts a new child, as NewChild returned it, in zone (one of
	// the owner's Spec.Zones) before it is created.
	SetZone(child C, zone string)
}

// zoneOf is the zone of child c.
func (r *Reconciler[O, C]) zoneOf(c C) string {
	if z, ok := any(r.Adapter).(Zoner[C]); ok {
		return z.Zone(c)
	}
	return c.GetLabels()[ZoneLabel]
}

// setZone puts the new child c in zone.
func (r *Reconciler[O, C]) setZone(c C, zone string) {
	if z, ok := any(r.Adapter).(Zoner[C]); ok {
		z.SetZone(c, zone)
		return
	}
	l := c.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[ZoneLabel] = zone
	c.SetLabels(l)
}

// checkZones refuses zones that the ZoneLabel label cannot hold, when
// zones are written to it (the Adapter is not a Zoner, or is PodZones).
func (r *Reconciler[O, C]) checkZones(zones []string) error {
	_, zoner := any(r.Adapter).(Zoner[C])
	if _, labels := any(r.Adapter).(labelZoner); zoner && !labels {
		return nil
	}
	for _, z := range zones {
		if errs := validation.IsValidLabelValue(z); len(errs) > 0 {
			return fmt.Errorf("zone %q cannot be the value of label %s: %s", z, ZoneLabel, strings.Join(errs, "; "))
		}
	}
	return nil
}

// zoneBackoffs remembers, per owner, the zones' part of its
// replicaset.History (ZoneBackoff, CreatesFailing: the remediations' part
// is on the owner, historyFor) and the children seen failing in a zone
// (each backs its zone off once). The history changes only through
// replicaset.History.After, in settle. It lives in memory: a restarted
// controller starts with no zone backing off.
type zoneBackoffs struct {
	mu sync.Mutex
	m  map[string]*ownerZones // by owner key
}

type ownerZones struct {
	history replicaset.History // its zones' part only (zonesPart)
	failing []string           // UIDs of children seen failing in a zone
}

func (b *zoneBackoffs) get(key string) *ownerZones {
	if b.m == nil {
		b.m = map[string]*ownerZones{}
	}
	if b.m[key] == nil {
		b.m[key] = &ownerZones{}
	}
	return b.m[key]
}

// history is the zones' part of the owner's History, as the last pass
// left it.
func (b *zoneBackoffs) history(key string) replicaset.History {
	b.mu.Lock()
	defer b.mu.Unlock()
	if oz := b.m[key]; oz != nil {
		h := oz.history
		h.ZoneBackoff = slices.Clone(h.ZoneBackoff)
		return h
	}
	return replicaset.History{}
}

// record keeps the zones' part of h (a verdict's: the History after the
// pass) as the owner's.
func (b *zoneBackoffs) record(key string, h replicaset.History) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h = zonesPart(h)
	if h.ZoneBackoff == nil && !h.CreatesFailing && (b.m[key] == nil || len(b.m[key].failing) == 0) {
		delete(b.m, key)
		return
	}
	b.get(key).history = h
}

// zonesPart is h without its remediations' part.
func zonesPart(h replicaset.History) replicaset.History {
	return replicaset.History{ZoneBackoff: slices.Clone(h.ZoneBackoff), CreatesFailing: h.CreatesFailing}
}

// failing returns the UIDs of the owner's children seen failing in a zone.
func (b *zoneBackoffs) failing(key string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if oz := b.m[key]; oz != nil {
		return slices.Clone(oz.failing)
	}
	return nil
}

// setFailing records the children failing in a zone that a pass saw.
func (b *zoneBackoffs) setFailing(key string, uids []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(uids) == 0 && b.m[key] == nil {
		return
	}
	b.get(key).failing = slices.Clone(uids)
}

// entries is the number of owners in the table.
func (b *zoneBackoffs) entries() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.m)
}

func (b *zoneBackoffs) forget(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, key)
}

// unknownIn marks the replicas in the spec's unreachable zones as a pass
// knows them: unknown (Replica.Unreachable), not ready and in no known
// phase, whatever their objects last said, which was before their zone
// stopped answering.
func unknownIn(o *observation, rs []replicaset.Replica) {
	if len(o.spec.Unreachable) == 0 {
		return
	}
	for i := range rs {
		if slices.Contains(o.spec.Unreachable, rs[i].Zone) {
			rs[i].Ready, rs[i].Phase, rs[i].Unreachable = false, replicaset.PhaseUnknown, true
		}
	}
}

// unknownCount says how many replicas are unknown.
func unknownCount(n int) string {
	if n == 1 {
		return "1 replica there is unknown"
	}
	return fmt.Sprintf("%d replicas there are unknown", n)
}

// zoneStatus is the status per zone of the members, with each zone's
// backoff and whether it is unreachable; nil when the spec lists no
// zones.
func zoneStatus(o *observation, members []replicaset.Replica, backoff []replicaset.ZoneBackoff) []replicaset.ZoneStatus {
	if len(o.spec.Zones) == 0 {
		return nil
	}
	out := replicaset.SummarizeZones(members, o.spec.Zones, o.spec.MinReady, o.now)
	for i := range out {
		out[i].Unreachable = slices.Contains(o.spec.Unreachable, out[i].Zone)
		for _, b := range backoff {
			if b.Zone == out[i].Zone {
				out[i].BackoffUntil = b.Until
			}
		}
	}
	return out
}

// balanced reports whether the live children of the listed zones differ
// by at most one and none lives in an unlisted zone or in none.
func balanced(zones []replicaset.ZoneStatus) bool {
	lo, hi := -1, 0
	for _, z := range zones {
		if !z.Listed {
			if z.Replicas > 0 {
				return false
			}
			continue
		}
		if lo < 0 || z.Replicas < lo {
			lo = z.Replicas
		}
		hi = max(hi, z.Replicas)
	}
	return hi-lo <= 1
}

// zonesCondition is ZonesBalanced: True when the children are spread
// evenly now and the pass's plan keeps them so; otherwise False, saying
// why they are not or will not be once the plan is carried out.
func zonesCondition(o *observation, d decision, zones []replicaset.ZoneStatus, cond func(t string, ok bool, reason, msg string) metav1.Condition) metav1.Condition {
	spread := "zones hold " + replicaset.Spread(zones) + " live replicas"
	if d.hold == holdFailure {
		return cond(ConditionZonesBalanced, false, ConditionReplicaFailure, spread)
	}
	var failing []string
	for _, z := range zones {
		if z.Listed && !z.BackoffUntil.IsZero() {
			failing = append(failing, fmt.Sprintf("%s (until %s)", z.Zone, z.BackoffUntil.UTC().Format(time.RFC3339)))
		}
	}
	avoiding := ""
	switch listed := len(o.spec.Zones); {
	case len(failing) == listed && listed > 0:
		avoiding = "; every zone backs off after failures (" + strings.Join(failing, ", ") + "), so new replicas may go to any"
	case len(failing) > 0:
		avoiding = "; new replicas avoid " + strings.Join(failing, ", ") + " after failures there"
	}
	var away []string
	for _, z := range zones {
		if z.Unreachable {
			away = append(away, z.Zone)
		}
	}
	if len(away) > 0 && d.hold != holdPaused && d.hold != holdDeleting {
		return cond(ConditionZonesBalanced, false, ReasonZoneUnreachable, fmt.Sprintf(
			"%s: %s unreachable, so %s: none is deleted or counted as gone, and at most the surge stands in elsewhere%s",
			spread, strings.Join(away, ", "), unknownCount(len(d.plan.Unknown)), avoiding))
	}
	if balanced(zones) && d.plan.Unbalanced == "" {
		return cond(ConditionZonesBalanced, true, ConditionZonesBalanced, spread+avoiding)
	}
	if n, ok := surgeBalanced(o, d); ok {
		return cond(ConditionZonesBalanced, true, ReasonRolloutSurge, fmt.Sprintf(
			"%s: within one of each other but for the rollout's surge of %d, the replicas it replaces going as their replacements become available%s",
			spread, n, avoiding))
	}
	// The plan's reason covers the listed zones; children in no listed
	// zone, left alone, are said here.
	msg, stuck := d.plan.Unbalanced, false
	if msg == "" {
		strays, protected := 0, 0
		for _, m := range d.members {
			if r := &m.replica; !r.Deleting && !slices.Contains(o.spec.Zones, r.Zone) {
				strays++
				if r.Protected {
					protected++
				}
			}
		}
		switch stuck = strays > 0 && strays == protected; {
		case !o.spec.Rebalance:
			msg = spread + ": replicas in no listed zone are not moved without rebalance"
		case stuck:
			msg = spread + ": replicas in no listed zone are protected from scale-in, so rebalancing cannot move them"
		default:
			msg = spread + ": rebalancing, one replica at a time, create before delete"
		}
	}
	acts := d.plan.Create > 0 || len(d.plan.Delete) > 0
	switch {
	case d.hold == holdPaused:
		return cond(ConditionZonesBalanced, false, ReasonPaused, msg)
	case d.hold == holdDeleting:
		return cond(ConditionZonesBalanced, false, ReasonOwnerDeleting, msg)
	case len(failing) > 0:
		return cond(ConditionZonesBalanced, false, ReasonZoneFailing, msg+avoiding)
	case d.plan.Shortfall.Count > 0:
		return cond(ConditionZonesBalanced, false, ReasonScaleInProtected, msg)
	case acts && d.plan.Unbalanced == "":
		return cond(ConditionZonesBalanced, false, ReasonScaling, spread+": this pass balances them")
	case o.spec.Rebalance && !stuck:
		return cond(ConditionZonesBalanced, false, ReasonRebalancing, msg)
	case d.capped:
		return cond(ConditionZonesBalanced, false, ReasonPerPassCap, msg)
	}
	return cond(ConditionZonesBalanced, false, ReasonUnbalanced, msg)
}
