package naming_test

import (
	"math/rand/v2"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/replicakit/replicakit/naming"
)

// FuzzValidate checks Validate against Kubernetes' own validation on
// arbitrary strings, for each target apimachinery knows.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{"", "web-0", "Web", "-a", "a-", "a.b", "a_b", "a..b", "é", "a\x00b", string(make([]byte, 64))} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, o := range []struct {
			target naming.Target
			errs   func(string) []string
		}{
			{naming.Portable, validation.IsDNS1123Label},
			{naming.ObjectName, validation.IsDNS1123Subdomain},
			{naming.LabelValue, validation.IsValidLabelValue},
		} {
			err := naming.Validate(s, o.target)
			if want := o.errs(s); (err == nil) != (len(want) == 0) {
				t.Fatalf("Validate(%q, %v) = %v; apimachinery says %q", s, o.target, err, want)
			}
		}
		_ = naming.Validate(s, naming.VSphereName) // must not panic
	})
}

// FuzzNames makes names from arbitrary bases with both generators, for
// every target, and checks each is valid there, with Kubernetes' own
// validation for the Portable ones, distinct, and not among the existing.
func FuzzNames(f *testing.F) {
	f.Add("web", uint64(1), uint8(3), uint8(0))
	f.Add("", uint64(2), uint8(1), uint8(1))
	f.Add("Ünïcode/Owner Name.With_Dots", uint64(3), uint8(5), uint8(2))
	f.Add(string(make([]byte, 300)), uint64(4), uint8(2), uint8(3))
	f.Add("---", uint64(5), uint8(2), uint8(0))
	f.Fuzz(func(t *testing.T, base string, seed uint64, n, target uint8) {
		tg := naming.Target(target % 4)
		count := int(n % 20)
		existing := []string{base, base + "-0", base + "-1"}
		for _, g := range []naming.Namer{
			naming.Random{Base: base, Source: rand.NewPCG(seed, seed^0x9e3779b97f4a7c15), Target: tg},
			naming.Indexed{Base: base, Target: tg},
		} {
			names, err := g.Names(count, existing)
			if err != nil {
				t.Fatalf("%T.Names(%d) from base %q: %v", g, count, base, err)
			}
			if len(names) != count {
				t.Fatalf("%T.Names(%d) from base %q gave %d names", g, count, base, len(names))
			}
			seen := map[string]bool{}
			for _, name := range names {
				if err := naming.Validate(name, tg); err != nil {
					t.Fatalf("%T from base %q: %v", g, base, err)
				}
				if tg == naming.Portable {
					if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
						t.Fatalf("%T from base %q made %q: %v", g, base, name, errs)
					}
				}
				if seen[name] || name == existing[0] || name == existing[1] || name == existing[2] {
					t.Fatalf("%T from base %q made %q twice or taken", g, base, name)
				}
				seen[name] = true
			}
			if ix, ok := g.(naming.Indexed); ok {
				for _, name := range names {
					if i, ok := ix.Ordinal(name); !ok || ix.Name(i) != name {
						t.Fatalf("Indexed{%q}.Ordinal(%q) = %d, %v", base, name, i, ok)
					}
				}
			}
		}
	})
}

// FuzzLabelValueFor checks that LabelValueFor gives a valid label value
// for any string, s itself when s is one, and different values for
// different strings that are not.
func FuzzLabelValueFor(f *testing.F) {
	f.Add("web-0", "web-1")
	f.Add(string(make([]byte, 100)), string(make([]byte, 101)))
	f.Add("a/b", "a-b")
	f.Fuzz(func(t *testing.T, a, b string) {
		va, vb := naming.LabelValueFor(a), naming.LabelValueFor(b)
		for _, c := range [][2]string{{a, va}, {b, vb}} {
			if errs := validation.IsValidLabelValue(c[1]); len(errs) > 0 {
				t.Fatalf("LabelValueFor(%q) = %q: %v", c[0], c[1], errs)
			}
			if len(validation.IsValidLabelValue(c[0])) == 0 && c[1] != c[0] {
				t.Fatalf("LabelValueFor(%q) = %q, want it unchanged", c[0], c[1])
			}
		}
		if a != b && va == vb {
			t.Fatalf("LabelValueFor(%q) = LabelValueFor(%q) = %q", a, b, va)
		}
	})
}
