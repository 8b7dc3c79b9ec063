#!/usr/bin/env bash
# benchbase.sh runs a package's benchmarks at this checkout beside the same
# benchmarks at BASE (a commit), in one run: the two test binaries take
# turns, BENCH_COUNT rounds of each, so that the machine's drift over the
# run moves both alike. It compiles BASE's package with this checkout's
# bench_test.go (benchmarks that use only the exported API), so both run
# the same benchmarks, and prints each as HEAD over BASE with
# internal/cmd/benchratio (BASE is the "baseline" of each group).
#
#	BASE=16e2253 PKG=./replicaset BENCH=ComputeFeatures bash hack/benchbase.sh
set -euo pipefail
cd "$(dirname "$0")/.."
base=${BASE:?BASE=<commit> to compare with}
pkg=${PKG:-./replicaset}
bench=${BENCH:-.}
count=${BENCH_COUNT:-5}
benchtime=${BENCH_TIME:-1s}
dir=$(mktemp -d)
trap 'git worktree remove --force "$dir/base" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
git worktree add --detach "$dir/base" "$base" >/dev/null 2>&1
cp "$pkg/bench_test.go" "$dir/base/$pkg/bench_test.go"
go -C "$dir/base" test -c -o "$dir/base.test" "$pkg"
go test -c -o "$dir/head.test" "$pkg"
# name rewrites Benchmark<name>-<procs> as Benchmark<name>/<as>-<procs>.
name() { sed -E "s#^(Benchmark[^[:space:]]+)-([0-9]+)([[:space:]])#\1/$1-\2\3#"; }
for _ in $(seq "$count"); do
	"$dir/base.test" -test.run '^$' -test.bench "$bench" -test.benchtime "$benchtime" -test.benchmem | name baseline
	"$dir/head.test" -test.run '^$' -test.bench "$bench" -test.benchtime "$benchtime" -test.benchmem | name head
done | go run ./internal/cmd/benchratio
