// Command docscheck checks the modules' documentation as pkg.go.dev will
// show it, with the tool pkg.go.dev itself runs: it serves the checkout
// with pkgsite (golang.org/x/pkgsite/cmd/pkgsite, pinned in
// hack/tools/checkers.sh) on a free loopback port, fetches every package's
// page, and fails, listing every problem, when
//
//   - a package is not served, or is shown in another module than its own;
//   - the page says "Documentation not displayed due to license
//     restrictions." or has no Documentation section;
//   - the header's "License:" item lists no license, or a license type
//     other than the wanted one (-license, Apache-2.0), or one that is not
//     on pkgsite's /license-policy list, or more than three license files;
//   - an importable package (neither package main nor under an internal/
//     directory) has an exported entry point but no runnable example.
//
// The packages are those `go list ./...` reports in each module directory
// given as an argument (default: the current directory), internal packages
// and commands included, since pkg.go.dev shows them too.
//
// # Licenses in local mode
//
// pkgsite run on a checkout detects licenses with the same code as
// pkg.go.dev (internal/licenses.Detector, used by internal/fetch's
// FetchLazyModule) but then marks every unit redistributable: cmd/pkgsite
// builds its data source with BypassLicenseCheck set
// (cmd/internal/pkgsite.newServer), and FetchDataSource.findUnit sets
// IsRedistributable instead of removing the documentation. So the "not
// displayed" notice never appears locally, and its licenses tab is empty
// (the data source never fills in the license contents). What it does show
// is the header's "License:" item: the type of every license file that
// applies to the package, as detected. docscheck applies pkg.go.dev's rule
// to that list itself: the documentation is displayed only when every
// license that applies is of a type on the license policy page, which
// pkgsite serves from the same list (licenses.AcceptedLicenses).
//
// # Entry points and runnable examples
//
// A package's exported entry points are the functions its index lists:
// exported package-level functions, exported functions listed under a type
// (constructors: functions returning that type) and exported methods of
// exported types. Constants, variables and types without functions or
// methods are not entry points. pkgsite shows no index for a command, so a
// command never has one. An example is runnable when it has an
// "// Output:" comment with expected output: go test runs it, and the page
// shows its output. With -v, docscheck also lists for each package the
// entry points that have no example of their own (a method or constructor
// counts as covered by an example of its type); these do not fail.
//
// The modules' paths are added to GOPRIVATE for pkgsite, so that it does
// not ask deps.dev and codewiki.google about them: the check needs no
// network. pkgsite is stopped at the end.
//
// The exit status is 0 when every check passes, 1 when any fails (each
// problem is listed), and 2 when the check could not be made.
//
//	bash hack/tools/checkers.sh pkgsite
//	go run ./internal/cmd/docscheck -pkgsite bin/pkgsite . examples
package main
