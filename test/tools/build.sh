#!/usr/bin/env bash
# build.sh [K8S_VERSION] [COMPONENT...]
#
# Builds the lab's real control-plane binaries from the published Go modules:
#   kube-apiserver  k8s.io/kubernetes/cmd/kube-apiserver
#   kube-proxy      k8s.io/kubernetes/cmd/kube-proxy
#   etcd            go.etcd.io/etcd/server/v3 (the version k8s.io/kubernetes requires)
# and, for the lab's nodes that run Pods (named only on request):
#   kubelet, kube-controller-manager, kube-scheduler, kubectl  k8s.io/kubernetes/cmd/<name>
# into ${SVCTRACE_LAB_CACHE:-$HOME/.cache/svctrace-lab}/<K8S_VERSION>/.
#
# K8S_VERSION defaults to $SVCTRACE_LAB_K8S_VERSION, else the version in test/tools/go.mod.
# COMPONENT defaults to all three; "kube-proxy" alone builds only kube-proxy (what an
# extra proxy version served by another version's control plane needs).
#
# The module used for the build requires k8s.io/kubernetes@K8S_VERSION and replaces every
# k8s.io staging module that k8s.io/kubernetes's go.mod requires as v0.0.0 with v0.Y.Z.
# For the version pinned in test/tools/go.mod the build runs in test/tools itself (checked-in
# go.sum); for any other version the module is generated under <cache>/<version>/mod/.
#
# Idempotent: a component whose binary already exists is skipped. Environment:
#   SVCTRACE_LAB_CACHE         cache root
#   SVCTRACE_LAB_ETCD_VERSION  override the etcd server version
#   SVCTRACE_LAB_FORCE=1       rebuild even when binaries exist
# Options (before the version):
#   --gen-only DIR   only write the generated go.mod/tool module for the version into DIR
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
log() { printf 'build.sh: %s\n' "$*" >&2; }

gen_only=""
if [[ "${1:-}" == "--gen-only" ]]; then
	gen_only=$2
	shift 2
fi

