package replicaset_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/replicaset"
)

// TestHashRevision_Properties checks that a revision is a function of its
// data, ten consonants and digits long, and a valid label value.
func TestHashRevision_Properties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		data := rapid.SliceOf(rapid.Byte()).Draw(t, "data")
		rev := replicaset.HashRevision(data)
		if again := replicaset.HashRevision(append([]byte(nil), data...)); again != rev {
			t.Fatalf("HashRevision(%q) = %q, then %q", data, rev, again)
		}
		if len(rev) != 10 || strings.Trim(rev, "bcdfghjklmnpqrstvwxz2456789") != "" {
			t.Fatalf("HashRevision(%q) = %q: want ten consonants and digits", data, rev)
		}
		if errs := validation.IsValidLabelValue(rev); len(errs) > 0 {
			t.Fatalf("HashRevision(%q) = %q is not a label value: %v", data, rev, errs)
		}
	})
}

// TestHashRevision_Stable pins revisions across versions: a change here
// would make every importer's replicas look out of date and roll them all.
func TestHashRevision_Stable(t *testing.T) {
	for data, want := range map[string]string{
		"":                 "s6vf8jvv2p",
		`{"spec":{"a":1}}`: "l6j54snjmq",
	} {
		if got := replicaset.HashRevision([]byte(data)); got != want {
			t.Errorf("HashRevision(%q) = %q, want %q", data, got, want)
		}
	}
}
