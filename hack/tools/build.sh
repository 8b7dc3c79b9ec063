#!/usr/bin/env bash
# build.sh builds the real components that tests and the demo run (etcd,
# kube-apiserver, kube-controller-manager, kubectl, controller-gen), and, with
# WITH_KWOK=1, kwok for the end-to-end rollout benchmark, from the Go module
# proxy into BIN (default: bin/ at the repository root).
#
# A tool is rebuilt only when its stamp (the pinned version plus a hash of the
# module files that pin it and the Go version) differs from the one recorded
# beside the binary, so a warm run does nothing but compare stamps.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${BIN:-$root/bin}
mkdir -p "$bin"
bin=$(cd "$bin" && pwd)

kube_version=v1.37.2
etcd_version=v3.7.3
controller_gen_version=v0.23.0
kwok_version=v0.8.0
gover=$(go env GOVERSION)

hash_of() { cat "$@" | sha256sum | cut -c1-16; }

# needs TOOL STAMP: true when bin/TOOL is missing or was built from another stamp.
needs() {
	[[ -x $bin/$1 && -f $bin/.$1.stamp && $(<"$bin/.$1.stamp") == "$2" ]] && return 1
	return 0
}
stamp() { printf '%s' "$2" >"$bin/.$1.stamp"; }

log() { printf 'tools: %s\n' "$*" >&2; }

# Kubernetes: one go build for whichever of the three binaries is missing, so
# the packages they share are compiled once. -s -w drops the symbol table and
# DWARF, which shortens the (single-threaded) links of these large binaries;
# tests never debug them.
kube_linkflags="-s -w"
kube_stamp="$kube_version $gover $kube_linkflags $(hash_of "$root/hack/tools/kube/go.mod" "$root/hack/tools/kube/go.sum")"
kube_pkgs=()
for t in kube-apiserver kube-controller-manager kubectl; do
	needs "$t" "$kube_stamp" && kube_pkgs+=("k8s.io/kubernetes/cmd/$t")
done
if ((${#kube_pkgs[@]})); then
	major=${kube_version#v}; major=${major%%.*}
	minor=${kube_version#v*.}; minor=${minor%%.*}
	ldflags="$kube_linkflags"
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $p.gitVersion=$kube_version -X $p.gitMajor=$major -X $p.gitMinor=$minor"
		ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
	done
	log "building ${kube_pkgs[*]##*/} $kube_version (several minutes when cold)"
	start=$SECONDS
	(cd "$root/hack/tools/kube" && go build -ldflags "$ldflags" -o "$bin/" "${kube_pkgs[@]}")
	for p in "${kube_pkgs[@]}"; do stamp "${p##*/}" "$kube_stamp"; done
	log "built ${kube_pkgs[*]##*/} in $((SECONDS - start))s"
fi

etcd_stamp="$etcd_version $gover $(hash_of "$root/hack/tools/etcd/go.mod" "$root/hack/tools/etcd/go.sum")"
if needs etcd "$etcd_stamp"; then
	log "building etcd $etcd_version"
	start=$SECONDS
	(cd "$root/hack/tools/etcd" && go build -o "$bin/etcd" go.etcd.io/etcd/server/v3)
	stamp etcd "$etcd_stamp"
	log "built etcd in $((SECONDS - start))s"
fi

cg_stamp="$controller_gen_version $gover"
if needs controller-gen "$cg_stamp"; then
	log "installing controller-gen $controller_gen_version"
	GOBIN=$bin go install "sigs.k8s.io/controller-tools/cmd/controller-gen@$controller_gen_version"
	stamp controller-gen "$cg_stamp"
fi

# kwok simulates nodes for `make bench-e2e`'s rollouts: it marks the Pods on
# fake nodes Running and Ready, as a kubelet would. Its own module
# (hack/tools/kwok) pins it with its own Kubernetes libraries, apart from
# the control plane's. Only with WITH_KWOK=1 (`make tools-kwok`): nothing
# but the benchmark needs it, so `make test` does not build it.
[[ ${WITH_KWOK:-} == 1 ]] || exit 0
kwok_stamp="$kwok_version $gover $(hash_of "$root/hack/tools/kwok/go.mod" "$root/hack/tools/kwok/go.sum")"
if needs kwok "$kwok_stamp"; then
	log "building kwok $kwok_version"
	start=$SECONDS
	(cd "$root/hack/tools/kwok" && go build -ldflags "-s -w" -o "$bin/kwok" sigs.k8s.io/kwok/cmd/kwok)
	stamp kwok "$kwok_stamp"
	log "built kwok in $((SECONDS - start))s"
fi
