package reliability

import (
	"context"
	"path/filepath"
	"testing"

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
