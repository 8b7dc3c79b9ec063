package naming_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/naming"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		target  naming.Target
		wantErr string // "" for valid
	}{
		{"test-rs-zmdmm", naming.Portable, ""},
		{"web-0", naming.Portable, ""},
		{"Web-0", naming.Portable, `"Web-0" is not a valid portable name (DNS-1123 label): character 'W' at position 0 is not allowed (use lowercase letters, digits and '-'): naming: invalid name`},
		{"-web", naming.Portable, `"-web" is not a valid portable name (DNS-1123 label): it must start and end with a lowercase letter or digit: naming: invalid name`},
		{"", naming.Portable, `"" is not a valid portable name (DNS-1123 label): it is empty: naming: invalid name`},
		{strings.Repeat("a", 64), naming.Portable, `"` + strings.Repeat("a", 64) + `" is not a valid portable name (DNS-1123 label): it is 64 characters long, at most 63 are allowed: naming: invalid name`},
		{"web.v2-0", naming.ObjectName, ""},
		{"web..0", naming.ObjectName, `"web..0" is not a valid Kubernetes object name (DNS-1123 subdomain): dot-separated part "": it is empty: naming: invalid name`},
		{strings.Repeat("a", 253), naming.ObjectName, ""},
		{strings.Repeat("a", 100) + ".v2", naming.ObjectName, ""},
		{strings.Repeat("a", 254), naming.ObjectName, `"` + strings.Repeat("a", 254) + `" is not a valid Kubernetes object name (DNS-1123 subdomain): it is 254 characters long, at most 253 are allowed: naming: invalid name`},
		{"web.-0", naming.ObjectName, `"web.-0" is not a valid Kubernetes object name (DNS-1123 subdomain): dot-separated part "-0": it must start and end with a lowercase letter or digit: naming: invalid name`},
		{"My_VM.1", naming.LabelValue, ""},
		{"", naming.LabelValue, ""},
		{"vm_", naming.LabelValue, `"vm_" is not a valid Kubernetes label value: it must start and end with a letter or digit: naming: invalid name`},
		{"My VM (1)", naming.VSphereName, ""},
		{"a/b", naming.VSphereName, `"a/b" is not a valid vSphere VM name: character '/' at position 1 is not allowed: naming: invalid name`},
		{strings.Repeat("v", 81), naming.VSphereName, `"` + strings.Repeat("v", 81) + `" is not a valid vSphere VM name: it is 81 characters long, at most 80 are allowed: naming: invalid name`},
	}
	for _, tt := range tests {
		err := naming.Validate(tt.name, tt.target)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("Validate(%q, %v) = %v, want nil", tt.name, tt.target, err)
		case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
			t.Errorf("Validate(%q, %v) = %v\nwant %s", tt.name, tt.target, err, tt.wantErr)
		case err != nil && !errors.Is(err, naming.ErrInvalidName):
			t.Errorf("Validate(%q, %v) = %v, does not wrap ErrInvalidName", tt.name, tt.target, err)
		}
	}
}

var targets = []naming.Target{naming.Portable, naming.ObjectName, naming.LabelValue, naming.VSphereName}

// validWhereItFits checks a generated name made for target: it is valid for
// that target, and for every other target whose length limit it fits (so a
// name made for Portable is valid everywhere).
func validWhereItFits(t *rapid.T, name string, target naming.Target) {
	if err := naming.Validate(name, target); err != nil {
		t.Fatalf("generated name for %v: %v", target, err)
	}
	for _, tg := range targets {
		if len(name) > tg.MaxLen() {
			continue
		}
		if err := naming.Validate(name, tg); err != nil {
			t.Fatalf("generated name fits %v but: %v", tg, err)
		}
	}
}

// base draws owner names from anything: long, short, upper case, unicode,
// punctuation; long ones often enough that every target's limit is reached.
var base = rapid.OneOf(
	rapid.StringMatching(`[a-z0-9]([-a-z0-9]{0,250}[a-z0-9])?`),
	rapid.String(),
	rapid.StringN(0, 300, -1),
	rapid.StringMatching(`[A-Za-z0-9._ é-]{60,300}`),
)

