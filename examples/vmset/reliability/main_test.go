package reliability

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/replicakit/replicakit/examples/internal/procs"
	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	"github.com/replicakit/replicakit/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{
		CRDDirectoryPaths: []string{filepath.Join("..", "config", "crd", "bases")},
		Scheme:            vmcheck.Scheme(),
	})
}

var (
	buildOnce sync.Once
	bins      procs.Binaries
	errBuild  error
)

// binaries builds vmset-manager and vcsimd once per test binary, into
// bin/ (beside the control plane's programs).
func binaries(t *testing.T) procs.Binaries {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := testenv.BinDir()
		if err != nil {
			errBuild = err
			return
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			errBuild = err
			return
		}
		bins, errBuild = procs.Build(context.Background(), dir)
	})
	if errBuild != nil {
		t.Fatal(errBuild)
	}
	return bins
}
