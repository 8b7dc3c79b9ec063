package chaos_test

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/replicakit/replicakit/examples/internal/vmcheck"
	"github.com/replicakit/replicakit/internal/testenv"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// readTimeout bounds each of the harness's reads of the API server and
// vCenter apart from the deadline of the poll that makes it: a poll that
// runs out reports the last state it read in full, not a read its
// deadline cut short (reading a simulator waits at its gate behind the
// operator's calls, so most of a poll's time is spent reading, and a
// deadline mostly lands in the middle of a read).
const readTimeout = 30 * time.Second

// read calls f until it succeeds, for up to readTimeout, and returns its
// last error. A read of the VMs in a simulator takes two calls (the
// folder's children, then their properties), and fails when a VM it
// listed is destroyed between them (vcsim.ChildVMs): a moment the
// operator may make at any time, so the harness reads again.
func read(f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	for {
		err := f(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("read for %v: %w", readTimeout, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// observeAll reads the set's state in the API server and in the vCenters
// of vcs (read).
func observeAll(e *testenv.Env, vcs []vsphere.Config, ns string) (vmcheck.State, error) {
	var st vmcheck.State
	err := read(func(ctx context.Context) error {
		var err error
		st, err = vmcheck.ObserveAll(ctx, e.Client, vcs, ns, setName)
		return err
	})
	return st, err
}

// readSpread is vmcheck.Spread through read.
func readSpread(cfg vsphere.Config, ns string) (map[string]int, error) {
	var got map[string]int
	err := read(func(ctx context.Context) error {
		var err error
		got, err = vmcheck.Spread(ctx, cfg, ns)
		return err
	})
	return got, err
}

// stacks writes every goroutine's stack (the operator's, which runs in
// process, among them) to a file, for a failure message that says where
// it is: what the operator was doing when a wait ran out.
func stacks() string {
	f, err := os.CreateTemp("", "chaos-goroutines-*.txt")
	if err != nil {
		return fmt.Sprintf("\n  (goroutines not written: %v)", err)
	}
	defer func() { _ = f.Close() }()
	if err := pprof.Lookup("goroutine").WriteTo(f, 2); err != nil {
		return fmt.Sprintf("\n  (goroutines not written: %v)", err)
	}
	return "\n  every goroutine's stack: " + f.Name()
}
