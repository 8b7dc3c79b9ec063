package kube_test

import (
	"fmt"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// intOrString draws an IntOrString as an owner's field may hold one: any
// int32, or a string that is a count, a percentage, either with a sign or
// spaces, or anything at all.
func intOrString() *rapid.Generator[intstr.IntOrString] {
	return rapid.Custom(func(t *rapid.T) intstr.IntOrString {
		if rapid.Bool().Draw(t, "int") {
			return intstr.FromInt32(rapid.Int32().Draw(t, "n"))
		}
		n := strconv.Itoa(rapid.IntRange(-1000, 100000).Draw(t, "n"))
		s := rapid.SampledFrom([]string{n, n + "%", " " + n, n + "%%", "+" + n, "%", ""}).Draw(t, "shape")
		if rapid.Bool().Draw(t, "any") {
			s = rapid.String().Draw(t, "s")
		}
		return intstr.FromString(s)
	})
}

// TestAmountFrom_AgreesWithParseAmount: an IntOrString reads as the
// Amount ParseAmount reads from its string form, and fails exactly where
// ParseAmount does.
func TestAmountFrom_AgreesWithParseAmount(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := intOrString().Draw(t, "v")
		got, err := kube.AmountFrom(&v)
		want, wantErr := replicaset.ParseAmount(v.String())
		if (err != nil) != (wantErr != nil) || got != want {
			t.Fatalf("AmountFrom(%#v) = %v, %v; ParseAmount(%q) = %v, %v", v, got, err, v.String(), want, wantErr)
		}
		if err == nil && !got.IsSet() {
			t.Fatalf("AmountFrom(%#v) = the unset Amount, with no error", v)
		}
	})
}

// TestAmountFrom_RoundTrip: an Amount written as Kubernetes writes one
// (intstr.Parse of its String) reads back as itself.
func TestAmountFrom_RoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 1<<30).Draw(t, "n")
		a := replicaset.Count(n)
		if rapid.Bool().Draw(t, "percent") {
			a = replicaset.Percent(n)
		}
		v := intstr.Parse(a.String())
		got, err := kube.AmountFrom(&v)
		if err != nil || got != a {
			t.Fatalf("AmountFrom(%#v) = %v, %v; want %v", v, got, err, a)
		}
	})
}

// TestAmountFrom_Refusals names each refusal, unset fields included.
func TestAmountFrom_Refusals(t *testing.T) {
	tests := []struct {
		desc    string
		v       *intstr.IntOrString
		want    string
		wantErr bool
	}{
		{"unset", nil, "", false},
		{"a count", ptr.To(intstr.FromInt32(2)), "2", false},
		{"zero", ptr.To(intstr.FromInt32(0)), "0", false},
		{"a percentage", ptr.To(intstr.FromString("25%")), "25%", false},
		{"a count in a string", ptr.To(intstr.FromString("3")), "3", false},
		{"a negative count", ptr.To(intstr.FromInt32(-1)), "", true},
		{"a negative percentage", ptr.To(intstr.FromString("-5%")), "", true},
		{"words", ptr.To(intstr.FromString("half")), "", true},
		{"an empty string", ptr.To(intstr.FromString("")), "", true},
		{"no type", &intstr.IntOrString{Type: 7, IntVal: 3}, "", true},
	}
	for _, tt := range tests {
		got, err := kube.AmountFrom(tt.v)
		if got.String() != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("%s: AmountFrom(%v) = %q, %v; want %q, error %v", tt.desc, tt.v, got, err, tt.want, tt.wantErr)
		}
	}
}

// Read an owner's maxSurge and maxUnavailable, IntOrString fields as a
// Deployment's, into the planner's Strategy; an unset field keeps the
// Strategy's default, a bad one is an error naming it.
func ExampleAmountFrom() {
	maxSurge := intstr.FromString("25%")
	maxUnavailable := intstr.FromInt32(1)

	var s replicaset.Strategy
	var err error
	if s.MaxSurge, err = kube.AmountFrom(&maxSurge); err != nil {
		fmt.Println("spec.strategy.maxSurge:", err)
	}
	if s.MaxUnavailable, err = kube.AmountFrom(&maxUnavailable); err != nil {
		fmt.Println("spec.strategy.maxUnavailable:", err)
	}
	fmt.Println(s.MaxSurge, s.MaxUnavailable)

	var partition *intstr.IntOrString // optional, and unset
	s.Partition, err = kube.AmountFrom(partition)
	fmt.Println(s.Partition.IsSet(), err)

	_, err = kube.AmountFrom(ptr.To(intstr.FromString("half")))
	fmt.Println("spec.strategy.maxSurge:", err)
	// Output:
	// 25% 1
	// false <nil>
	// spec.strategy.maxSurge: amount "half" is neither a count ("3") nor a percentage ("25%") of zero or more
}
