package replicaset

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Status is what a replica set reports about its replicas, computed from what
// was observed.
type Status struct {
	// Replicas counts the live replicas: observed and not being deleted.
	Replicas int
	// Ready counts live replicas that are ready.
	Ready int
	// Available counts live replicas that have been ready for at least the
	// availability window (see Replica.Available).
	Available int
	// Terminating counts replicas that are being deleted. They are never
	// included in Replicas, Ready or Available.
	Terminating int
	// Preparing counts live replicas preparing to leave (Replica.Preparing):
	// their pre-delete hooks run. They are included in Replicas, and in
	// Ready and Available as their readiness says.
	Preparing int
	// Unknown counts live replicas whose state is unknown
	// (Replica.Unreachable): included in Replicas, never in Ready or
	// Available.
	Unknown int
}

// Summarize computes the status of current at now, with minReady as the
// availability window.
func Summarize(current []Replica, minReady time.Duration, now time.Time) Status {
	var s Status
	for i := range current {
		r := &current[i]
		if r.Deleting {
			s.Terminating++
			continue
		}
		s.Replicas++
		if r.Preparing != nil {
			s.Preparing++
		}
		if r.Unreachable {
			s.Unknown++
			continue
		}
		if r.ready() {
			s.Ready++
		}
		if r.Available(minReady, now) {
			s.Available++
		}
	}
	return s
}

// ZoneStatus is the status of a set's replicas in one zone.
type ZoneStatus struct {
	// Zone is the zone's name; empty for replicas whose zone is unknown.
	Zone string
	// Listed reports whether the spec lists the zone (Spec.Zones).
	Listed bool
	// Replicas, Ready and Available count the zone's live replicas as
	// Status does.
	Replicas, Ready, Available int
	// BackoffUntil, when not zero, is when creates in the zone resume
	// (History.ZoneBackoff): until then new replicas go to the other
	// zones. SummarizeZones leaves it zero; a binding that keeps the
	// History fills it in (the Kubernetes binding's status and
	// vmprovider.Set.ZoneStatus do).
	BackoffUntil time.Time
	// Unreachable reports that the zone is in Spec.Unreachable: its
	// replicas are unknown. SummarizeZones leaves it false; a binding
	// fills it in (the Kubernetes binding's status and
	// vmprovider.Set.ZoneStatus do).
	Unreachable bool
}

// SummarizeZones computes the status of current per zone at now: one
// entry for each of zones in their order (replicas or not), then one for
// each other zone a live replica is in, by name, the unknown zone ("")
// first. Replicas being deleted count nowhere. zones is meant to be
// Spec.Zones, which Compute requires to be distinct and non-empty; a
// repeated zone gets an empty second entry.
func SummarizeZones(current []Replica, zones []string, minReady time.Duration, now time.Time) []ZoneStatus {
	out := make([]ZoneStatus, len(zones))
	at := make(map[string]int, len(zones))
	for i, z := range zones {
		out[i] = ZoneStatus{Zone: z, Listed: true}
		at[z] = i
	}
	listed := len(out)
	for i := range current {
		r := &current[i]
		if r.Deleting {
			continue
		}
		k, ok := at[r.Zone]
		if !ok {
			k = len(out)
			at[r.Zone] = k
			out = append(out, ZoneStatus{Zone: r.Zone})
		}
		s := &out[k]
		s.Replicas++
		if r.ready() {
			s.Ready++
		}
		if r.Available(minReady, now) {
			s.Available++
		}
	}
	slices.SortFunc(out[listed:], func(a, b ZoneStatus) int { return strings.Compare(a.Zone, b.Zone) })
	return out
}

// Spread renders zones, as SummarizeZones returns them, on one line:
// "a=2 b=1 c=1", live replicas per zone in order, with "?" for the
// replicas in no zone. It suits a printer column or a log line.
func Spread(zones []ZoneStatus) string {
	parts := make([]string, len(zones))
	for i, z := range zones {
		name := z.Zone
		if name == "" {
			name = "?"
		}
		parts[i] = fmt.Sprintf("%s=%d", name, z.Replicas)
	}
	return strings.Join(parts, " ")
}
