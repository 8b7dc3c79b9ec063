package vmprovider_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/naming"
	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/vmprovider"
)

// narrowSource is a rand.Source with two values, so that naming.Random
// draws from 32 names and offers taken ones as often as ordinals do: the
// names a Set must not reuse are then really asked for. Its values leave
// the suffix draw no bias to correct, so it never loops.
type narrowSource struct{ pick rand.Source }

func (s narrowSource) Uint64() uint64 {
	return [2]uint64{0x5555555555555555, 0xaaaaaaaaaaaaaaaa}[s.pick.Uint64()&1]
}

// TestSet_LostAnswersUnderPartitions scales a Set over two endpoints
// (east: zones a and b; west: zone c), with MaxPerPass 2 and both naming
// schemes, while endpoints are cut off and heal and creates and deletes
// lose their answers (the change made, the caller told it failed), often
// with the endpoint cut off right after, and creates are cut off before
// they take effect, and creates outlive their calls (vmprovider.VM.Creating:
// the VM listed as being made until the work ends, or a Delete cancels
// it). At every pass: no change is asked of an endpoint cut
// off when the pass began; no name is on both endpoints; the planner is
// never handed contradictory replicas; and a pass that creates leaves at
// most max(desired, unknown) + 1 VMs. Once every endpoint answers, the Set
// converges on the count with nothing leaked: exactly desired VMs of the
// owner on the endpoints, each once, and a Status without error.
func TestSet_LostAnswersUnderPartitions(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ctx := context.Background()
		p := newPartitioned()
		owner := vmprovider.Owner{UID: "uid-1", Name: "ns/web"}
		var names naming.Namer = naming.Indexed{Base: "web"}
		if rapid.Bool().Draw(t, "random names") {
			names = naming.Random{Base: "web", Source: narrowSource{rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1)}}
		}
		set := &vmprovider.Set{
			Provider:    p.e,
			Template:    vmprovider.Spec{Owner: owner, PowerOn: true},
			Policy:      deletionpolicy.Random{Seed: 1},
			Spec:        replicaset.Spec{Zones: []string{"a", "b", "c"}, MaxPerPass: 2},
			Zones:       map[string]vmprovider.Placement{"a": {Endpoint: "east"}, "b": {Endpoint: "east"}, "c": {Endpoint: "west"}},
			ZoneBackoff: 2 * time.Minute,
			Names:       names,
		}
		at := now
		desired := rapid.IntRange(0, 8).Draw(t, "desired")
		endpoint := rapid.SampledFrom([]string{"east", "west"})
		for pass := range rapid.IntRange(1, 30).Draw(t, "passes") {
			switch rapid.IntRange(0, 8).Draw(t, "event") {
			case 0:
				p.setCut(endpoint.Draw(t, "cut"), true)
			case 1:
				p.setCut(endpoint.Draw(t, "heal"), false)
			case 2:
				desired = rapid.IntRange(0, 8).Draw(t, "desired")
			case 3:
				p.loseNext(endpoint.Draw(t, "lose a create on"), loss{op: "create", cut: rapid.Bool().Draw(t, "then cut")})
			case 4:
				p.loseNext(endpoint.Draw(t, "lose a delete on"), loss{op: "delete", cut: rapid.Bool().Draw(t, "then cut")})
			case 5:
				p.loseNext(endpoint.Draw(t, "cut a create on"), loss{op: "create", cut: true, before: true})
			case 6:
				p.outliveNext(endpoint.Draw(t, "a create outlives its call on"))
			case 7:
				p.fakes[endpoint.Draw(t, "creates end on")].Finish()
			}
			cutAtStart := map[string]bool{"east": p.isCut("east"), "west": p.isCut("west")}
			p.mu.Lock()
			p.changes = nil
			p.mu.Unlock()
			at = at.Add(time.Minute)
			plan, _, err := set.Scale(ctx, desired, at)
			if errors.Is(err, replicaset.ErrInvalidReplica) || errors.Is(err, vmprovider.ErrDuplicateName) || errors.Is(err, naming.ErrExhausted) {
				t.Fatalf("pass %d: %v", pass, err)
			}
			if (cutAtStart["east"] || cutAtStart["west"]) && !errors.Is(err, vmprovider.ErrUnreachable) {
				t.Fatalf("pass %d with %v cut off: error %v, want ErrUnreachable", pass, cutAtStart, err)
			}
			for _, c := range p.changes {
				if ep := c[strings.LastIndexByte(c, ' ')+1:]; cutAtStart[ep] {
					t.Fatalf("pass %d: %s, cut off since the pass began", pass, c)
				}
			}
			east, west := p.on(t, "east", owner.UID), p.on(t, "west", owner.UID)
			if both := common(east, west); len(both) > 0 {
				t.Fatalf("pass %d: %v on both endpoints (east %v, west %v)", pass, both, east, west)
			}
			if total, bound := len(east)+len(west), max(desired, len(plan.Unknown))+1; plan.Create > 0 && total > bound {
				t.Fatalf("pass %d created to %d VMs (east %v, west %v), over %d (desired %d, %d unknown): %v", pass, total, east, west, bound, desired, len(plan.Unknown), plan)
			}
		}

		p.mu.Lock()
		clear(p.losses)
		clear(p.outlive)
		p.mu.Unlock()
		p.fakes["east"].Finish()
		p.fakes["west"].Finish()
		p.setCut("east", false)
		p.setCut("west", false)
		untilQuiet(t, func() (replicaset.Plan, error) {
			at = at.Add(time.Minute)
			plan, _, err := set.Scale(ctx, desired, at)
			return plan, err
		})
		east, west := p.on(t, "east", owner.UID), p.on(t, "west", owner.UID)
		if both := common(east, west); len(both) > 0 || len(east)+len(west) != desired {
			t.Fatalf("settled with east %v and west %v, want %d VMs, each name once", east, west, desired)
		}
		if st, err := set.Status(ctx, at); err != nil || st.Replicas != desired {
			t.Fatalf("settled Status = %+v, %v; want %d replicas and no error", st, err, desired)
		}
	})
}

// common returns the names in both a and b.
func common(a, b []string) []string {
	var out []string
	for _, n := range a {
		if slices.Contains(b, n) {
			out = append(out, n)
		}
	}
	return out
}
