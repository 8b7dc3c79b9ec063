// Command apidiffcheck fails when an incompatible change to the exported API,
// as golang.org/x/exp/cmd/apidiff reports it, is not listed in CHANGELOG.md
// under "## Unreleased" → "### Breaking changes". hack/apidiff.sh (make
// apidiff) runs it; see CHANGELOG.md for the format it relies on.
//
// Usage:
//
//	apidiffcheck [-changelog FILE] [-ignore PKGS] MODULE=REPORT...
//	apidiffcheck [-changelog FILE] -release
//
// Each REPORT is the output of `apidiff -m -incompatible OLD NEW` for the
// module whose path is MODULE. Lines "- message" are changes; when a report
// carries apidiff's "Incompatible changes:" and "Compatible changes:"
// headers, the compatible ones are skipped, so compatible changes never fail
// the check. -ignore lists import paths (separated by commas or spaces) whose
// changes do not count: the script passes the module's main packages, which
// nothing can import.
//
// With -release, apidiffcheck prints the full commit hash recorded for the
// last release instead: the first "## v..." section after "## Unreleased",
// on its line beginning "Commit:".
//
// # Matching rule
//
// An incompatible change is listed when the text of the Breaking changes
// section (HTML comments removed) names the changed identifier qualified by
// its package name: the last element of the package's import path, as in
// deletionpolicy.Default, kube.Reconciler.Policies (a field) or
// kube.Adapter.Describe (a method; write no receiver parentheses, star or
// type parameters). More of the import path may come before the name, as in
// replicaset/kube.Reconciler.Policies. The name must stand alone: it may not
// continue with a letter, digit, '_' or a '.' and a further name, so
// kube.Reconciler.Policies does not list a change to kube.Reconciler itself.
// A removed package is listed by its full import path, such as
// github.com/replicakit/replicakit/replicaset/kube.
//
// apidiff reports a method that a type loses through an embedded field as
// "T.M, method set of U"; such a change is listed by the method's own name,
// pkg.T.M. A renamed identifier is two changes (the old name removed, and
// for an interface method the new one added), which an entry naming both,
// "`kube.Adapter.Observe` → `kube.Adapter.Describe`", lists at once.
//
// Exit status: 0 when every incompatible change is listed, 1 when one is not
// (each is printed with the name to list it by), 2 on a usage error or a
// report or changelog it cannot read.
package main
