package kube

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/replicaset"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/passes.txt from the code's output")

// passCase is one pass: an observation, the reconciler's rules, and what
// apply did (nil: everything succeeded).
type passCase struct {
	name    string
	obs     *observation
	rules   rules
	outcome func(decision) outcome
}

// passCases are the edge cases of one pass. Their rendered decisions and
// verdicts are in testdata/passes.txt, reviewed like code; go test
// -run TestPasses -rewrite regenerates it.
func passCases() []passCase {
	random := rules{policies: deletionpolicy.Default(), naming: RandomNames}
	return []passCase{
		{"scale up from zero with ordinal names", observed(3, nil), ordinal, nil},
		{"scale down, HighestOrdinal removes the highest ordinals first",
			observed(2, kids(kid("web-0"), kid("web-1"), kid("web-2"), kid("web-10")),
				func(o *observation) { o.spec.DeletePolicy = deletionpolicy.NameHighestOrdinal }), ordinal, nil},
		{"HighestOrdinal with random names is a failure, not a fallback",
			observed(1, kids(kid("web-a"), kid("web-b")),
				func(o *observation) { o.spec.DeletePolicy = deletionpolicy.NameHighestOrdinal }), random, nil},
		{"paused: no creates, adoptions or releases; reason Paused",
			observed(3, kids(kid("web-0"), kid("stray", unlabelled), kid("found", orphan)),
				func(o *observation) { o.spec.Paused = true }), ordinal, nil},
		{"paused at the desired count and ready is Ready",
			observed(1, kids(kid("web-0")), func(o *observation) { o.spec.Paused = true }), ordinal, nil},
		{"owner being deleted never adopts, releases or creates",
			observed(3, kids(kid("web-0"), kid("stray", unlabelled), kid("found", orphan)),
				func(o *observation) { o.owner.SetDeletionTimestamp(&metav1.Time{Time: testNow}) }), ordinal, nil},
		{"waiting on the cache: nothing but status, look again in a second",
			observed(3, kids(kid("web-0")), func(o *observation) { o.waiting = true }), ordinal, nil},
		{"adopt a matching orphan and count it; release a stray",
			observed(2, kids(kid("web-0"), kid("stray", unlabelled), kid("found", orphan))), ordinal, nil},
		{"an orphan being deleted or another owner's child is never claimed",
			observed(1, kids(kid("gone", orphan, deleting)), func(o *observation) {
				o.children = append(o.children, kid("theirs", foreignOwned))
			}), ordinal, nil},
		{"a taken name is skipped by the next pass",
			observed(2, nil, func(o *observation) { o.taken = []string{"web-0"} }), ordinal, nil},
		{"a create finds its name taken: forgiven, remembered, again at once",
			observed(2, nil), ordinal,
			createsFail(fmt.Errorf("web-0 exists and is not controlled by web: %w", ErrNameTaken))},
		{"a refusing platform: every create forgiven without a read, backoff",
			observed(3, nil), ordinal,
			createsFail(apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "web-0", errors.New("quota exceeded")))},
		{"a create with no clear answer stays expected",
			observed(2, nil), ordinal,
			createsFail(&unsureError{errors.New("timeout (and reading it: connection refused)")})},
		{"a malformed deletion cost is a warning naming the child and value",
			observed(1, kids(kid("web-0", annotated(AnnotationDeletionCost, "cheap")))), ordinal, nil},
		{"a protected child kept above the desired count",
			observed(0, kids(kid("web-0", annotated(AnnotationScaleInProtection, "true")))), ordinal, nil},
		{"unready children",
			observed(2, kids(kid("web-0"), kid("web-1", notReady))), ordinal, nil},
		{"a delete finds its child changed since the read: left, no failure, status written, looked at again",
			observed(1, kids(kid("web-0"), kid("web-1"))), ordinal, deletesFindChanged},
		{"counting a child being deleted: nothing created while it goes",
			observed(2, kids(kid("web-0"), kid("web-1", deleting))), ordinal, nil},
		{"invalid spec: nothing done, the children it controls still counted",
			observed(2, kids(kid("web-0")), func(o *observation) {
				o.specErr, o.selector, o.template = errors.New("spec.replicas -1 is negative"), nil, nil
			}), ordinal, nil},
		{"selector does not select the template",
			observed(2, nil, func(o *observation) { o.template = map[string]string{"app": "other"} }), ordinal, nil},
		{"unknown policy",
			observed(2, nil, func(o *observation) { o.spec.DeletePolicy = "LeastLoaded" }), ordinal, nil},
		{"the per-pass cap defers the rest to an immediate next pass",
			observed(3, nil), rules{policies: deletionpolicy.Default(), naming: OrdinalNames, maxPerPass: 2}, nil},
		{"zones: creates go to the emptiest zones, earlier listed on a tie",
			observed(4, kids(kid("web-0", inZone("a")), kid("web-1", inZone("a"))), zoned("a", "b", "c")), ordinal, nil},
		{"zones: scale-down takes from the fullest zone",
			observed(3, kids(kid("web-0", inZone("a")), kid("web-1", inZone("a")), kid("web-2", inZone("b")), kid("web-3", inZone("c")),
				kid("web-4", inZone("b"))), zoned("a", "b", "c")), ordinal, nil},
		{"zones: a child in an unlisted zone, then one in none, go first",
			observed(2, kids(kid("web-0", inZone("a")), kid("web-1", inZone("old")), kid("web-2"), kid("web-3", inZone("b"))),
				zoned("a", "b")), ordinal, nil},
		{"zones: creates in b refused: b backs off, the pass looks again when it ends",
			observed(3, nil, zoned("a", "b", "c")), ordinal,
			zoneFails("b", apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "web-1", errors.New("zone b is full")))},
		{"zones: b backing off: creates avoid it, ZoneFailing says until when",
			observed(3, kids(kid("web-0", inZone("a"))), zoned("a", "b", "c"), func(o *observation) {
				o.zones.ZoneBackoff = []replicaset.ZoneBackoff{{Zone: "b", Until: testNow.Add(40 * time.Second)}}
			}), ordinal, nil},
		{"zones: out of balance without Rebalance stays so, Unbalanced says why",
			observed(3, kids(kid("web-0", inZone("a")), kid("web-1", inZone("a")), kid("web-2", inZone("a"))), zoned("a", "b", "c")), ordinal, nil},
		{"zones: Rebalance surges one create into the emptiest zone",
			observed(3, kids(kid("web-0", inZone("a")), kid("web-1", inZone("a")), kid("web-2", inZone("a"))), zoned("a", "b", "c"),
				func(o *observation) { o.spec.Rebalance = true }), ordinal, nil},
		{"zones: paused, out of balance: ZonesBalanced says Paused",
			observed(2, kids(kid("web-0", inZone("a")), kid("web-1", inZone("a"))), zoned("a", "b"),
				func(o *observation) { o.spec.Paused = true }), ordinal, nil},
		{"zones: a child failed in zone b: b backs off, the child is replaced in another zone",
			observed(3, kids(kid("web-0", inZone("a")), kid("web-1", inZone("b"), failed), kid("web-2", inZone("c"))), zoned("a", "b", "c")), ordinal, nil},
		{"zones: every zone backing off: a failed child stays, nothing churns",
			observed(2, kids(kid("web-0", inZone("a")), kid("web-1", inZone("b"), failed)), zoned("a", "b"), func(o *observation) {
				o.zones.ZoneBackoff = []replicaset.ZoneBackoff{{Zone: "a", Until: testNow.Add(time.Minute)}}
			}), ordinal, nil},
		{"zones: the only zone's first failed child backs it off and stays",
			observed(1, kids(kid("web-0", inZone("a"), failed)), zoned("a")), ordinal, nil},
		{"zones: the only zone, a failed child seen before, the backoff over: it stays, no new backoff",
			observed(1, kids(kid("web-0", inZone("a"), failed)), zoned("a"), func(o *observation) { o.failedSeen = []string{"uid-web-0"} }), ordinal, nil},
		{"zones: every zone has a failed child, one backoff over: no healthy zone, nothing replaced",
			observed(2, kids(kid("web-0", inZone("a"), failed), kid("web-1", inZone("b"), failed)), zoned("a", "b"), func(o *observation) {
				o.failedSeen = []string{"uid-web-0", "uid-web-1"}
				o.zones.ZoneBackoff = []replicaset.ZoneBackoff{{Zone: "b", Until: testNow.Add(30 * time.Second)}}
			}), ordinal, nil},
		{"zones: replacements share the per-pass cap with the plan's deletes",
			observed(1, kids(kid("web-0", inZone("a"), failed), kid("web-1", inZone("a"), failed), kid("web-2", inZone("b")), kid("web-3", inZone("b"))),
				zoned("a", "b")), rules{policies: deletionpolicy.Default(), naming: OrdinalNames, maxPerPass: 2}, nil},
		{"no zones: a failed child is counted, as before",
			observed(2, kids(kid("web-0"), kid("web-1", failed))), ordinal, nil},
		{"zones: children in no zone, nothing to do and no Rebalance: Unbalanced, not Scaling",
			observed(4, kids(kid("web-0", inZone("a")), kid("web-1", inZone("b")), kid("web-2"), kid("web-3")), zoned("a", "b")), ordinal, nil},
		{"zones: a protected child in no zone that Rebalance cannot move: Unbalanced",
			observed(2, kids(kid("web-0", inZone("a")), kid("web-1", annotated(AnnotationScaleInProtection, "true"))), zoned("a", "b"),
				func(o *observation) { o.spec.Rebalance = true }), ordinal, nil},
		{"zones: b unreachable: its child is unknown, one stands in for it in a, ZoneUnreachable says so",
			observed(3, kids(kid("web-0", inZone("a")), kid("web-1", inZone("b")), kid("web-2", inZone("c"))), zoned("a", "b", "c"),
				func(o *observation) { o.spec.Unreachable = []string{"b"} }), ordinal, nil},
		{"zones: b unreachable, scaled down: nothing in b is deleted, the known children go",
			observed(1, kids(kid("web-0", inZone("a")), kid("web-1", inZone("b")), kid("web-2", inZone("b")), kid("web-3", inZone("c"))),
				zoned("a", "b", "c"), func(o *observation) { o.spec.Unreachable = []string{"b"} }), ordinal, nil},
		{"zones: a failed child in unreachable b is unknown: not replaced, b not backed off",
			observed(2, kids(kid("web-0", inZone("a")), kid("web-1", inZone("b"), failed)), zoned("a", "b"),
				func(o *observation) { o.spec.Unreachable = []string{"b"} }), ordinal, nil},
		{"unknown: a child the Adapter cannot read is counted apart and kept on a scale-down to one, a known child beside it (the surge)",
			observed(1, kids(kid("web-0"), kid("web-1", unreadable), kid("web-2"))), ordinal, nil},
		{"zones: a repeated zone is an invalid spec",
			observed(2, nil, zoned("a", "a")), ordinal, nil},
		{"zones: the per-pass cap defers a create that balances the zones: PerPassCap, at once again",
			observed(5, kids(kid("web-0", inZone("a")), kid("web-1", inZone("a"))), zoned("a", "b", "c")),
			rules{policies: deletionpolicy.Default(), naming: OrdinalNames, maxPerPass: 1}, nil},
		{"zones: every zone unreachable: the creates wait, looked at again when zones may answer",
			observed(2, kids(kid("web-0", inZone("a"))), zoned("a", "b"),
				func(o *observation) { o.spec.Unreachable = []string{"a", "b"} }), ordinal, nil},
		{"rollout: starting, the surge child is made",
			observed(3, kids(kid("web-0", onRev("r1")), kid("web-1", onRev("r1")), kid("web-2", onRev("r1"))), rolling("r2")), ordinal, nil},
		{"rollout: the surge child not ready yet: a rollout, not a scale-down; Ready, nothing to do until it is",
			observed(3, kids(kid("web-0", onRev("r1")), kid("web-1", onRev("r1")), kid("web-2", onRev("r1")),
				kid("web-3", onRev("r2"), notReady)), rolling("r2")), ordinal, nil},
		{"rollout: the surge child ready: a child it replaces goes, still no scale-down",
			observed(3, kids(kid("web-0", onRev("r1")), kid("web-1", onRev("r1")), kid("web-2", onRev("r1")),
				kid("web-3", onRev("r2"))), rolling("r2")), ordinal, nil},
		{"rollout: an old child not ready beside the surge not ready: it may serve, so it stays; Ready says so",
			observed(3, kids(kid("web-0", onRev("r1")), kid("web-1", onRev("r1"), notReady), kid("web-2", onRev("r1")),
				kid("web-3", onRev("r2"), notReady)), rolling("r2")), ordinal, nil},
		{"rollout: scaled down mid-rollout, beyond the surge: a real scale-down",
			observed(2, kids(kid("web-0", onRev("r1")), kid("web-1", onRev("r1")), kid("web-2", onRev("r1")),
				kid("web-3", onRev("r2"), notReady)), rolling("r2")), ordinal, nil},
		{"rollout: scaled down while the new children are not ready: the bounds hold the scale-down, ScalingDown says so",
			observed(2, kids(kid("web-0", onRev("r1")), kid("web-1", onRev("r1")),
				kid("web-2", onRev("r2"), notReady), kid("web-3", onRev("r2"), notReady)), rolling("r2")), ordinal, nil},
		{"rollout: MaxSurge and MaxUnavailable both 0: refused, naming both, nothing done",
			observed(3, kids(kid("web-0", onRev("r1")), kid("web-1", onRev("r1")), kid("web-2", onRev("r1"))), rolling("r2"),
				func(o *observation) {
					o.spec.Rollout.MaxSurge, o.spec.Rollout.MaxUnavailable = replicaset.Count(0), replicaset.Count(0)
				}), ordinal, nil},
		{"rollout: paused with the surge up: the pause scales down, as Strategy.Paused says",
			observed(3, kids(kid("web-0", onRev("r1")), kid("web-1", onRev("r1")), kid("web-2", onRev("r1")),
				kid("web-3", onRev("r2"), notReady)), rolling("r2"), func(o *observation) { o.spec.Rollout.Paused = true }), ordinal, nil},
		{"rollout, zones a and b: the surge child goes beside the child it replaces",
			observed(3, kids(kid("web-0", onRev("r1"), inZone("a")), kid("web-1", onRev("r1"), inZone("b")), kid("web-2", onRev("r1"), inZone("a"))),
				rolling("r2"), zoned("a", "b")), ordinal, nil},
		{"rollout, zones a and b: the surge child not ready: the zones are balanced but for the surge",
			observed(3, kids(kid("web-0", onRev("r1"), inZone("a")), kid("web-1", onRev("r1"), inZone("b")), kid("web-2", onRev("r1"), inZone("a")),
				kid("web-3", onRev("r2"), inZone("a"), notReady)), rolling("r2"), zoned("a", "b")), ordinal, nil},
		{"rollout, zones a and b: the surge child ready: the child it replaces goes",
			observed(3, kids(kid("web-0", onRev("r1"), inZone("a")), kid("web-1", onRev("r1"), inZone("b")), kid("web-2", onRev("r1"), inZone("a")),
				kid("web-3", onRev("r2"), inZone("a"))), rolling("r2"), zoned("a", "b")), ordinal, nil},
		{"heal: first seen running and healthy: started at creation, its health written once",
			observed(2, kids(kid("web-0"), kid("web-1", kept(healthyFor(time.Hour)))), healing(replicaset.Remediation{})), ordinal, nil},
		{"heal: unhealthy for less than the window: a spell starts, looked at again when it ends",
			observed(2, kids(kid("web-0", kept(healthyFor(time.Hour))), kid("web-1", kept(healthyFor(time.Hour)), sick("HeartbeatRed"))),
				healing(replicaset.Remediation{UnhealthyWindow: time.Minute})), ordinal, nil},
		{"heal: unhealthy past its window: replaced, the replacement made in the same pass",
			observed(3, kids(kid("web-0", kept(healthyFor(time.Hour))), kid("web-1", kept(sickFor(2*time.Minute)), sick("HeartbeatRed")),
				kid("web-2", kept(healthyFor(time.Hour)))), healing(replicaset.Remediation{UnhealthyWindow: time.Minute})), ordinal, nil},
		{"heal: never healthy past the start-up window: replaced, a failed replacement in the owner's history",
			observed(2, kids(kid("web-0", kept(healthyFor(time.Hour))), kid("web-1", kept(replicaset.Health{Started: testNow.Add(-time.Hour)}), notReady)),
				healing(replicaset.Remediation{StartupWindow: 10 * time.Minute})), ordinal, nil},
		{"heal: a storm (2 of 3 unhealthy, MaxUnhealthy 1): nothing replaced, TooManyUnhealthy",
			observed(3, kids(kid("web-0", kept(sickFor(2*time.Minute)), sick("HeartbeatRed")), kid("web-1", kept(sickFor(2*time.Minute)), sick("HeartbeatRed")),
				kid("web-2", kept(healthyFor(time.Hour)))), healing(replicaset.Remediation{UnhealthyWindow: time.Minute, MaxUnhealthy: replicaset.Count(1)})), ordinal, nil},
		{"heal: skip-remediation: unhealthy past its window, counted, left alone",
			observed(3, kids(kid("web-0", kept(healthyFor(time.Hour))), kid("web-1", kept(sickFor(2*time.Minute)), sick("HeartbeatRed"), withAnnotation(AnnotationSkipRemediation, "true")),
				kid("web-2", kept(healthyFor(time.Hour)))), healing(replicaset.Remediation{UnhealthyWindow: time.Minute})), ordinal, nil},
		{"heal: remediate asked for a healthy child: replaced now",
			observed(3, kids(kid("web-0", kept(healthyFor(time.Hour))), kid("web-1", kept(healthyFor(time.Hour)), withAnnotation(AnnotationRemediate, "true")),
				kid("web-2", kept(healthyFor(time.Hour)))), healing(replicaset.Remediation{})), ordinal, nil},
		{"heal: Restart: a child due is restarted, its restart recorded, remediate removed",
			observed(3, kids(kid("web-0", kept(healthyFor(time.Hour))), kid("web-1", kept(sickFor(2*time.Minute)), sick("HeartbeatRed"), withAnnotation(AnnotationRemediate, "true")),
				kid("web-2", kept(healthyFor(time.Hour)))), healing(replicaset.Remediation{UnhealthyWindow: time.Minute, Restart: true})),
			rules{policies: deletionpolicy.Default(), naming: OrdinalNames, restarter: true}, nil},
		{"heal: Restart from an Adapter that is no Restarter: refused, InvalidSpec",
			observed(1, kids(kid("web-0")), healing(replicaset.Remediation{Restart: true})), ordinal, nil},
	}
}

