package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var testRules = rules{License: "Apache-2.0", Accepted: []string{"Apache-2.0", "MIT"}}

// TestCheckPackage: the rules applied to the fixture pages, one problem
// per broken expectation.
func TestCheckPackage(t *testing.T) {
	library := readFixture(t, "library.html")
	// The same page without its runnable package example: the other
	// example has no output, so it does not count.
	start := strings.Index(library, `<details tabindex="-1" id="example-package"`)
	end := start + strings.Index(library[start:], "</details>") + len("</details>")
	noRunnable := library[:start] + library[end:]
	// The same page with its index markup renamed, as a pkgsite release
	// could: the entry points can no longer be read.
	renamed := strings.ReplaceAll(library, "Documentation-index", "Documentation-contents")

	tests := []struct {
		name   string
		pkg    pkg
		status int
		body   string
		want   []string
	}{
		{
			name:   "library with a runnable example",
			pkg:    pkg{ImportPath: "example.com/lib/shapes", Name: "shapes", Module: "example.com/lib"},
			status: 200,
			body:   library,
		},
		{
			name:   "library without a runnable example",
			pkg:    pkg{ImportPath: "example.com/lib/shapes", Name: "shapes", Module: "example.com/lib"},
			status: 200,
			body:   noRunnable,
			want: []string{
				"no runnable example (an Example function with an // Output: comment), though it has 5 exported entry points: Area, OldArea, NewSquare, Square.Area, Square.Scale",
			},
		},
		{
			name:   "index markup not understood",
			pkg:    pkg{ImportPath: "example.com/lib/shapes", Name: "shapes", Module: "example.com/lib", Exported: 5},
			status: 200,
			body:   renamed,
			want: []string{
				"go/doc finds 5 exported functions and methods but the page's index lists none: pkgsite's markup has changed or the page is broken, and the example rule cannot be applied",
			},
		},
		{
			name:   "index markup not understood in a command",
			pkg:    pkg{ImportPath: "example.com/lib/cmd/tool", Name: "main", Module: "example.com/lib", Exported: 1},
			status: 200,
			body:   renamed,
		},
		{
			name:   "internal package without a runnable example",
			pkg:    pkg{ImportPath: "example.com/lib/internal/shapes", Name: "shapes", Module: "example.com/lib"},
			status: 200,
			body:   noRunnable,
		},
		{
			name:   "attributed to another module",
			pkg:    pkg{ImportPath: "example.com/lib/shapes", Name: "shapes", Module: "example.com/lib/shapes"},
			status: 200,
			body:   library,
			want:   []string{`pkgsite shows it in module "example.com/lib", not "example.com/lib/shapes"`},
		},
		{
			name:   "not redistributable",
			pkg:    pkg{ImportPath: "example.com/closed/x", Name: "x", Module: "example.com/closed"},
			status: 200,
			body:   readFixture(t, "restricted.html"),
			want: []string{
				`the page says "Documentation not displayed due to license restrictions."`,
				"the page has no Documentation section",
				"a license is detected as UNKNOWN, which pkg.go.dev does not accept as redistributable: it would not display the documentation",
			},
		},
		{
			name:   "command without a license",
			pkg:    pkg{ImportPath: "example.com/lib/cmd/tool", Name: "main", Module: "example.com/lib"},
			status: 200,
			body:   readFixture(t, "command.html"),
			want:   []string{"the page header says License: None detected: pkg.go.dev would not display the documentation"},
		},
		{
			name:   "another accepted license",
			pkg:    pkg{ImportPath: "example.com/lib/shapes", Name: "shapes", Module: "example.com/lib"},
			status: 200,
			body:   strings.Replace(library, ">Apache-2.0</a>", ">Apache-2.0, MIT, MIT, + 1 more</a>", 1),
			want: []string{
				"a license is detected as MIT, want only Apache-2.0",
				"a license is detected as MIT, want only Apache-2.0",
				`more than three license files apply (the header shows "+ N more"); want only the module's Apache-2.0 LICENSE`,
			},
		},
		{
			name:   "missing",
			pkg:    pkg{ImportPath: "example.com/lib/gone", Name: "gone", Module: "example.com/lib"},
			status: 404,
			body:   "not found",
			want:   []string{"not served: pkgsite answered 404"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := testRules.checkPackage(tt.pkg, tt.status, tt.body)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("checkPackage (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUncovered: an entry point is covered by an example of its own, and a
// constructor or method also by an example of its type.
func TestUncovered(t *testing.T) {
	pg := page{
		EntryPoints: []entryPoint{
			{ID: "Area"},
			{ID: "Perimeter"},
			{ID: "NewSquare", Type: "Square"},
			{ID: "Square.Scale", Type: "Square"},
			{ID: "NewCircle", Type: "Circle"},
			{ID: "Circle.Scale", Type: "Circle"},
		},
		Examples: []example{
			{ID: "example-package"},
			{ID: "example-Area-Unit"},
			{ID: "example-Square"},
			{ID: "example-Circle.Scale"},
		},
	}
	want := []string{"Perimeter", "NewCircle"}
	if diff := cmp.Diff(want, uncovered(pg)); diff != "" {
		t.Errorf("uncovered (-want +got):\n%s", diff)
	}
}

// TestPkgKinds: commands and internal packages are exempt from the example
// rule, and so is a package whose index lists no function.
func TestPkgKinds(t *testing.T) {
	withEntry := page{EntryPoints: []entryPoint{{ID: "F"}}}
	tests := []struct {
		pkg  pkg
		page page
		want bool
	}{
		{pkg{ImportPath: "example.com/m/lib", Name: "lib"}, withEntry, true},
		{pkg{ImportPath: "example.com/m/lib", Name: "lib"}, page{}, false},
		{pkg{ImportPath: "example.com/m/cmd/tool", Name: "main"}, withEntry, false},
		{pkg{ImportPath: "example.com/m/internal/x", Name: "x"}, withEntry, false},
		{pkg{ImportPath: "example.com/m/internal", Name: "internal"}, withEntry, false},
		{pkg{ImportPath: "example.com/m/internals", Name: "internals"}, withEntry, true},
	}
	for _, tt := range tests {
		if got := tt.pkg.needsExample(tt.page); got != tt.want {
			t.Errorf("%s (package %s): needsExample = %v, want %v", tt.pkg.ImportPath, tt.pkg.Name, got, tt.want)
		}
	}
}

// TestCount: counts read as English.
func TestCount(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want string
	}{{0, "0 modules"}, {1, "1 module"}, {2, "2 modules"}} {
		if got := count(tt.n, "module"); got != tt.want {
			t.Errorf("count(%d, module) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
