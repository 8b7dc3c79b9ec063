package replicaset_test

import (
	"errors"
	"testing"

	"github.com/replicakit/replicakit/replicaset"
)

// TestSpec_ValidateRefuses: each refusal Spec.Validate's documentation
// lists is refused with an error wrapping ErrInvalidSpec, and refusals
// together are joined, one error each; the zero spec, every default, is
// valid.
func TestSpec_ValidateRefuses(t *testing.T) {
	if err := (replicaset.Spec{}).Validate(); err != nil {
		t.Fatalf("the zero spec: %v", err)
	}
	cases := map[string]replicaset.Spec{
		"negative Desired":              {Desired: -1},
		"negative MaxPerPass":           {MaxPerPass: -1},
		"negative MinReady":             {MinReady: -1},
		"unknown strategy type":         {Strategy: replicaset.Strategy{Type: replicaset.StrategyType(9)}},
		"negative MaxSurge":             {Strategy: replicaset.Strategy{MaxSurge: replicaset.Count(-1)}},
		"negative MaxUnavailable":       {Strategy: replicaset.Strategy{MaxUnavailable: replicaset.Count(-1)}},
		"negative Partition":            {Strategy: replicaset.Strategy{Partition: replicaset.Count(-1)}},
		"unknown update method":         {Strategy: replicaset.Strategy{Method: replicaset.UpdateMethod(9)}},
		"no surge and none unavailable": {Strategy: replicaset.Strategy{MaxSurge: replicaset.Count(0), MaxUnavailable: replicaset.Count(0)}},
		"negative StartupWindow":        {Remediation: &replicaset.Remediation{StartupWindow: -1}},
		"negative UnhealthyWindow":      {Remediation: &replicaset.Remediation{UnhealthyWindow: -1}},
		"negative Backoff":              {Remediation: &replicaset.Remediation{Backoff: -1}},
		"negative MaxUnhealthy":         {Remediation: &replicaset.Remediation{MaxUnhealthy: replicaset.Count(-1)}},
		"negative MaxInFlight":          {Remediation: &replicaset.Remediation{MaxInFlight: replicaset.Count(-1)}},
		"negative MaxFailures":          {Remediation: &replicaset.Remediation{MaxFailures: -1}},
		"negative hook Timeout":         {Lifecycle: &replicaset.Lifecycle{Timeout: -1}},
		"a zone without a name":         {Zones: []string{"a", ""}},
		"a zone listed twice":           {Zones: []string{"a", "a"}},
		"an unreachable zone twice":     {Unreachable: []string{"b", "b"}},
	}
	for name, s := range cases {
		if err := s.Validate(); !errors.Is(err, replicaset.ErrInvalidSpec) {
			t.Errorf("%s: Validate = %v, want ErrInvalidSpec", name, err)
		}
	}
	all := replicaset.Spec{Desired: -1, MinReady: -1, Lifecycle: &replicaset.Lifecycle{Timeout: -1}, Zones: []string{""}}
	joined, ok := all.Validate().(interface{ Unwrap() []error })
	if !ok || len(joined.Unwrap()) != 4 {
		t.Errorf("four refusals together: Validate = %v, want the four joined", all.Validate())
	}
}
