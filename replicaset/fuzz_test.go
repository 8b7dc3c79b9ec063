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

// FuzzHealing_Guards checks passes of a set with Spec.Remediation against
// the naive self-healing rules (TestHealing_Guards).
func FuzzHealing_Guards(f *testing.F) { f.Fuzz(rapid.MakeFuzz(healingGuards)) }

// FuzzAllFeatures_Check checks one pass from any input with every feature
// drawn at once against replicasettest.Check, and its independence of the
// replicas' order (TestAllFeatures_Check).
func FuzzAllFeatures_Check(f *testing.F) { f.Fuzz(rapid.MakeFuzz(allFeaturesCheck)) }

// FuzzAllFeatures_Passes drives a world with every feature drawn at once
// pass after pass through faults and spec changes mid-rollout (rollbacks,
// strategy, method, count, pause, protection, zones cut off), hooks that
// release late, never or out of order, in-place updates that fail,
// checking every pass with replicasettest.Check and convergence once the
// world settles (TestAllFeatures_Passes).
func FuzzAllFeatures_Passes(f *testing.F) { f.Fuzz(rapid.MakeFuzz(allFeaturesPasses)) }
