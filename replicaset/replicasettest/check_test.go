package replicasettest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/replicasettest"
)

// TestCheck_PlantedMistakes: each invariant of Check is seen failing on a
// plan with a mistake planted, and a plan without one passes.
func TestCheck_PlantedMistakes(t *testing.T) {
	now := replicasettest.Now()
	rep := func(name, zone string) replicaset.Replica {
		return replicaset.Replica{Name: name, UID: "uid-" + name, Phase: replicaset.PhaseRunning, Ready: true,
			ReadySince: now.Add(-time.Hour), Revision: "v1", Zone: zone}
	}
	a0, a1, a2, b0, p0 := rep("a0", "a"), rep("a1", "a"), rep("a2", "a"), rep("b0", "b"), rep("p0", "a")
	a2.InPlace = replicaset.InPlacePowerCycle
	p0.Protected = true
	in := replicasettest.Input{
		Spec: replicaset.Spec{Desired: 3, Revision: "v2", Zones: []string{"a", "b"}, Unreachable: []string{"b"},
			Strategy:  replicaset.Strategy{MaxUnavailable: replicaset.Count(1), Method: replicaset.UpdateInPlaceIfPossible},
			Lifecycle: &replicaset.Lifecycle{}},
		Replicas: []replicaset.Replica{a0, a1, a2, b0, p0},
		Now:      now,
	}
	ok := replicaset.Plan{Unknown: []replicaset.Replica{b0}}
	with := func(f func(p *replicaset.Plan)) replicaset.Plan {
		p := ok
		f(&p)
		return p
	}
	for _, tc := range []struct {
		name, want string
		plan       replicaset.Plan
	}{
		{"none", "", ok},
		{"a replica not in the input", "identity:", with(func(p *replicaset.Plan) {
			p.Prepare = []replicaset.Replica{{Name: "ghost"}}
		})},
		{"in two lists", "identity:", with(func(p *replicaset.Plan) {
			p.Prepare, p.Restart = []replicaset.Replica{a0}, []replicaset.Replica{a0}
		})},
		{"acted on in an unreachable zone", "unreachable:", with(func(p *replicaset.Plan) { p.Prepare = []replicaset.Replica{b0} })},
		{"a create without its zone", "caps:", with(func(p *replicaset.Plan) { p.Create = 1 })},
		{"a protected replica prepares", "protected:", with(func(p *replicaset.Plan) { p.Prepare = []replicaset.Replica{p0} })},
		{"deleted without preparing", "hooks:", with(func(p *replicaset.Plan) { p.Delete = []replicaset.Replica{a0} })},
		{"updated in place though it cannot be", "in place:", with(func(p *replicaset.Plan) {
			p.Update = []replicaset.Update{{Replica: a0}}
		})},
		{"restarted without remediation", "remediation:", with(func(p *replicaset.Plan) { p.Restart = []replicaset.Replica{a0} })},
		{"below the availability floor", "availability:", with(func(p *replicaset.Plan) {
			p.Prepare = []replicaset.Replica{a0, a1}
			p.PrepareUpdate = []replicaset.Replica{a2}
		})},
		{"below the serving floor", "serving:", with(func(p *replicaset.Plan) {
			p.Prepare = []replicaset.Replica{a0, a1}
			p.PrepareUpdate = []replicaset.Replica{a2}
		})},
		{"over the surge", "surge:", with(func(p *replicaset.Plan) { p.Create, p.CreateZones = 2, []string{"a", "a"} })},
		{"a fallback twice", "fallback:", with(func(p *replicaset.Plan) {
			p.Fallback = []replicaset.Fallback{{Replica: a0, Reason: "x"}, {Replica: a0, Reason: "x"}}
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := replicasettest.Check(in, tc.plan)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Check(%v) = %v, want nil", tc.plan, err)
			case tc.want != "" && (err == nil || !strings.Contains("\n"+err.Error(), "\n"+tc.want)):
				t.Errorf("Check(%v) = %v, want a violation of %q", tc.plan, err, tc.want)
			}
		})
	}
}
