package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readFixture returns a page from testdata: small pages written for these
// tests in the shape of pkgsite's markup, and one page pkgsite served.
func readFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestParsePage: each fixture yields its module, whether the documentation
// is displayed, the header's license types, the index's functions and
// methods with the type they are listed under, and the examples with the
// output they show.
func TestParsePage(t *testing.T) {
	tests := []struct {
		fixture string
		want    page
	}{
		{
			fixture: "library.html",
			want: page{
				ModulePath:  "example.com/lib",
				HasDoc:      true,
				LicenseItem: true,
				Licenses:    []string{"Apache-2.0"},
				EntryPoints: []entryPoint{
					{ID: "Area"},
					{ID: "OldArea"},
					{ID: "NewSquare", Type: "Square"},
					{ID: "Square.Area", Type: "Square"},
					{ID: "Square.Scale", Type: "Square"},
				},
				Examples: []example{
					{ID: "example-package", Output: "4"},
					{ID: "example-Square.Scale-Twice"},
				},
			},
		},
		{
			// Captured from pkgsite v0.6.0 (the version checkers.sh pins)
			// serving this module's naming package on 2026-12-03: the
			// markup the hand-written fixtures imitate. Capture it again
			// when the pin moves (make docs, then save the page).
			fixture: "pkgsite-v0.6.0-naming.html",
			want: page{
				ModulePath:  "github.com/replicakit/replicakit",
				HasDoc:      true,
				LicenseItem: true,
				Licenses:    []string{"Apache-2.0"},
				EntryPoints: []entryPoint{
					{ID: "LabelValueFor"},
					{ID: "Validate"},
					{ID: "Indexed.Name", Type: "Indexed"},
					{ID: "Indexed.Names", Type: "Indexed"},
					{ID: "Indexed.Ordinal", Type: "Indexed"},
					{ID: "Random.Names", Type: "Random"},
					{ID: "Target.MaxLen", Type: "Target"},
					{ID: "Target.String", Type: "Target"},
				},
				Examples: []example{
					{ID: "example-LabelValueFor", Output: "web 63 true"},
					{ID: "example-Validate", Output: `"Test_RS-1" is not a valid portable name (DNS-1123 label): character 'T' at position 0 is not allowed (use lowercase letters, digits and '-'): naming: invalid name`},
					{ID: "example-Indexed", Output: "[web-1 web-3] 2 true"},
					{ID: "example-Random", Output: "13 true true 13 true true"},
					{ID: "example-Target", Output: "portable name (DNS-1123 label), at most 63: false Kubernetes object name (DNS-1123 subdomain), at most 253: false Kubernetes label value, at most 63: true vSphere VM name, at most 80: true"},
				},
			},
		},
		{
			fixture: "restricted.html",
			want: page{
				ModulePath:   "example.com/closed",
				NotDisplayed: true,
				LicenseItem:  true,
				Licenses:     []string{"Apache-2.0", "UNKNOWN"},
			},
		},
		{
			fixture: "command.html",
			want: page{
				ModulePath:  "example.com/lib",
				HasDoc:      true,
				LicenseItem: true,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			got := parsePage(readFixture(t, tt.fixture))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parsePage (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHeaderLicenses: the header shows at most three types and then
// "+ N more"; "None detected" means no types.
func TestHeaderLicenses(t *testing.T) {
	tests := []struct {
		item  string
		types []string
		more  bool
	}{
		{item: `License: <a href="?tab=licenses">Apache-2.0</a>`, types: []string{"Apache-2.0"}},
		{item: "\n    License: <a href=\"?tab=licenses\">Apache-2.0, MIT, BSD-3-Clause, + 2 more</a>\n", types: []string{"Apache-2.0", "MIT", "BSD-3-Clause"}, more: true},
		{item: `License: <span>None detected</span> <a href="/license-policy"><em>not legal advice</em></a>`},
		{item: `License: <span> MIT,  UNKNOWN</span> <a href="/license-policy"><em>not legal advice</em></a>`, types: []string{"MIT", "UNKNOWN"}},
	}
	for _, tt := range tests {
		types, more := headerLicenses(tt.item)
		if diff := cmp.Diff(tt.types, types); diff != "" || more != tt.more {
			t.Errorf("headerLicenses(%q): more %v, want %v; types (-want +got):\n%s", tt.item, more, tt.more, diff)
		}
	}
}

// TestExampleParent: an example's anchor names what it is attached to.
func TestExampleParent(t *testing.T) {
	for id, want := range map[string]string{
		"example-package":            "",
		"example-package-Zones":      "",
		"example-Compute":            "Compute",
		"example-Compute-Zones":      "Compute",
		"example-Set.Status":         "Set.Status",
		"example-Square.Scale-Twice": "Square.Scale",
	} {
		if got := (example{ID: id}).Parent(); got != want {
			t.Errorf("example %q: Parent() = %q, want %q", id, got, want)
		}
	}
}

// TestParsePolicy: the accepted types are the policy list's items, linked
// or not, and nothing from other lists.
func TestParsePolicy(t *testing.T) {
	got := parsePolicy(readFixture(t, "policy.html"))
	want := []string{"0BSD", "Apache-2.0", "MIT", "NIST-PD"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parsePolicy (-want +got):\n%s", diff)
	}
}