// healing turns self-healing on for the owner.
func healing(r replicaset.Remediation) func(*observation) {
	return func(o *observation) { o.spec.Remediation = &r }
}

// healthyFor is the health kept of a child started d ago and healthy since.
func healthyFor(d time.Duration) replicaset.Health {
	return replicaset.Health{Started: testNow.Add(-d), Healthy: true}
}

// sickFor is the health kept of a child healthy once, unhealthy for d.
func sickFor(d time.Duration) replicaset.Health {
	return replicaset.Health{Started: testNow.Add(-time.Hour), Healthy: true, Unhealthy: true, Since: testNow.Add(-d), Reason: "HeartbeatRed"}
}

// onRev puts a child on revision rev.
func onRev(rev string) kidOpt {
	return func(cm *corev1.ConfigMap, _ *bool) { cm.Labels[RevisionLabel] = rev }
}

// rolling turns rollouts on for the owner, under the default strategy
// (one surge child, none unavailable), its template at revision rev.
func rolling(rev string) func(*observation) {
	return func(o *observation) { o.spec.Rollout, o.revision = &replicaset.Strategy{}, rev }
}

// zoned lists zones in the owner's spec.
func zoned(zones ...string) func(*observation) {
	return func(o *observation) { o.spec.Zones = zones }
}

// TestPasses renders each pass case and compares it with the reviewed
// output in testdata/passes.txt.
func TestPasses(t *testing.T) {
	var b strings.Builder
	for _, tc := range passCases() {
		d := decide(tc.obs, tc.rules)
		out := succeeded(d)
		if tc.outcome != nil {
			out = tc.outcome(d)
		}
		fmt.Fprintf(&b, "# %s\n%s\n\n", tc.name, render(d, settle(tc.obs, d, out)))
	}
	const file = "testdata/passes.txt"
	if *rewrite {
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("passes differ from %s (-want +got); if the change is intended, run with -rewrite and review:\n%s", file, diff)
	}
}
