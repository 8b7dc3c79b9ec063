#!/usr/bin/env bash
# checkers.sh installs the pinned tools that check the project rather than run
# it (golangci-lint, pkgsite, apidiff) from the Go module proxy into BIN
# (default: bin/ at the repository root), each only when its stamp (version
# and Go version) differs from the one recorded beside the binary.
#
# Usage: checkers.sh [TOOL...]   (default: all of them)
#
# Plain bash 3 (no associative arrays), so that it runs as macOS ships it.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${BIN:-$root/bin}
mkdir -p "$bin"
bin=$(cd "$bin" && pwd)
gover=$(go env GOVERSION)

all="golangci-lint pkgsite apidiff"

# pin prints the package@version of a tool. golangci-lint's own go.mod pins
# its linters; pkgsite has tags (v0.6.0 is the newest); x/exp has none, so
# apidiff is pinned by pseudo-version.
pin() {
	case $1 in
	golangci-lint) echo github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0 ;;
	pkgsite) echo golang.org/x/pkgsite/cmd/pkgsite@v0.6.0 ;;
	apidiff) echo golang.org/x/exp/cmd/apidiff@v0.0.0-20261113113407-e3970619a1a4 ;;
	*) return 1 ;;
	esac
}

tools=("$@")
((${#tools[@]})) || read -r -a tools <<<"$all"
for t in "${tools[@]}"; do
	p=$(pin "$t") || { echo "checkers.sh: unknown tool $t (known: $all)" >&2; exit 2; }
	stamp="$p $gover"
	if [[ -x $bin/$t && -f $bin/.$t.stamp && $(<"$bin/.$t.stamp") == "$stamp" ]]; then
		continue
	fi
	printf 'tools: installing %s\n' "$p" >&2
	# go install pkg@version ignores the current module and refuses
	# -mod=vendor; -mod=mod overrides a GOFLAGS=-mod=vendor in the caller's
	# environment, which would otherwise fail the install.
	GOBIN=$bin GOFLAGS=-mod=mod go install "$p"
	printf '%s' "$stamp" >"$bin/.$t.stamp"
done