pinned=$(awk '$1=="k8s.io/kubernetes" && $2 ~ /^v1\./ {print $2; exit}' "$here/go.mod")
version=${1:-${SVCTRACE_LAB_K8S_VERSION:-$pinned}}
[[ $# -gt 0 ]] && shift
components=("$@")
[[ ${#components[@]} -eq 0 ]] && components=(kube-apiserver kube-proxy etcd)

if [[ ! $version =~ ^v1\.([0-9]+)\.([0-9]+)$ ]]; then
	log "version must look like v1.Y.Z, got '$version'"
	exit 2
fi
minor=${BASH_REMATCH[1]}
staging_version="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"

cache=${SVCTRACE_LAB_CACHE:-$HOME/.cache/svctrace-lab}
out="$cache/$version"
mkdir -p "$out"

export GOFLAGS=-mod=mod
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
export CGO_ENABLED=0

need=()
for c in "${components[@]}"; do
	case $c in
	kube-apiserver | kube-proxy | etcd | kubelet | kube-controller-manager | kube-scheduler | kubectl) ;;
	*)
		log "unknown component '$c' (kube-apiserver, kube-proxy, etcd, kubelet, kube-controller-manager, kube-scheduler, kubectl)"
		exit 2
		;;
	esac
	if [[ -x "$out/$c" && "${SVCTRACE_LAB_FORCE:-}" != 1 && -z $gen_only ]]; then
		log "$out/$c exists, skipping"
	else
		need+=("$c")
	fi
done
if [[ ${#need[@]} -eq 0 && -z $gen_only ]]; then
	log "nothing to build for $version"
	exit 0
fi

# Serialize concurrent builds of the same version (parallel test binaries).
exec 9>"$out/.build.lock"
if command -v flock >/dev/null; then
	log "waiting for lock $out/.build.lock"
	flock 9
	# Another build.sh may have built some while this one waited.
	left=()
	for c in "${need[@]}"; do
		if [[ ! -x "$out/$c" || "${SVCTRACE_LAB_FORCE:-}" == 1 || -n $gen_only ]]; then
			left+=("$c")
		fi
	done
	need=("${left[@]}")
	if [[ ${#need[@]} -eq 0 && -z $gen_only ]]; then
		log "built meanwhile: nothing to build for $version"
		exit 0
	fi
fi

# staging_for MODULE: the version of a staging module the build uses: the release's own,
# except where the module proxy refuses it. k8s.io/kube-proxy@v0.31.12 to v0.31.14 are
# refused (403), so v1.31.14 takes v0.31.11: the module holds kube-proxy's configuration
# types (config/v1alpha1) only, and kube-proxy itself is k8s.io/kubernetes@v1.31.14's.
staging_for() {
	case "$version $1" in
	"v1.31.14 k8s.io/kube-proxy") echo v0.31.11 ;;
	*) echo "$staging_version" ;;
	esac
}

# tool_pkg COMPONENT: the package a component is built from.
tool_pkg() {
	case $1 in
	etcd) echo go.etcd.io/etcd/server/v3 ;;
	*) echo "k8s.io/kubernetes/cmd/$1" ;;
	esac
}

# gen_module DIR: write go.mod requiring k8s.io/kubernetes@version plus staging replaces, with
# the tools in $tools. The checked-in module lists every component; a generated one lists
# only those asked for (and those it listed before), so a release whose modules the proxy
# serves only in part (some staging modules of some patch releases are refused) still builds
# what it can.
gen_module() {
	local dir=$1
	mkdir -p "$dir"
	log "reading go.mod of k8s.io/kubernetes@$version"
	local kmod
	kmod=$(cd / && GOFLAGS= GO111MODULE=on go mod download -json "k8s.io/kubernetes@$version" |
		sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
	if [[ -z $kmod || ! -f $kmod ]]; then
		log "cannot download k8s.io/kubernetes@$version"
		exit 1
	fi
	local gover
	gover=$(awk '$1=="go" {print $2; exit}' "$kmod")
	# Staging modules: requirements "k8s.io/<name> v0.0.0" (inside or outside require blocks).
	local staging
	staging=$(awk '
		/^require[[:space:]]*\(/ {inreq=1; next}
		inreq && /^\)/ {inreq=0; next}
		inreq && $2=="v0.0.0" && $1 ~ /^k8s\.io\// {print $1}
		/^require[[:space:]]+k8s\.io\/[^ ]+[[:space:]]+v0\.0\.0/ {print $2}
	' "$kmod" | sort -u)
	local etcdv=${SVCTRACE_LAB_ETCD_VERSION:-}
	if [[ -z $etcdv ]]; then
		etcdv=$(awk '$1=="go.etcd.io/etcd/server/v3" {print $2; exit}' "$kmod")
	fi
	if [[ -z $etcdv ]]; then
		etcdv=$(awk '$1=="go.etcd.io/etcd/client/v3" {print $2; exit}' "$kmod")
	fi
	log "go $gover, etcd $etcdv, $(wc -w <<<"$staging") staging modules -> $staging_version"
	{
		echo "// Code generated by test/tools/build.sh $version. DO NOT EDIT."
		echo "// Regenerate: test/tools/build.sh --gen-only test/tools $version"
		echo
		echo "module github.com/svctrace/svctrace/test/tools"
		echo
		echo "go $gover"
		echo
		echo "tool ("
		local tool
		for tool in "${tools[@]}"; do
			echo "	$tool"
		done
		echo ")"
		echo
		echo "require ("
		echo "	go.etcd.io/etcd/server/v3 $etcdv"
		echo "	k8s.io/kubernetes $version"
		echo ")"
		echo
		echo "replace ("
		local m
		for m in $staging; do
			echo "	$m => $m $(staging_for "$m")"
		done
		echo ")"
	} >"$dir/go.mod"
	rm -f "$dir/go.sum"
	log "go mod tidy in $dir (downloads modules on first use)"
	(cd "$dir" && go mod tidy)
}

tools=()
if [[ -n $gen_only ]]; then
	for c in kube-apiserver kube-controller-manager kube-proxy kube-scheduler kubectl kubelet etcd; do
		tools+=("$(tool_pkg "$c")")
	done
	mapfile -t tools < <(printf '%s\n' "${tools[@]}" | LC_ALL=C sort)
	gen_module "$gen_only"
	log "wrote $gen_only/go.mod"
	exit 0
fi

if [[ $version == "$pinned" ]]; then
	moddir=$here
	log "using checked-in module $moddir (k8s.io/kubernetes $version)"
else
	moddir="$out/mod"
	for c in "${need[@]}"; do
		tools+=("$(tool_pkg "$c")")
	done
	missing=0
	for tool in "${tools[@]}"; do
		if [[ ! -f $moddir/go.mod ]] || ! grep -Fqx "	$tool" "$moddir/go.mod"; then
			missing=1
		fi
	done
	if [[ -f $moddir/go.mod && -f $moddir/go.sum ]]; then
		# Keep the tools listed before (by a generation that succeeded).
		mapfile -t -O "${#tools[@]}" tools < <(awk '/^tool \(/ {t=1; next} t && /^\)/ {t=0} t {print $1}' "$moddir/go.mod")
	fi
	mapfile -t tools < <(printf '%s\n' "${tools[@]}" | LC_ALL=C sort -u)
	if [[ $missing == 1 || ! -f $moddir/go.sum ]] || ! grep -Eq "k8s\.io/kubernetes $version( |$)" "$moddir/go.mod"; then
		gen_module "$moddir"
	else
		log "using generated module $moddir"
	fi
fi

ldflags="-s -w"
ldflags+=" -X k8s.io/component-base/version.gitVersion=$version"
ldflags+=" -X k8s.io/component-base/version.gitMajor=1"
ldflags+=" -X k8s.io/component-base/version.gitMinor=$minor"
ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"
ldflags+=" -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"
ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$version"
ldflags+=" -X k8s.io/client-go/pkg/version.gitMajor=1"
ldflags+=" -X k8s.io/client-go/pkg/version.gitMinor=$minor"

for c in "${need[@]}"; do
	case $c in
	kube-apiserver) pkg=k8s.io/kubernetes/cmd/kube-apiserver ;;
	kube-proxy | kubelet | kube-controller-manager | kube-scheduler | kubectl) pkg=k8s.io/kubernetes/cmd/$c ;;
	etcd) pkg=go.etcd.io/etcd/server/v3 ;;
	esac
	log "building $c ($pkg) -> $out/$c"
	start=$(date +%s)
	(cd "$moddir" && nice -n 10 go build -trimpath -ldflags "$ldflags" -o "$out/$c.tmp" "$pkg")
	mv "$out/$c.tmp" "$out/$c"
	log "built $c in $(($(date +%s) - start))s"
done
log "done: $(ls "$out" | tr '\n' ' ')"
