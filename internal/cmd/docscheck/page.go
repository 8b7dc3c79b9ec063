package main

import (
	"html"
	"regexp"
	"strings"
)

// The markup below is pkgsite's (golang.org/x/pkgsite v0.6.0): the unit page
// is static/frontend/unit/main/main.tmpl with the header from
// static/frontend/unit/_header.tmpl, the documentation body is
// static/doc/body.tmpl with examples from static/doc/example.tmpl, and the
// accepted licenses are listed by
// static/frontend/license-policy/license-policy.tmpl.

// notDisplayed is the sentence pkgsite shows instead of a package's
// documentation when it judges the package not redistributable.
const notDisplayed = "Documentation not displayed due to license restrictions."

// noneDetected is what the header's license item says when no license file
// applies to the unit.
const noneDetected = "None detected"

// page is what docscheck reads from a package's main page.
type page struct {
	// ModulePath is the module pkgsite attributes the unit to.
	ModulePath string
	// NotDisplayed reports whether the page says the documentation is not
	// displayed due to license restrictions.
	NotDisplayed bool
	// HasDoc reports whether the page has the Documentation section.
	HasDoc bool
	// Licenses are the license types in the header's "License:" item, in
	// order; nil when it says "None detected". The header shows at most
	// three and then "+ N more", counted in More.
	Licenses []string
	More     bool
	// LicenseItem reports whether the header has a "License:" item at all.
	LicenseItem bool
	// EntryPoints are the index's functions: package-level functions,
	// functions listed under a type (constructors) and methods, by their
	// anchor ("F", "NewT", "T.M"), in index order.
	EntryPoints []entryPoint
	// Examples are the page's examples, in order.
	Examples []example
}

// entryPoint is one function or method in a package's index.
type entryPoint struct {
	ID   string // anchor: "F", "NewT" or "T.M"
	Type string // the type it is listed under, or "" for a package function
}

// example is one example on a page.
type example struct {
	// ID is the example's anchor: "example-package", "example-F",
	// "example-T.M", with "-Suffix" for a suffixed example.
	ID string
	// Output is the expected output the page shows, trimmed; "" when the
	// example has no "// Output:" comment (or an empty one).
	Output string
}

// Parent returns the identifier the example is attached to ("F", "T",
// "T.M"), or "" for a package example.
func (e example) Parent() string {
	id := strings.TrimPrefix(e.ID, "example-")
	if id == "package" || strings.HasPrefix(id, "package-") {
		return ""
	}
	parent, _, _ := strings.Cut(id, "-")
	return parent
}

// Runnable reports whether the example is run by go test and shows its
// output: it has an "// Output:" comment with expected output.
func (e example) Runnable() bool { return e.Output != "" }

var (
	modulePathAttr = regexp.MustCompile(`data-modulepath="([^"]*)"`)
	docSection     = regexp.MustCompile(`<div class="UnitDoc"|id="section-documentation"`)

	licenseItem = regexp.MustCompile(`(?s)data-test-id="UnitHeader-licenses">(.*?)</span>\s*<div [^>]*id="license-description"`)
	moreLicense = regexp.MustCompile(`^\+ \d+ more$`)

	indexSection = regexp.MustCompile(`(?s)<section class="Documentation-index">(.*?)</section>`)
	// indexToken matches, in the order they appear in the index: a
	// package function, a type, the start of a type's function or method
	// list, the end of a list, and a link inside a list.
	indexToken = regexp.MustCompile(`(?s)` +
		`<li class="Documentation-indexFunction">\s*<a [^>]*?href="#([^"]+)"` +
		`|<li class="Documentation-indexType">\s*<a [^>]*?href="#([^"]+)"` +
		`|<ul class="Documentation-indexType(Functions|Methods)">` +
		`|(</ul>)` +
		`|<a [^>]*?href="#([^"]+)"`)

	exampleDetails = regexp.MustCompile(`(?s)<details [^>]*?id="(example-[^"]*)"[^>]*>(.*?)</details>`)
	exampleOutput  = regexp.MustCompile(`(?s)<pre class="Documentation-exampleOutputContainer[^"]*"([^>]*)>.*?<span class="Documentation-exampleOutput">(.*?)</span>`)

	policyList = regexp.MustCompile(`(?s)<ul class="LicenseTypes-list">(.*?)</ul>`)
	listItem   = regexp.MustCompile(`(?s)<li>(.*?)</li>`)

	tag = regexp.MustCompile(`<[^>]*>`)
)

// parsePage reads a package's main page.
func parsePage(s string) page {
	var p page
	if m := modulePathAttr.FindStringSubmatch(s); m != nil {
		p.ModulePath = html.UnescapeString(m[1])
	}
	p.NotDisplayed = strings.Contains(s, notDisplayed)
	p.HasDoc = docSection.MatchString(s)
	if m := licenseItem.FindStringSubmatch(s); m != nil {
		p.LicenseItem = true
		p.Licenses, p.More = headerLicenses(m[1])
	}
	if m := indexSection.FindStringSubmatch(s); m != nil {
		p.EntryPoints = indexEntryPoints(m[1])
	}
	for _, m := range exampleDetails.FindAllStringSubmatch(s, -1) {
		e := example{ID: html.UnescapeString(m[1])}
		if o := exampleOutput.FindStringSubmatch(m[2]); o != nil && !strings.Contains(o[1], "hidden") {
			e.Output = strings.TrimSpace(text(o[2]))
		}
		p.Examples = append(p.Examples, e)
	}
	return p
}

// headerLicenses returns the license types listed in the header's license
// item, and whether it says more are not shown.
func headerLicenses(item string) (types []string, more bool) {
	t := text(item)
	t = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(t), "License:"))
	t = strings.TrimSpace(strings.TrimSuffix(t, "not legal advice"))
	if t == noneDetected || t == "" {
		return nil, false
	}
	for _, f := range strings.Split(t, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "":
		case moreLicense.MatchString(f):
			more = true
		default:
			types = append(types, f)
		}
	}
	return types, more
}

// indexEntryPoints returns the functions and methods the index section
// lists.
func indexEntryPoints(index string) []entryPoint {
	var (
		eps    []entryPoint
		typ    string // the type the current list belongs to
		inList bool
	)
	for _, m := range indexToken.FindAllStringSubmatch(index, -1) {
		switch {
		case m[1] != "":
			eps = append(eps, entryPoint{ID: html.UnescapeString(m[1])})
			inList = false
		case m[2] != "":
			typ = html.UnescapeString(m[2])
			inList = false
		case m[3] != "":
			inList = true
		case m[4] != "":
			inList = false
		case m[5] != "" && inList:
			eps = append(eps, entryPoint{ID: html.UnescapeString(m[5]), Type: typ})
		}
	}
	return eps
}

// parsePolicy returns the license types the license policy page lists as
// detected and recognized: the ones that make a package redistributable.
func parsePolicy(s string) []string {
	m := policyList.FindStringSubmatch(s)
	if m == nil {
		return nil
	}
	var types []string
	for _, li := range listItem.FindAllStringSubmatch(m[1], -1) {
		if t := strings.TrimSpace(text(li[1])); t != "" {
			types = append(types, t)
		}
	}
	return types
}

// text returns s without its tags, unescaped, with runs of white space
// collapsed to one space.
func text(s string) string {
	return strings.Join(strings.Fields(html.UnescapeString(tag.ReplaceAllString(s, " "))), " ")
}
