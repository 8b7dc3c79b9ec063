package reliability

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/replicakit/replicakit/examples/internal/procs"
	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	"github.com/replicakit/replicakit/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	// The replicas log to their files; the test's own clients have nothing
	// to say (and controller-runtime prints a stack if no logger is set).
	log.SetLogger(logr.Discard())
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{filepath.Join("..", "config", "crd", "bases")},
		Scheme:            vmcheck.Scheme(),
	})
}

// binaries builds vmset-manager and vcsimd for one test, into its own
// folder, so that no other run's build replaces a program a replica is
// restarted from (the go command's build cache makes it a relink).
func binaries(t *testing.T) procs.Binaries {
	t.Helper()
	b, err := procs.Build(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fullVar names the environment variable that runs every moment of the
// reliability tests when it is "full" (`make reliability`): unset, as in
// `make test`, each test runs its first moment only (the leader killed
// mid-clone, kube-apiserver restarted mid-scale-up) and the soak its
// short run.
const fullVar = "REPLICAKIT_RELIABILITY"

// fullOnly skips t unless the full suite runs.
func fullOnly(t *testing.T) {
	t.Helper()
	if os.Getenv(fullVar) != "full" {
		t.Skipf("not in make test: make reliability runs it (%s=full)", fullVar)
	}
}

// seedVar names the environment variable that, when set, seeds a test's
// random choices (the leader kill's random moments, the soak's work and
// faults) instead of the clock, to replay a run whose log gave the seed.
const seedVar = "REPLICAKIT_RELIABILITY_SEED"

// seedOf returns the seed $REPLICAKIT_RELIABILITY_SEED gives, or one from
// the clock; it logs it, and again with the command that replays it when
// t fails.
func seedOf(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(seedVar); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want the unsigned integer a failure printed", seedVar, v)
		}
		seed = n
	}
	var env []string
	for _, v := range []string{fullVar, SoakVar} {
		if x := os.Getenv(v); x != "" {
			env = append(env, v+"="+x)
		}
	}
	env = append(env, fmt.Sprintf("%s=%d", seedVar, seed))
	replay := fmt.Sprintf("seed %d; replay: %s go -C examples test -race -count=1 -v -run '^%s$' ./vmset/reliability", seed, strings.Join(env, " "), t.Name())
	t.Logf("random choices seeded with %d (%s)", seed, replay)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(replay)
		}
	})
	return seed
}
