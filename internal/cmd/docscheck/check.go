package main

import (
	"fmt"
	"slices"
	"strings"
)

// pkg is one package of a module, as go list reports it.
type pkg struct {
	ImportPath string
	Name       string
	Module     string // module path
	// Exported is the number of exported functions and methods go/doc
	// finds in the package's source: what pkgsite's index should list.
	Exported int
}

// command reports whether the package is a command (package main). pkgsite
// shows only a command's package comment: no index and no examples.
func (p pkg) command() bool { return p.Name == "main" }

// internal reports whether the package can only be imported from within its
// own module: its import path has an element "internal".
func (p pkg) internal() bool {
	return slices.Contains(strings.Split(p.ImportPath, "/"), "internal")
}

// needsExample reports whether the example rule applies to the package:
// it is importable (neither a command nor internal) and its index lists
// at least one entry point.
func (p pkg) needsExample(pg page) bool {
	return !p.command() && !p.internal() && len(pg.EntryPoints) > 0
}

// rules are the expectations a package's pages are checked against.
type rules struct {
	// License is the license type every license that applies to a package
	// must have ("Apache-2.0").
	License string
	// Accepted are the license types pkgsite's license policy page lists:
	// pkg.go.dev displays a package's documentation only when every
	// license that applies to it has one of these types.
	Accepted []string
}

// checkPackage returns the problems with one package's main page, given
// its HTTP status and body; each problem is a sentence without the package
// path.
func (r rules) checkPackage(p pkg, status int, body string) []string {
	if status != 200 {
		return []string{fmt.Sprintf("not served: pkgsite answered %d", status)}
	}
	pg := parsePage(body)
	var problems []string
	if pg.ModulePath != p.Module {
		problems = append(problems, fmt.Sprintf("pkgsite shows it in module %q, not %q", pg.ModulePath, p.Module))
	}
	if pg.NotDisplayed {
		problems = append(problems, fmt.Sprintf("the page says %q", notDisplayed))
	}
	if !pg.HasDoc {
		problems = append(problems, "the page has no Documentation section")
	}
	problems = append(problems, r.checkLicenses(pg)...)
	if !p.command() && p.Exported > 0 && len(pg.EntryPoints) == 0 {
		// The page cannot be read as this checker expects: unless this is
		// a problem, the example rule would pass on every package.
		problems = append(problems, fmt.Sprintf(
			"go/doc finds %d exported functions and methods but the page's index lists none: pkgsite's markup has changed or the page is broken, and the example rule cannot be applied",
			p.Exported))
	}
	if p.needsExample(pg) && !slices.ContainsFunc(pg.Examples, example.Runnable) {
		ids := make([]string, len(pg.EntryPoints))
		for i, ep := range pg.EntryPoints {
			ids[i] = ep.ID
		}
		problems = append(problems, fmt.Sprintf(
			"no runnable example (an Example function with an // Output: comment), though it has %s: %s",
			count(len(ids), "exported entry point"), abbreviate(ids, 6)))
	}
	return problems
}

// checkLicenses checks the "License:" item of a page's header, which lists
// the type of every license file that applies to the package (one entry
// per file and type): there must be at least one, each must be the wanted
// type, and each must be a type pkg.go.dev accepts, since it displays a
// package's documentation only when every license that applies to it is
// one it accepts as redistributable. pkgsite shows the first three
// entries and then "+ N more"; more than three fail, since the rest cannot
// be seen.
func (r rules) checkLicenses(pg page) []string {
	switch {
	case !pg.LicenseItem:
		return []string{"the page header has no License item"}
	case len(pg.Licenses) == 0:
		return []string{fmt.Sprintf("the page header says License: %s: pkg.go.dev would not display the documentation", noneDetected)}
	}
	var problems []string
	for _, t := range pg.Licenses {
		if !slices.Contains(r.Accepted, t) {
			problems = append(problems, fmt.Sprintf("a license is detected as %s, which pkg.go.dev does not accept as redistributable: it would not display the documentation", t))
		} else if t != r.License {
			problems = append(problems, fmt.Sprintf("a license is detected as %s, want only %s", t, r.License))
		}
	}
	if pg.More {
		problems = append(problems, "more than three license files apply (the header shows \"+ N more\"); want only the module's "+r.License+" LICENSE")
	}
	return problems
}

// uncovered returns the entry points on a page that have no example of
// their own: a function or method without an example attached to it,
// where an example of a method's or constructor's type also counts.
func uncovered(pg page) []string {
	has := map[string]bool{}
	for _, e := range pg.Examples {
		has[e.Parent()] = true
	}
	var ids []string
	for _, ep := range pg.EntryPoints {
		if !has[ep.ID] && (ep.Type == "" || !has[ep.Type]) {
			ids = append(ids, ep.ID)
		}
	}
	return ids
}

// abbreviate joins the first n strings of s with commas, saying how many
// more there are.
func abbreviate(s []string, n int) string {
	if len(s) <= n {
		return strings.Join(s, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(s[:n], ", "), len(s)-n)
}

// count returns "1 thing" or "n things".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
