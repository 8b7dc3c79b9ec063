package chaos_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// seedVar names the environment variable that, when set, seeds every
// scenario's random faults (which API writes and vCenter tasks fail, how
// long each read of a lagging cache waits) instead of the clock, to
// replay a run whose failure message gave the seed.
const seedVar = "REPLICAKIT_CHAOS_SEED"

// seeded is a scenario's test with the seed of its random faults: every
// failure message it reports ends with the seed and the command that runs
// the scenario again with it.
type seeded struct {
	*testing.T
	seed   uint64
	replay string
}

// seedOf returns t with the seed $REPLICAKIT_CHAOS_SEED gives, or one
// from the clock, and logs it.
func seedOf(t *testing.T) *seeded {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(seedVar); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want the unsigned integer a failure message printed", seedVar, v)
		}
		seed = n
	}
	s := &seeded{T: t, seed: seed, replay: replayCommand(t.Name(), seed, os.Getenv(sizeVar))}
	t.Logf("random faults seeded with %d (%s)", seed, s.replay)
	return s
}

// replayCommand is the command that runs the test named name (a
// subtest of TestChaos) again with seed, at size (the value of
// $REPLICAKIT_CHAOS).
func replayCommand(name string, seed uint64, size string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + p + "$"
	}
	env := fmt.Sprintf("%s=%d", seedVar, seed)
	if size != "" {
		env = fmt.Sprintf("%s=%s %s", sizeVar, size, env)
	}
	return fmt.Sprintf("seed %d; replay: %s go -C examples test -race -count=1 -v -run '%s' ./vmset/chaos", seed, env, strings.Join(parts, "/"))
}

// Error is testing.T's, with the seed.
func (s *seeded) Error(args ...any) {
	s.T.Helper()
	s.T.Error(append(args, "\n("+s.replay+")")...)
}

// Errorf is testing.T's, with the seed.
func (s *seeded) Errorf(format string, args ...any) {
	s.T.Helper()
	s.T.Errorf(format+"\n(%s)", append(args, s.replay)...)
}

// Fatal is testing.T's, with the seed.
func (s *seeded) Fatal(args ...any) {
	s.T.Helper()
	s.T.Fatal(append(args, "\n("+s.replay+")")...)
}

// Fatalf is testing.T's, with the seed.
func (s *seeded) Fatalf(format string, args ...any) {
	s.T.Helper()
	s.T.Fatalf(format+"\n(%s)", append(args, s.replay)...)
}

// TestReplayCommand: the command a failure message gives runs the one
// scenario that failed, at its size, with its seed.
func TestReplayCommand(t *testing.T) {
	for _, tc := range []struct {
		name, size string
		want       string
	}{
		{"TestChaos/rollout-revert", "", "seed 7; replay: REPLICAKIT_CHAOS_SEED=7 go -C examples test -race -count=1 -v -run '^TestChaos$/^rollout-revert$' ./vmset/chaos"},
		{"TestChaos/everything", "large", "seed 7; replay: REPLICAKIT_CHAOS=large REPLICAKIT_CHAOS_SEED=7 go -C examples test -race -count=1 -v -run '^TestChaos$/^everything$' ./vmset/chaos"},
	} {
		if got := replayCommand(tc.name, 7, tc.size); got != tc.want {
			t.Errorf("replayCommand(%q, 7, %q) =\n%s\nwant\n%s", tc.name, tc.size, got, tc.want)
		}
	}
}