// part draws a DNS-1123 label of 1 to 130 characters, lengths spread evenly
// so that parts longer than 63 are common.
var part = rapid.Custom(func(t *rapid.T) string {
	n := rapid.IntRange(1, 130).Draw(t, "len")
	b := rapid.SliceOfN(rapid.SampledFrom([]byte("abz09-")), n, n).Draw(t, "chars")
	b[0], b[n-1] = 'a', '9'
	return string(b)
})

// TestValidate_AgreesWithAPIMachinery checks Validate against the checks the
// API server runs, on names near the rules' edges.
func TestValidate_AgreesWithAPIMachinery(t *testing.T) {
	// Mostly well-formed names of every length, some with one character
	// changed, so both sides of each rule are reached.
	wellFormed := rapid.Custom(func(t *rapid.T) string {
		parts := rapid.SliceOfN(part, 1, 4).Draw(t, "parts")
		s := []byte(strings.Join(parts, "."))
		if rapid.Bool().Draw(t, "change") {
			i := rapid.IntRange(0, len(s)-1).Draw(t, "at")
			s[i] = rapid.SampledFrom([]byte("-._Az9 /")).Draw(t, "to")
		}
		return string(s)
	})
	name := rapid.OneOf(
		wellFormed,
		rapid.StringMatching(`[-a-zA-Z0-9._]{0,80}`),
		rapid.String(),
	)
	oracles := []struct {
		target naming.Target
		errs   func(string) []string
	}{
		{naming.Portable, validation.IsDNS1123Label},
		{naming.ObjectName, validation.IsDNS1123Subdomain},
		{naming.LabelValue, validation.IsValidLabelValue},
	}
	rapid.Check(t, func(t *rapid.T) {
		s := name.Draw(t, "name")
		for _, o := range oracles {
			err := naming.Validate(s, o.target)
			want := o.errs(s)
			if (err == nil) != (len(want) == 0) {
				t.Fatalf("Validate(%q, %v) = %v; apimachinery says %q", s, o.target, err, want)
			}
		}
	})
}

func TestRandom_Properties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := naming.Random{
			Base:   base.Draw(t, "base"),
			Source: rand.NewPCG(rapid.Uint64().Draw(t, "s1"), rapid.Uint64().Draw(t, "s2")),
			Target: rapid.SampledFrom(targets).Draw(t, "target"),
		}
		existing := rapid.SliceOfDistinct(rapid.StringMatching(`[a-z]{1,8}`), rapid.ID).Draw(t, "existing")
		n := rapid.IntRange(0, 50).Draw(t, "n")
		got, err := g.Names(n, existing)
		if err != nil {
			t.Fatalf("Names(%d): %v", n, err)
		}
		if len(got) != n {
			t.Fatalf("Names(%d) returned %d names", n, len(got))
		}
		seen := map[string]bool{}
		for _, e := range existing {
			seen[e] = true
		}
		for _, name := range got {
			validWhereItFits(t, name, g.Target)
			if len(name) > g.Target.MaxLen() {
				t.Fatalf("%q is longer than %v allows", name, g.Target)
			}
			if seen[name] {
				t.Fatalf("%q repeats a name that is taken or already generated", name)
			}
			seen[name] = true
		}
	})
}

func TestIndexed_Properties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := naming.Indexed{Base: base.Draw(t, "base"), Target: rapid.SampledFrom(targets).Draw(t, "target")}
		var existing []string
		taken := map[int]bool{}
		for _, i := range rapid.SliceOf(rapid.IntRange(0, 30)).Draw(t, "taken") {
			existing, taken[i] = append(existing, g.Name(i)), true
		}
		n := rapid.IntRange(0, 20).Draw(t, "n")
		got, err := g.Names(n, existing)
		if err != nil || len(got) != n {
			t.Fatalf("Names(%d) = %v, %v", n, got, err)
		}
		next := 0
		for _, name := range got {
			validWhereItFits(t, name, g.Target)
			i, ok := g.Ordinal(name)
			if !ok || g.Name(i) != name {
				t.Fatalf("Ordinal(%q) = %d, %v; does not round-trip", name, i, ok)
			}
			for taken[next] {
				next++
			}
			if i != next {
				t.Fatalf("Names(%d) with %v taken gave ordinal %d, want the lowest free %d", n, existing, i, next)
			}
			next++
		}
		// Any other string either is not an ordinal name or round-trips.
		other := rapid.String().Draw(t, "other")
		if i, ok := g.Ordinal(other); ok && g.Name(i) != other {
			t.Fatalf("Ordinal(%q) = %d, but Name(%d) = %q", other, i, i, g.Name(i))
		}
	})
}

