package chaos_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
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

// size is how hard the suite pushes: replicas per cycle and cycles.
func size() (n, cycles int) {
	if os.Getenv("REPLICAKIT_CHAOS") == "large" {
		return 10, 5
	}
	return 4, 2
}

// rolloutLag is the rollout scenario's lagging cache: none in the small
// suite; in the large one, a lag like the everything scenario's.
func rolloutLag() *faults.Lag {
	if os.Getenv("REPLICAKIT_CHAOS") == "large" {
		return faults.NewLag(300*time.Millisecond, 4)
	}
	return nil
}

// TestChaos runs every scenario and prints the table of runs.
func TestChaos(t *testing.T) {
	e := env.Require(t)
	n, cycles := size()
	vcFaults := []string{"CloneVM_Task", "PowerOnVM_Task", "Destroy_Task"}
	scenarios := []scenario{
		{name: "api-faults", api: faults.New(0.2, 1)},
		{name: "stale-cache", lag: faults.NewLag(300*time.Millisecond, 2)},
		{name: "vcenter-faults", vcenter: vcFaults},
		{name: "restart", restart: true},
		{name: "foreign", foreign: true},
		{name: "everything", api: faults.New(0.2, 3), lag: faults.NewLag(300*time.Millisecond, 3), vcenter: vcFaults, restart: true, foreign: true},
	}
	var rows []row
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			rows = append(rows, sc.run(t, e, n, cycles))
		})
	}
	t.Run("zone-outage", func(t *testing.T) { rows = append(rows, zoneOutage(t, e)) })
	t.Run("rollout-revert", func(t *testing.T) { rows = append(rows, rolloutRevert(t, e, rolloutLag())) })
	t.Run("vcenter-partition", func(t *testing.T) { rows = append(rows, vcenterPartition(t, e)) })
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "scenario\tsteps\tfaults injected\tmax children\tfinal\tleaked VMs\tduplicate VMs\tforeign changed\ttime")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%d\t%d\t%d\t%v\n", r.name, r.steps, r.injected, r.maxChildren, r.final, r.leaked, r.duplicates, r.foreignChanged, r.took.Round(100*time.Millisecond))
	}
	_ = w.Flush() // into a strings.Builder, which cannot fail
	fmt.Print("\n" + b.String())
}
