#!/usr/bin/env bash
# checkers.sh installs the pinned tools that check the project rather than run
# it (golangci-lint, pkgsite, apidiff) from the Go module proxy into BIN
# (default: bin/ at the repository root), each only when its stamp (version
# and Go version) differs from the one recorded beside the binary.
#
# Usage: checkers.sh [TOOL...]   (default: all of them)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${BIN:-$root/bin}
mkdir -p "$bin"
bin=$(cd "$bin" && pwd)
gover=$(go env GOVERSION)

# The pins. golangci-lint's own go.mod pins its linters; pkgsite has tags
# (v0.6.0 is the newest); x/exp has none, so apidiff is pinned by
# pseudo-version.
declare -A pkg=(
	[golangci-lint]=github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
	[pkgsite]=golang.org/x/pkgsite/cmd/pkgsite@v0.6.0
	[apidiff]=golang.org/x/exp/cmd/apidiff@v0.0.0-20261113113407-e3970619a1a4
)

tools=("$@")
((${#tools[@]})) || tools=(golangci-lint pkgsite apidiff)
for t in "${tools[@]}"; do
	[[ -n ${pkg[$t]:-} ]] || { echo "checkers.sh: unknown tool $t (known: ${!pkg[*]})" >&2; exit 2; }
	stamp="${pkg[$t]} $gover"
	if [[ -x $bin/$t && -f $bin/.$t.stamp && $(<"$bin/.$t.stamp") == "$stamp" ]]; then
		continue
	fi
	printf 'tools: installing %s\n' "${pkg[$t]}" >&2
	GOBIN=$bin GOFLAGS=-mod=mod go install "${pkg[$t]}"
	printf '%s' "$stamp" >"$bin/.$t.stamp"
done
