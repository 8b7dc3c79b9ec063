package replicagen

import (
	"fmt"
	"time"

	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/replicaset"
)

// Now returns the time every generated pass is computed at; generated
// creation and ready times lie within an hour of it.
func Now() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }

// moment draws a time near Now, or the zero time (unknown) one time in ten.
func moment(t *rapid.T, label string) time.Time {
	if rapid.IntRange(0, 9).Draw(t, label+"Unknown") == 0 {
		return time.Time{}
	}
	return Now().Add(time.Duration(rapid.IntRange(-3600, 60).Draw(t, label)) * time.Second)
}

// Replica generates one replica with every field drawn. Names come from a
// small space ("r0" … "r199") so that collisions, which SliceOf must avoid,
// are exercised too.
func Replica() *rapid.Generator[replicaset.Replica] {
	return rapid.Custom(func(t *rapid.T) replicaset.Replica {
		n := rapid.IntRange(0, 199).Draw(t, "name")
		r := replicaset.Replica{
			Name:              fmt.Sprintf("r%d", n),
			UID:               fmt.Sprintf("uid-%d", n),
			CreatedAt:         moment(t, "created"),
			Deleting:          rapid.IntRange(0, 4).Draw(t, "deleting") == 0,
			MarkedForDeletion: rapid.IntRange(0, 4).Draw(t, "marked") == 0,
			Protected:         rapid.IntRange(0, 5).Draw(t, "protected") == 0,
			DeletionCost:      int64(rapid.IntRange(-2, 2).Draw(t, "cost")),
			Phase:             replicaset.Phase(rapid.IntRange(0, 3).Draw(t, "phase")),
			Ready:             rapid.Bool().Draw(t, "ready"),
			ReadySince:        moment(t, "readySince"),
		}
		if rapid.Bool().Draw(t, "hasOrdinal") {
			r.HasOrdinal, r.Ordinal = true, n
		}
		r.Zone = rapid.SampledFrom(zoneNames).Draw(t, "zone")
		return r
	})
}

// Replicas generates up to max replicas with distinct names and UIDs.
func Replicas(max int) *rapid.Generator[[]replicaset.Replica] {
	return rapid.SliceOfNDistinct(Replica(), 0, max, func(r replicaset.Replica) string { return r.Name })
}

// zoneNames are the zones replicas are drawn in: "" (none known), those
// Zones lists, and one it never lists.
var zoneNames = []string{"", "a", "b", "c", "x"}

// Spec generates a valid spec: small desired counts and caps (0 meaning the
// default) so that capped passes are common; half of them spread over
// zones (some of "a", "b", "c" in any order, with backoffs now and then).
func Spec() *rapid.Generator[replicaset.Spec] {
	return rapid.Custom(func(t *rapid.T) replicaset.Spec {
		s := replicaset.Spec{
			Desired:         rapid.IntRange(0, 60).Draw(t, "desired"),
			MaxPerPass:      rapid.SampledFrom([]int{0, 1, 2, 3, 5, 8}).Draw(t, "maxPerPass"),
			ReplaceDeleting: rapid.Bool().Draw(t, "replaceDeleting"),
			MinReady:        time.Duration(rapid.IntRange(0, 120).Draw(t, "minReady")) * time.Second,
			Seed:            rapid.Uint64().Draw(t, "seed"),
		}
		if rapid.Bool().Draw(t, "spread") {
			s.Zones = Zones().Draw(t, "zones")
			for _, z := range s.Zones {
				if rapid.IntRange(0, 3).Draw(t, "failing") == 0 {
					s.History.ZoneBackoff = append(s.History.ZoneBackoff, replicaset.ZoneBackoff{Zone: z, Until: moment(t, "until")})
				}
			}
		}
		return s
	})
}

// Zones generates one to three distinct zones of "a", "b" and "c", in any
// order.
func Zones() *rapid.Generator[[]string] {
	return rapid.Custom(func(t *rapid.T) []string {
		all := rapid.Permutation([]string{"a", "b", "c"}).Draw(t, "order")
		return all[:rapid.IntRange(1, 3).Draw(t, "spread")]
	})
}

// Policy draws one of the policies registered in deletionpolicy.Default
// and returns its name with it (Random's seed comes from the drawn Spec).
func Policy(t *rapid.T) (string, deletionpolicy.Policy) {
	reg := deletionpolicy.Default()
	name := rapid.SampledFrom(reg.Names()).Draw(t, "policy")
	p, err := reg.Lookup(name)
	if err != nil {
		t.Fatalf("Lookup(%q) of a listed name: %v", name, err)
	}
	return name, p
}

// Names returns n new replica names, prefix followed by the numbers after
// *serial, which it advances.
func Names(prefix string, serial *int, n int) []string {
	out := make([]string, n)
	for i := range out {
		*serial++
		out[i] = fmt.Sprintf("%s%d", prefix, *serial)
	}
	return out
}

// Apply returns the replicas a platform would hold after carrying out plan
// on current: created gives the new replicas' names (running and ready, in
// plan.CreateZones' zones when it has them);
// replicas in plan.Delete are being deleted; and when finish is true every
// replica being deleted is gone. It does not modify current.
func Apply(current []replicaset.Replica, plan replicaset.Plan, created []string, finish bool) []replicaset.Replica {
	doomed := make(map[string]bool, len(plan.Delete))
	for _, r := range plan.Delete {
		doomed[r.Name] = true
	}
	var out []replicaset.Replica
	for _, r := range current {
		r.Deleting = r.Deleting || doomed[r.Name]
		if r.Deleting && finish {
			continue
		}
		out = append(out, r)
	}
	for i, name := range created {
		r := replicaset.Replica{Name: name, UID: "uid-" + name, CreatedAt: Now(),
			Phase: replicaset.PhaseRunning, Ready: true, ReadySince: Now()}
		if i < len(plan.CreateZones) {
			r.Zone = plan.CreateZones[i]
		}
		out = append(out, r)
	}
	return out
}
