package replicaset

import (
	"slices"
	"strings"
	"time"
)

// DefaultZoneBackoff is how long a zone is avoided after a create failed
// there, for callers that keep a Backoff and have no reason to choose
// otherwise (vmprovider.Set and the Kubernetes binding use it).
const DefaultZoneBackoff = time.Minute

// Backoff remembers, for a caller of Compute, until when creates avoid
// each zone after failures there: pass Active as Spec.ZoneBackoff, and
// give Fail the zones whose creates failed (execute.Result.FailedZones).
// The zero value is ready to use; it is not safe for concurrent use.
type Backoff struct {
	until map[string]time.Time
}

// Fail avoids each of zones until until.
func (b *Backoff) Fail(zones []string, until time.Time) {
	if len(zones) == 0 {
		return
	}
	if b.until == nil {
		b.until = map[string]time.Time{}
	}
	for _, z := range zones {
		b.until[z] = until
	}
}

// Active returns the zones still avoided at now, by name, and forgets
// those whose time is up.
func (b *Backoff) Active(now time.Time) []ZoneBackoff {
	var out []ZoneBackoff
	for z, until := range b.until {
		if !now.Before(until) {
			delete(b.until, z)
			continue
		}
		out = append(out, ZoneBackoff{Zone: z, Until: until})
	}
	slices.SortFunc(out, func(a, b ZoneBackoff) int { return strings.Compare(a.Zone, b.Zone) })
	return out
}
