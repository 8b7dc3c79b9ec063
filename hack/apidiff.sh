#!/usr/bin/env bash
# apidiff.sh compares the exported API of both modules (the library at the
# root and the example operator in examples/) with the last release recorded
# in CHANGELOG.md, using golang.org/x/exp/cmd/apidiff, and fails when an
# incompatible change is not listed under "## Unreleased" → "### Breaking
# changes" there (internal/cmd/apidiffcheck decides; the top of CHANGELOG.md
# says how to list one). The new side is the working tree, uncommitted edits
# included; the old side is the release's commit, exported with git archive,
# so the clone needs that commit: a full clone, not a shallow one.
#
# Usage: hack/apidiff.sh   (or: make apidiff)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin=${BIN:-$root/bin}
# The modules are compared on their own go.mod, never through a go.work.
export GOWORK=off

fail() {
	printf 'apidiff: %s\n' "$*" >&2
	exit 1
}

BIN=$bin bash "$root/hack/tools/checkers.sh" apidiff
apidiff=$bin/apidiff

tmp=$(mktemp -d "${TMPDIR:-/tmp}/replicakit-apidiff.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/apidiffcheck" ./internal/cmd/apidiffcheck
commit=$("$tmp/apidiffcheck" -changelog CHANGELOG.md -release) ||
	fail "CHANGELOG.md records no last release to compare with (see the format at its top)"

if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
	hint="Fetch the full history (git fetch --unshallow, or in CI a checkout with fetch-depth: 0) and run again."
	if [[ $(git rev-parse --is-shallow-repository 2>/dev/null) == true ]]; then
		hint="This is a shallow clone. $hint"
	fi
	fail "the last release's commit $commit, recorded in CHANGELOG.md, is not in this clone. $hint"
fi
printf 'apidiff: comparing the working tree with the last release, %s\n' "$(git log -1 --format='%h %s' "$commit")"

# The release's tree, whole: the examples module's replace directive (../)
# then builds its old API against the old library, as it was released.
mkdir "$tmp/old"
git archive "$commit" | tar -x -C "$tmp/old"

reports=()
ignore=()
for dir in . examples; do
	name=${dir//[.\/]/_}
	new=$root/$dir
	old=$tmp/old/$dir
	module=$(go -C "$new" list -m)
	if [[ ! -f $old/go.mod ]]; then
		printf 'apidiff: module %s is new since the release: nothing to compare\n' "$module"
		continue
	fi
	if [[ $(go -C "$old" list -m) != "$module" ]]; then
		fail "$dir/go.mod's module path is now $module, not $(go -C "$old" list -m): that is a new module (a new major version) for importers, which apidiff cannot compare"
	fi
	(cd "$old" && "$apidiff" -m -w "$tmp/$name.old" "$module") ||
		fail "could not load $module at $commit"
	(cd "$new" && "$apidiff" -m -w "$tmp/$name.new" "$module") ||
		fail "could not load $module in the working tree"
	# apidiff notes each internal package it skips on stderr; show it only
	# when apidiff fails.
	"$apidiff" -m -incompatible "$tmp/$name.old" "$tmp/$name.new" >"$tmp/$name.txt" 2>"$tmp/$name.log" ||
		{ cat "$tmp/$name.log" >&2; fail "apidiff could not compare $module"; }
	reports+=("$module=$tmp/$name.txt")
	# Main packages cannot be imported: their exported names are no API.
	for tree in "$old" "$new"; do
		mains=$(go -C "$tree" list -f '{{if eq .Name "main"}}{{.ImportPath}}{{end}}' ./...)
		ignore+=("$mains")
	done
done

"$tmp/apidiffcheck" -changelog CHANGELOG.md -ignore "${ignore[*]}" "${reports[@]}"
