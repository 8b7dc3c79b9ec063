#!/usr/bin/env bash
# fuzz.sh runs every native Go fuzz target (func FuzzXxx) of both modules
# for FUZZTIME each (default 1m), one after the other, and prints how many
# inputs each ran. A failure stops it; Go writes the failing input under the
# package's testdata/fuzz/FuzzXxx, where it becomes part of the seed corpus
# that every `go test` runs: commit it with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-1m}
summary=()
for m in . examples; do
	# Packages with fuzz targets: their test files declare func FuzzXxx
	# (the examples module's are left to its own turn).
	pkgs=$(cd "$m" && grep -rl --include='*_test.go' --exclude-dir=bin --exclude-dir=.git --exclude-dir=examples \
		-E '^func Fuzz[A-Z_a-z0-9]*\(f \*testing\.F\)' . | xargs -r -n1 dirname | sort -u || true)
	for p in $pkgs; do
		for fz in $(go -C "$m" test -list '^Fuzz' "$p" | grep '^Fuzz' || true); do
			echo "fuzz: $m $p $fz for $fuzztime"
			out=$(go -C "$m" test -run '^$' -fuzz "^$fz\$" -fuzztime "$fuzztime" "$p" 2>&1) || {
				echo "$out"
				exit 1
			}
			execs=$(grep -o 'execs: [0-9]*' <<<"$out" | tail -1 | cut -d' ' -f2)
			summary+=("$(printf '%-60s %12s inputs' "${p#./}.$fz" "${execs:-?}")")
		done
	done
done
printf '%s\n' "${summary[@]}"
