package kube_test

import (
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/replicakit/replicakit/replicaset/kube"
)

// decimal is what a deletion cost must look like to be an integer: an
// optional sign and decimal digits, nothing else (no spaces, no
// underscores, no base prefix).
var decimal = regexp.MustCompile(`^[+-]?[0-9]+$`)

// costOf is the reference reading of a deletion cost: its value and true
// when it is a decimal integer that fits an int64, else 0 and false.
func costOf(s string) (int64, bool) {
	if !decimal.MatchString(s) {
		return 0, false
	}
	n, ok := new(big.Int).SetString(s, 10)
	if !ok || n.Cmp(big.NewInt(math.MinInt64)) < 0 || n.Cmp(big.NewInt(math.MaxInt64)) > 0 {
		return 0, false
	}
	return n.Int64(), true
}

// FuzzReplicaOf reads arbitrary values of the annotations that steer
// scale-down, and of the revision label, on a child of arbitrary name:
// ReplicaOf never panics; a deletion cost is used exactly when it is a
// decimal integer that fits an int64 (checked against math/big, not
// strconv), and otherwise the cost is 0 and the error names the child and
// the quoted value while the rest of the replica is still filled in;
// delete-first is set by any value but "false", protection only by "true",
// and the revision is the label's, empty without it.
func FuzzReplicaOf(f *testing.F) {
	f.Add("web-0", "7", "", "true", "abc", true, true, true, true)
	f.Add("web-0", "-9223372036854775808", "false", "false", "", true, true, false, true)
	f.Add("web-0", "9223372036854775808", "yes", "TRUE", "r1", true, true, true, true)
	f.Add("", " 1", "", "", "", true, false, false, false)
	f.Add("web-0", "0x10", "0", "1", "\x00", true, true, true, true)
	f.Add("web-1", "1_000", "False", " true", "r2", true, true, true, false)
	f.Add("w", "+0", "", "", "", true, false, false, false)
	f.Fuzz(func(t *testing.T, name, cost, first, protect, revision string, hasCost, hasFirst, hasProtect, hasRevision bool) {
		a := map[string]string{}
		if hasCost {
			a[kube.AnnotationDeletionCost] = cost
		}
		if hasFirst {
			a[kube.AnnotationDeleteFirst] = first
		}
		if hasProtect {
			a[kube.AnnotationScaleInProtection] = protect
		}
		labels := map[string]string{"app": "web"}
		if hasRevision {
			labels[kube.RevisionLabel] = revision
		} else {
			revision = ""
		}
		obj := &metav1.ObjectMeta{Name: name, UID: "u", Annotations: a, Labels: labels}
		r, err := kube.ReplicaOf(obj)

		want, valid := costOf(cost)
		if !hasCost {
			want, valid = 0, true
		}
		switch {
		case valid && err != nil:
			t.Fatalf("ReplicaOf with cost %q: %v; want no error", cost, err)
		case !valid && err == nil:
			t.Fatalf("ReplicaOf with cost %q: no error; want one (not a decimal int64)", cost)
		case err != nil && (!strings.Contains(err.Error(), "child "+name+":") || !strings.Contains(err.Error(), strconv.Quote(cost))):
			t.Fatalf("ReplicaOf's error %q does not name both the child %q and the value %q", err, name, cost)
		case r.DeletionCost != want:
			t.Fatalf("ReplicaOf with cost %q: DeletionCost %d, want %d", cost, r.DeletionCost, want)
		case r.MarkedForDeletion != (hasFirst && first != "false"):
			t.Fatalf("delete-first %q (set %v): MarkedForDeletion %v", first, hasFirst, r.MarkedForDeletion)
		case r.Protected != (hasProtect && protect == "true"):
			t.Fatalf("protection %q (set %v): Protected %v", protect, hasProtect, r.Protected)
		case r.Revision != revision || r.Name != name || r.UID != "u" || r.Deleting || !r.CreatedAt.IsZero():
			t.Fatalf("ReplicaOf = %+v, want name %q, UID u, revision %q, not deleting, no creation time", r, name, revision)
		}
	})
}
