# replicakit: `make test` runs the tests against real components, `make demo`
# plays the example operator's story. Both build what they need into bin/.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

BIN := $(CURDIR)/bin
export KUBEBUILDER_ASSETS := $(BIN)

# Two Go modules: the library (here) and the example operator (examples/,
# its own go.mod, replaced onto this checkout), so that the library's
# importers never inherit the operator's dependencies.
MODULES := . examples
# Benchmarks run several times so benchratio can take medians.
BENCH_COUNT ?= 5
BENCH_TIME ?= 1s
# Runs of each healing measurement (bench-heal, and bench-e2e's VM harness).
HEAL_RUNS ?= 5
# bench-calls: runs of each count of vCenter calls, and of each timing
# under the latency model, at this factor on a vCenter's times.
CALLS_RUNS ?= 3
LATENCY_RUNS ?= 3
LATENCY_SCALE ?= 0.05
# `make test` runs each fuzz target this long (its seeds, the cached
# corpus, then new inputs); `make fuzz` runs each for FUZZTIME (1m).
FUZZ_SHORT ?= 3s
# The targets `make test` fuzzes (hack/fuzz.sh's FUZZ_ONLY).
FUZZ_SMOKE ?= ^(naming|replicaset)\.

.PHONY: all
all: test

# pkgsite's address for `make docs`; loopback only.
DOCS_ADDR ?= localhost:6060

## tools: build etcd, kube-apiserver, kube-controller-manager, kubectl and
## controller-gen from the Go module proxy into bin/ (skips what is built).
.PHONY: tools
tools:
	@BIN=$(BIN) bash hack/tools/build.sh

## tools-kwok: the tools, and kwok (for bench-e2e's rollouts).
.PHONY: tools-kwok
tools-kwok:
	@BIN=$(BIN) WITH_KWOK=1 bash hack/tools/build.sh

## checkers: install the pinned tools that check the code (golangci-lint,
## pkgsite, apidiff) into bin/ (skips what is installed).
.PHONY: checkers
checkers:
	@BIN=$(BIN) bash hack/tools/checkers.sh

## fmt-check: fail when a Go file is not gofmt-formatted.
.PHONY: fmt-check
fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')); \
	if [[ -n "$$out" ]]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

## vet: go vet every package of both modules.
.PHONY: vet
vet:
	@for m in $(MODULES); do echo "go vet ($$m)"; go -C $$m vet ./...; done

## lint: golangci-lint (pinned in hack/tools/checkers.sh, configured by
## .golangci.yml) on both modules; fails on any finding.
.PHONY: lint
lint:
	@BIN=$(BIN) bash hack/tools/checkers.sh golangci-lint
	@for m in $(MODULES); do echo "golangci-lint ($$m)"; (cd $$m && $(BIN)/golangci-lint run ./...); done

## test: gofmt check, go vet, golangci-lint, go.mod tidy, generated code up
## to date, the exported API against the last release (apidiff), every
## package's documentation as pkg.go.dev renders it (docs-check), the
## tests of both modules with the race detector, against the real control
## plane built by `make tools`, and then the fuzz targets of the pure
## packages (FUZZ_SMOKE: naming, replicaset) for FUZZ_SHORT each
## (hack/fuzz.sh): a smoke run that the targets still find nothing
## quickly, not a search (`make fuzz` runs every target). The other
## targets' seeds and corpora run as tests under go test; their
## fuzz-instrumented builds (controller-runtime, the example operator)
## take minutes on a cold cache, which CI's machine always has. Of the chaos suite it runs one small
## scenario of each kind (everything at two cycles of 4, zone-outage,
## rollout-revert, vcenter-partition, the four healing ones, the four
## lifecycle-hook ones and inplace-faults small;
## `make chaos` runs them all at full size); of the reliability tests, the leader killed mid-clone,
## kube-apiserver restarted mid-scale-up and the soak for 90 s (`make
## reliability` runs every moment, `make soak` the long soak).
.PHONY: test
test: tools fmt-check vet lint tidy-check generate-check apidiff docs-check
	@for m in $(MODULES); do echo "go test ($$m)"; go -C $$m test -race -count=1 -timeout 25m ./...; done
	@FUZZTIME=$(FUZZ_SHORT) FUZZ_ONLY='$(FUZZ_SMOKE)' bash hack/fuzz.sh

## tidy-check: fail when a module's go.mod or go.sum is not tidy.
.PHONY: tidy-check
tidy-check:
	@for m in $(MODULES); do go -C $$m mod tidy -diff || \
		{ echo "go.mod in $$m is not tidy: run 'go -C $$m mod tidy'" >&2; exit 1; }; done

## generate: regenerate the example operator's deepcopy code, CRDs and RBAC from
## the kubebuilder markers (all three are committed).
.PHONY: generate
generate: tools
	cd examples && $(BIN)/controller-gen object paths=./vmset/...
	cd examples && $(BIN)/controller-gen crd paths=./vmset/... output:crd:artifacts:config=vmset/config/crd/bases
	cd examples && $(BIN)/controller-gen rbac:roleName=vmset-manager paths=./vmset/... output:rbac:artifacts:config=vmset/config/rbac

