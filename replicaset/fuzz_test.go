package replicaset_test

import (
	"testing"

	"pgregory.net/rapid"
)

// The fuzz targets drive the property tests from the fuzzer's bytes
// (rapid.MakeFuzz): the fuzzer's coverage guidance explores the specs,
// replicas, faults and spec changes that the properties draw, where
// rapid's own runs draw them at random. `make fuzz` runs each for
// FUZZTIME; `go test` runs their seed corpora (testdata/fuzz).

// FuzzCompute_Properties checks Compute against the naive reference and
// its invariants (TestCompute_Properties).
func FuzzCompute_Properties(f *testing.F) { f.Fuzz(rapid.MakeFuzz(computeProperties)) }

// FuzzCompute_ArbitraryInput feeds Compute valid and invalid input alike:
// an error exactly for invalid input, and no panic
// (TestCompute_ArbitraryInput).
func FuzzCompute_ArbitraryInput(f *testing.F) { f.Fuzz(rapid.MakeFuzz(computeArbitraryInput)) }

// FuzzRollout_Passes drives a set with revisions pass after pass through
// faults and spec changes mid-rollout, checking every bound of every pass
// and convergence once healthy (TestRollout_Passes).
func FuzzRollout_Passes(f *testing.F) { f.Fuzz(rapid.MakeFuzz(rolloutPasses)) }

// FuzzHealing_Guards checks passes of a set with Spec.Remediation against
// the naive self-healing rules (TestHealing_Guards).
func FuzzHealing_Guards(f *testing.F) { f.Fuzz(rapid.MakeFuzz(healingGuards)) }

// FuzzGate_Passes drives a set with lifecycle hooks pass after pass
// through hooks released late, never or out of order, scaling, rollouts
// and remediation, checking the gate and the bounds of every pass and
// convergence once hooks release (TestGate_Passes).
func FuzzGate_Passes(f *testing.F) { f.Fuzz(rapid.MakeFuzz(gatePasses)) }

// FuzzInPlace_Passes is TestInPlace_Passes under the fuzzer: in-place
// updates live and by power cycle, failing, under each method, with and
// without hooks.
func FuzzInPlace_Passes(f *testing.F) { f.Fuzz(rapid.MakeFuzz(inPlacePasses)) }
