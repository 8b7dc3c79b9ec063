package kube

import (
	corev1 "k8s.io/api/core/v1"
)

// PodZones is a ready [Zoner] for Pod children: it puts a Pod in a zone
// where the scheduler acts on it, a node selector on [ZoneLabel], and
// labels the Pod with its zone too (for kubectl get -L and selectors).
// The binding's default, the label alone, would record a Pod's zone
// without placing it. An Adapter for Pods embeds it to be a Zoner:
//
//	type poolAdapter struct {
//		kube.PodZones
//		// …
//	}
//
//	var _ kube.Zoner[*corev1.Pod] = poolAdapter{}
//
// Zones must then be valid label values, as without a Zoner: a spec
// listing another is refused.
type PodZones struct{}

var _ Zoner[*corev1.Pod] = PodZones{}

// Zone returns the zone p's node selector requires (its ZoneLabel entry)
// or, when it requires none, the zone of p's ZoneLabel label, which is
// where the binding reads the zone of a child that has no Zoner: an
// orphan Pod placed by other means and labelled with its zone is counted
// in that zone. A Pod with neither is in no zone. p is the cache's own
// object: Zone only reads it.
func (PodZones) Zone(p *corev1.Pod) string {
	if z := p.Spec.NodeSelector[ZoneLabel]; z != "" {
		return z
	}
	return p.Labels[ZoneLabel]
}

// SetZone puts the new Pod p in zone: ZoneLabel in its node selector, so
// the scheduler places it on a node of that zone, and as a label.
func (PodZones) SetZone(p *corev1.Pod, zone string) {
	if p.Spec.NodeSelector == nil {
		p.Spec.NodeSelector = map[string]string{}
	}
	p.Spec.NodeSelector[ZoneLabel] = zone
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[ZoneLabel] = zone
}

// zonesInLabels marks PodZones as a Zoner that writes zones where only
// label values fit, so the Reconciler checks them as it does without a
// Zoner (checkZones). An Adapter that embeds PodZones has it too.
func (PodZones) zonesInLabels() {}

// labelZoner is a Zoner whose zones must be label values.
type labelZoner interface{ zonesInLabels() }