## generate-check: fail when the committed generated code is stale.
.PHONY: generate-check
generate-check: generate
	@git diff --exit-code --stat -- examples/vmset/api examples/vmset/config/crd examples/vmset/config/rbac || \
		{ echo "generated code was stale: run 'make generate' and commit the result" >&2; exit 1; }

## docs: serve both modules' documentation as pkg.go.dev shows it, with
## pkg.go.dev's own server code (golang.org/x/pkgsite/cmd/pkgsite v0.6.0), on
## http://$(DOCS_ADDR) until Ctrl-C; dependencies' docs come from the
## module cache.
.PHONY: docs
docs:
	@BIN=$(BIN) bash hack/tools/checkers.sh pkgsite
	@echo "docs: http://$(DOCS_ADDR)/github.com/replicakit/replicakit (Ctrl-C stops)"
	@GOPRIVATE="$$(go env GOPRIVATE),github.com/replicakit/replicakit" $(BIN)/pkgsite -http=$(DOCS_ADDR) $(MODULES)

## docs-check: serve both modules with pkgsite on a free loopback port and
## fail when a package's page would not display its documentation on
## pkg.go.dev, its license is not detected as Apache-2.0 alone, or an
## importable package with an exported entry point has no runnable example
## (internal/cmd/docscheck).
.PHONY: docs-check
docs-check:
	@BIN=$(BIN) bash hack/tools/checkers.sh pkgsite
	@go build -o $(BIN)/docscheck ./internal/cmd/docscheck
	$(BIN)/docscheck -pkgsite $(BIN)/pkgsite $(MODULES)

## apidiff: compare the exported API of both modules with the last release
## recorded in CHANGELOG.md (apidiff, installed into bin/ by
## hack/tools/checkers.sh) and fail when an incompatible change is not listed
## under Unreleased → Breaking changes. Needs the full git history.
.PHONY: apidiff
apidiff:
	@BIN=$(BIN) bash hack/apidiff.sh

## bench: run the benchmarks and print each as a ratio against the baseline
## measured in the same run.
.PHONY: bench
bench:
	go test -run '^$$' -bench . -benchmem -count $(BENCH_COUNT) -benchtime $(BENCH_TIME) ./... \
		| go run ./internal/cmd/benchratio

## bench-base: a package's benchmarks (PKG, default ./replicaset; BENCH, a
## -bench pattern) beside the same benchmarks at BASE, an earlier commit
## (default 16e2253, the planner before issue 42 made Compute one pass),
## the two binaries taking turns in one run; each printed as this
## checkout over BASE (hack/benchbase.sh).
BASE ?= 16e2253
PKG ?= ./replicaset
BENCH ?= .
.PHONY: bench-base
bench-base:
	@BASE=$(BASE) PKG=$(PKG) BENCH='$(BENCH)' BENCH_COUNT=$(BENCH_COUNT) BENCH_TIME=$(BENCH_TIME) bash hack/benchbase.sh

## bench-e2e: the binding beside kube-controller-manager's ReplicaSet
## controller on one API server (0→500, 500→0, cascade, at 20/30 and
## 1000/1000), a raw create loop, many owners in one namespace (100×5, 400×5,
## 1000×2: time, controller CPU, idle CPU), a steady-state pass, and a
## rollout of 500 Pods (25% surge, 25% unavailable) beside the Deployment
## controller, with kwok making Pods Ready (time, CPU, writes, the fewest
## available Pods a watch saw; -rollout-only for that alone), printing the
## table of ratios and writes per replica; then 0→100 VMs through the
## example operator beside raw provider clones, a settled set's cost, 100
## sets of 3 at once and a hung guest healed, as bench-heal (the examples
## module's own harness). The VM times move with the simulator's CPU;
## bench-calls gives the figures that do not (it is not part of bench-e2e).
.PHONY: bench-e2e
bench-e2e: tools-kwok
	go run ./internal/cmd/benche2e
	go -C examples run ./internal/cmd/benchvms -heal-runs $(HEAL_RUNS)

## bench-heal: a hung guest (its heartbeat red for good) in a set of 3
## healing through the example operator on vcsim (unhealthyWindow 2s,
## startupWindow 5s), reset then replaced, and replaced with restart off:
## from the hang to the replacement serving, beside the floor (the
## windows, one provider reset, one provider clone and power-on, measured
## in the same run), HEAL_RUNS times each, printing each run and the
## median [min–max] (about 2 minutes at 5 runs).
.PHONY: bench-heal
bench-heal: tools
	go -C examples run ./internal/cmd/benchvms -heal-only -heal-runs $(HEAL_RUNS)

