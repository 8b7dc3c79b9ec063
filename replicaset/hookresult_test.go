package replicaset_test

import (
	"errors"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/replicaset"
)

// TestParseHookResult: Continue and the empty string delete a replica
// whose hooks timed out, Abandon keeps it, and every other string is
// refused as an invalid spec.
func TestParseHookResult(t *testing.T) {
	for s, want := range map[string]bool{"": false, "Continue": false, "Abandon": true} {
		if got, err := replicaset.ParseHookResult(s); err != nil || got != want {
			t.Errorf("ParseHookResult(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.String().Filter(func(s string) bool { return s != "" && s != "Continue" && s != "Abandon" }).Draw(t, "s")
		if got, err := replicaset.ParseHookResult(s); !errors.Is(err, replicaset.ErrInvalidSpec) {
			t.Fatalf("ParseHookResult(%q) = %v, %v; want ErrInvalidSpec", s, got, err)
		}
	})
}

// ExampleParseHookResult reads the default result of an owner's hooks as
// its API spells it (an enum of Continue and Abandon) into the planner's
// Lifecycle.
func ExampleParseHookResult() {
	abandon, err := replicaset.ParseHookResult("Abandon")
	if err != nil {
		panic(err)
	}
	l := replicaset.Lifecycle{Abandon: abandon}
	fmt.Println(l.Abandon)
	_, err = replicaset.ParseHookResult("abandon")
	fmt.Println(err)
	// Output:
	// true
	// hook result "abandon" is neither Continue nor Abandon: replicaset: invalid spec
}
