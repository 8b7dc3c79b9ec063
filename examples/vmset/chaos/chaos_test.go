package chaos_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	"github.com/replicakit/replicakit/internal/faults"
	"github.com/replicakit/replicakit/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	log.SetLogger(logr.Discard()) // the operator's logs are not the suite's output
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{filepath.Join("..", "config", "crd", "bases")},
		Scheme:            vmcheck.Scheme(),
	})
}

// runs counts the runs of TestChaos in this process (go test -count=N
// runs it N times on one control plane): namespace tells them apart.
var runs int

// namespace creates the namespace base, or base-N in the Nth run of
// TestChaos, and returns its name.
func namespace(t testing.TB, e *testenv.Env, base string) string {
	t.Helper()
	ns := base
	if runs > 1 {
		ns = fmt.Sprintf("%s-%d", base, runs)
	}
	if err := e.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// sizeVar names the environment variable that chooses the suite's size:
// unset, `make test`'s small suite (smallScenarios, each small); "large",
// `make chaos`: every scenario, the cycles at full size and the rollout's
// cache lagging.
const sizeVar = "REPLICAKIT_CHAOS"

// large reports whether the suite runs at full size (`make chaos`).
func large() bool { return os.Getenv(sizeVar) == "large" }

// smallScenarios are the scenarios `make test` runs: one of each kind.
var smallScenarios = []string{"everything", "zone-outage", "rollout-revert", "vcenter-partition",
	"heal-blip", "heal-partition", "heal-rollout", "heal-bad-template",
	"hooks-crash", "hooks-rollout-heal", "hooks-delete-set", "hooks-restart", "inplace-faults", "vcenter-day"}

// size is how hard the cycling scenarios push: replicas per cycle and
// cycles.
func size() (n, cycles int) {
	if large() {
		return 10, 5
	}
	return 4, 2
}

// rolloutLag is the rollout scenario's lagging cache, seeded with seed:
// none in the small suite; in the large one, a lag like the everything
// scenario's.
func rolloutLag(seed uint64) *faults.Lag {
	if large() {
		return faults.NewLag(300*time.Millisecond, seed)
	}
	return nil
}

// TestChaos runs every scenario (the small suite's unless
// $REPLICAKIT_CHAOS is "large") and prints the table of runs. Each
// scenario seeds its random faults from $REPLICAKIT_CHAOS_SEED or the
// clock, and says which in every failure message.
func TestChaos(t *testing.T) {
	e := env.Require(t)
	runs++
	n, cycles := size()
	scenarios := []scenario{
		{name: "api-faults", api: true},
		{name: "stale-cache", lag: true},
		{name: "vcenter-faults", vcenter: true},
		{name: "restart", restart: true},
		{name: "foreign", foreign: true},
		{name: "everything", api: true, lag: true, vcenter: true, restart: true, foreign: true},
	}
	var rows []row
	run := func(name string, f func(t *seeded) row) {
		t.Run(name, func(t *testing.T) {
			if !large() && !slices.Contains(smallScenarios, name) {
				t.Skipf("not in make test's small suite: make chaos runs it (%s=large)", sizeVar)
			}
			rows = append(rows, f(seedOf(t)))
		})
	}
	for _, sc := range scenarios {
		run(sc.name, func(t *seeded) row { return sc.run(t, e, n, cycles) })
	}
	run("zone-outage", func(t *seeded) row { return zoneOutage(t, e) })
	run("rollout-revert", func(t *seeded) row { return rolloutRevert(t, e, rolloutLag(t.seed)) })
	run("vcenter-partition", func(t *seeded) row { return vcenterPartition(t, e) })
	run("heal-blip", func(t *seeded) row { return healBlip(t, e) })
	run("heal-partition", func(t *seeded) row { return healPartition(t, e) })
	run("heal-rollout", func(t *seeded) row { return healRollout(t, e) })
	run("heal-bad-template", func(t *seeded) row { return healBadTemplate(t, e) })
	run("hooks-crash", func(t *seeded) row { return hooksCrash(t, e) })
	run("hooks-rollout-heal", func(t *seeded) row { return hooksRolloutHeal(t, e) })
	run("hooks-delete-set", func(t *seeded) row { return hooksDeleteSet(t, e) })
	run("hooks-restart", func(t *seeded) row { return hooksRestart(t, e) })
	run("inplace-faults", func(t *seeded) row { return inplaceFaults(t, e) })
	run("vcenter-day", func(t *seeded) row { return vcenterDay(t, e) })
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "scenario\tsteps\tfaults injected\tmax children\tfinal\tleaked VMs\tduplicate VMs\tforeign changed\ttime")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%d\t%d\t%d\t%v\n", r.name, r.steps, r.injected, r.maxChildren, r.final, r.leaked, r.duplicates, r.foreignChanged, r.took.Round(100*time.Millisecond))
	}
	_ = w.Flush() // into a strings.Builder, which cannot fail
	fmt.Print("\n" + b.String())
}