## bench-hooks: a set of 10 VMs scaled to 0 through the example operator on
## vcsim with a drain hook that holds each VM 5s, beside the same without
## hooks, HEAL_RUNS times, printing each run and the median [min–max] of
## the extra time and of its ratio to the hook's length (≈ 1: the VMs
## drain at once, not one after another).
.PHONY: bench-hooks
bench-hooks: tools
	go -C examples run ./internal/cmd/benchvms -hooks-only -heal-runs $(HEAL_RUNS)

## bench-calls: vCenter calls and tasks per VM, counted at the simulator's
## gate, through the example operator beside the same work straight
## through the provider (0→100 VMs; a rollout of 20 VMs from 4 to 8 GiB,
## by replacement and in place with memory hot-add), CALLS_RUNS times,
## with the ratio (goal ≤ 1.2 beyond the operator's watch) and a table by
## method; then 0→20 VMs (full clones and linked) and the two rollouts
## timed under the latency model (vcsim.RealWorld, a vCenter's documented
## times, scaled by LATENCY_SCALE: 0.05 makes a 2-minute full clone 6 s),
## LATENCY_RUNS times, operator beside provider, and in place beside by
## replacement (goals ≤ 0.1 of the time and of the tasks, no VM
## unavailable) and linked beside full. Counts do not move with the
## machine's load; about 25 minutes at 3 runs each.
.PHONY: bench-calls
bench-calls: tools
	go -C examples run ./internal/cmd/benchvms -calls-only -calls-runs $(CALLS_RUNS) \
		-latency -latency-runs $(LATENCY_RUNS) -latency-scale $(LATENCY_SCALE)

## fuzz: every native Go fuzz target of both modules, each for FUZZTIME
## (default 1m), printing how many inputs each ran and failing when one
## finds a failing input (hack/fuzz.sh; FUZZ_PARALLEL sets the workers).
.PHONY: fuzz
fuzz:
	@FUZZTIME=$(or $(FUZZTIME),1m) bash hack/fuzz.sh

## chaos: the example operator's chaos suite at full size (API faults, a
## lagging cache, vCenter faults, restarts, foreign objects, a zone
## outage, a rollout and its revert, a vCenter partition, healing
## through a blip, a partition, a rollout and a bad template, and lifecycle
## hooks: a crashed drainer, a rollout with remediation, the set deleted
## while its VMs drain and a restart while they prepare, and in-place
## memory rollouts through refused reconfigures), printing its
## table; `make test` runs one small scenario of each kind. Each
## scenario's random faults are seeded from REPLICAKIT_CHAOS_SEED when
## set (a failure prints its seed and the command that replays it).
.PHONY: chaos
chaos: tools
	REPLICAKIT_CHAOS=large go -C examples test -race -count=1 -v -run TestChaos -timeout 45m ./vmset/chaos

## reliability: the example operator as deployed, every moment: the leader
## killed mid-clone, mid-destroy, mid-rollout, mid-adoption and at three
## random moments, kube-apiserver and etcd each restarted mid-scale-up and
## mid-rollout, and the soak for 90 s; `make test` runs the first moment
## of each and the soak. Random choices are seeded from
## REPLICAKIT_RELIABILITY_SEED when set.
.PHONY: reliability
reliability: tools
	REPLICAKIT_RELIABILITY=full go -C examples test -race -count=1 -v -timeout 45m ./vmset/reliability

## soak: the example operator as deployed (two vmset-manager processes
## electing a leader, vcsimd over TLS) under random work, vCenter faults,
## zone outages, leader kills and an API server restart for SOAK (default
## 30m; `make soak SOAK=2h`), sampling each manager process every 30 s;
## fails when a series grows beyond its tolerance over the second half or
## an invariant breaks. The table and plot go to bin/soak/ (soak.txt,
## soak.svg). `make test` runs it for 90 s without judging growth.
SOAK ?= 30m
.PHONY: soak
soak: tools
	REPLICAKIT_SOAK=$(SOAK) REPLICAKIT_SOAK_DIR=$(BIN)/soak go -C examples test -count=1 -v -run '^TestSoak$$' -timeout 0 ./vmset/reliability

## manager: build the example operator into bin/vmset-manager.
.PHONY: manager
manager:
	go -C examples build -o $(BIN)/vmset-manager ./vmset/cmd/vmset-manager

## demo: start etcd, kube-apiserver, kube-controller-manager and the example
## operator on its embedded vCenter simulator, play the seed's story with
## kubectl, check Kubernetes and vCenter at each step, and stop everything.
.PHONY: demo
demo: tools manager
	go -C examples run ./vmset/cmd/vmset-demo -manager $(BIN)/vmset-manager -config $(CURDIR)/examples/vmset/config

## run: start the same environment and keep it running until Ctrl-C,
## printing the kubeconfig and commands to try.
.PHONY: run
run: tools manager
	go -C examples run ./vmset/cmd/vmset-demo -manager $(BIN)/vmset-manager -config $(CURDIR)/examples/vmset/config -keep

## clean: remove built tools.
.PHONY: clean
clean:
	rm -rf $(BIN)

.PHONY: help
help:
	@grep -E '^## ' Makefile | sed 's/^## //'
