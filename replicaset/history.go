package replicaset

import (
	"slices"
	"strings"
	"time"
)

// DefaultZoneBackoff is how long a zone is avoided after a create failed
// there, for callers of History.After that have no reason to choose
// otherwise (vmprovider.Set and the Kubernetes binding use it).
const DefaultZoneBackoff = time.Minute

// History is what a binding keeps of a set between passes, beside what it
// keeps on each replica (Replica.Health, Replica.Preparing): the
// remediations' failures and storms, the zones creates avoid, and whether
// creates fail. It is the only state of a set Compute reads that is not
// in its Spec or its replicas. The binding passes it in Spec.History and
// keeps what After returns once it carried the plan out; the zero History
// is a set with nothing behind it.
type History struct {
	// Failures is how many replacements in a row failed: the replica
	// replaced had never been healthy since it started. Failures, Last,
	// Storming and Storm are read only with Spec.Remediation.
	Failures int
	// Last is when the last failed replacement was made.
	Last time.Time
	// Storming reports that a pass found more replicas unhealthy than
	// MaxUnhealthy (HealthStatus.Storm) and none has found the storm over
	// since; Storm is when a pass last found one over. The unhealthy
	// window of a replica unhealthy since before a storm ended runs from
	// its end (from now, for the pass that finds it over), so that the
	// replicas a storm caught are not remediated the moment it ends, as
	// they recover one by one. Both change only when a storm begins or
	// ends, so a binding writes them twice a storm, not every pass.
	Storming bool
	Storm    time.Time
	// ZoneBackoff lists the zones in which creates failed recently, and
	// until when each is avoided: while the pass's time is before an
	// entry's Until, Compute places new replicas in the other listed
	// zones (in all of them again when every listed zone is backing
	// off). Entries for zones not listed are ignored.
	ZoneBackoff []ZoneBackoff
	// CreatesFailing reports that the last pass's creates failed (quota,
	// capacity). Plans do not change, since creates are retried, but a
	// rollout held by MaxUnavailable says then that its surge replicas
	// are not coming and which setting would let it go on.
	CreatesFailing bool
}

// ZoneBackoff says that creates in Zone are avoided until Until.
type ZoneBackoff struct {
	// Zone is the zone's name, as in Spec.Zones.
	Zone string
	// Until is when the zone may be tried again.
	Until time.Time
}

// After returns h once p, planned at now, was carried out, for the next
// pass's Spec.History. created is how many of p's creates succeeded, and
// failed lists the zones in which one failed (execute.Result.FailedZones):
// each is avoided until now plus avoid (DefaultZoneBackoff when avoid is
// zero), and entries whose time is up are dropped. For the remediations,
// p is the plan as carried out: its Replace lists only the replacements
// made (their replicas deleted, or preparing to leave). A storm's
// beginning and end (p.Health.Storm) are recorded; each replica replaced
// that was never healthy (neither since it started nor before a restart),
// or whose launch gate never opened, is a failure; a replica that started
// no earlier than the last failure and has been healthy since
// (p.Health.Recovered) clears the failures. CreatesFailing is set when
// created is below p.Create, and cleared otherwise, by a pass that plans
// no creates too.
func (h History) After(p Plan, created int, failed []string, avoid time.Duration, now time.Time) History {
	if p.Health.Recovered {
		h.Failures, h.Last = 0, time.Time{}
	}
	switch {
	case p.Health.Storm && !h.Storming:
		h.Storming = true
	case !p.Health.Storm && h.Storming:
		h.Storming, h.Storm = false, now
	}
	for i := range p.Replace {
		// A replica whose launch gate never opened never served, whatever
		// its health check said: its replacement is a failure too.
		if hl := p.Replace[i].Health; hl == nil || !hl.Healthy && !hl.HealthyBefore || p.Replace[i].LaunchGated {
			h.Failures++
			h.Last = now
		}
	}
	h.CreatesFailing = p.Create > 0 && created < p.Create
	if avoid == 0 {
		avoid = DefaultZoneBackoff
	}
	backoff := slices.DeleteFunc(slices.Clone(h.ZoneBackoff), func(b ZoneBackoff) bool {
		return !now.Before(b.Until) || slices.Contains(failed, b.Zone)
	})
	for _, z := range failed {
		if !slices.ContainsFunc(backoff, func(b ZoneBackoff) bool { return b.Zone == z }) {
			backoff = append(backoff, ZoneBackoff{Zone: z, Until: now.Add(avoid)})
		}
	}
	slices.SortFunc(backoff, func(a, b ZoneBackoff) int { return strings.Compare(a.Zone, b.Zone) })
	h.ZoneBackoff = slices.Clip(backoff)
	if len(h.ZoneBackoff) == 0 {
		h.ZoneBackoff = nil
	}
	return h
}