func TestLabelValueFor_Properties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := base.Draw(t, "a")
		b := base.Draw(t, "b")
		la, lb := naming.LabelValueFor(a), naming.LabelValueFor(b)
		if err := naming.Validate(la, naming.LabelValue); err != nil {
			t.Fatalf("LabelValueFor(%q) = %q: %v", a, la, err)
		}
		if naming.Validate(a, naming.LabelValue) == nil && la != a {
			t.Fatalf("LabelValueFor(%q) = %q, want a valid value unchanged", a, la)
		}
		if a != b && la == lb {
			t.Fatalf("LabelValueFor(%q) == LabelValueFor(%q) == %q", a, b, la)
		}
	})
}

func TestRandom_Errors(t *testing.T) {
	if _, err := (naming.Random{Base: "x"}).Names(1, nil); !errors.Is(err, naming.ErrNoSource) {
		t.Errorf("Names without a source: %v, want ErrNoSource", err)
	}
	// A source that always gives the same number can make only one name.
	g := naming.Random{Base: "x", Source: constSource(1 << 63)}
	if _, err := g.Names(2, nil); !errors.Is(err, naming.ErrExhausted) {
		t.Errorf("Names(2) from a constant source: %v, want ErrExhausted", err)
	}
}

type constSource uint64

func (c constSource) Uint64() uint64 { return uint64(c) }

func TestFit(t *testing.T) {
	long := strings.Repeat("abcdefghij", 10)
	tests := []struct {
		g    naming.Indexed
		i    int
		want string
	}{
		{naming.Indexed{Base: "web"}, 3, "web-3"},
		{naming.Indexed{Base: "Web.Server_A"}, 0, "web-server-a-0"},
		{naming.Indexed{Base: "--x--"}, 1, "x-1"},
		{naming.Indexed{Base: ""}, 7, "7"},
		{naming.Indexed{Base: long}, 12, long[:60] + "-12"},
		{naming.Indexed{Base: long, Target: naming.VSphereName}, 12, long[:77] + "-12"},
		{naming.Indexed{Base: long, Target: naming.ObjectName}, 12, long + "-12"},
	}
	for _, tt := range tests {
		if got := tt.g.Name(tt.i); got != tt.want {
			t.Errorf("%+v.Name(%d) = %q, want %q", tt.g, tt.i, got, tt.want)
		}
	}
}

func ExampleRandom() {
	g := naming.Random{Base: "test-rs", Source: rand.NewPCG(1, 2)}
	names, err := g.Names(2, []string{"test-rs-zmdmm"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range names {
		fmt.Println(len(n), strings.HasPrefix(n, "test-rs-"), naming.Validate(n, naming.Portable) == nil)
	}
	// Output:
	// 13 true true
	// 13 true true
}

func ExampleIndexed() {
	g := naming.Indexed{Base: "web"}
	names, _ := g.Names(2, []string{"web-0", "web-2"})
	fmt.Println(names)
	i, ok := g.Ordinal("web-2")
	fmt.Println(i, ok)
	// Output:
	// [web-1 web-3]
	// 2 true
}

func ExampleValidate() {
	fmt.Println(naming.Validate("Test_RS-1", naming.Portable))
	// Output:
	// "Test_RS-1" is not a valid portable name (DNS-1123 label): character 'T' at position 0 is not allowed (use lowercase letters, digits and '-'): naming: invalid name
}

func ExampleLabelValueFor() {
	fmt.Println(naming.LabelValueFor("web"))
	long := naming.LabelValueFor(strings.Repeat("vm-replica-set.", 10))
	fmt.Println(len(long), naming.Validate(long, naming.LabelValue) == nil)
	// Output:
	// web
	// 63 true
}
