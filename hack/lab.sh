#!/usr/bin/env bash
# A small real cluster on this machine, for people: two nodes in network namespaces, each with
# containerd and a kubelet, the control plane and its controllers, and kube-proxy as a
# DaemonSet. Everything is built here (no registry, no network beyond the Go module proxy and
# Debian's packages) and stays inside the lab's namespaces.
#
#   hack/lab.sh up [--proxy-mode iptables|nftables] [--version 1.36.3] [--nodes N]
#   hack/lab.sh status
#   hack/lab.sh load-image FILE    # an image archive (docker save's layout) into every node
#   hack/lab.sh images             # the images each node has
#   hack/lab.sh down
#
# The nodes pull nothing (no registry): a Pod runs an image loaded with load-image (hack/image.sh
# writes svctrace's, svctrace-image.tar) and says imagePullPolicy: Never or IfNotPresent.
# up prints a KUBECONFIG for this host (the API server is forwarded to the host's loopback) and how
# to enter a node; down removes every namespace, process, mount, cgroup and directory of the lab.
# Needs root, Go and apt (hack/test-all.sh installs the packages; up does too when missing).
# The state lives in $SVCTRACE_LAB_STATE (default /run/svctrace-lab); the API server is
# forwarded to $SVCTRACE_LAB_API (default 127.0.0.1:6443; port 0 picks a free one).
set -euo pipefail
cd "$(dirname "$0")/.."
state=${SVCTRACE_LAB_STATE:-/run/svctrace-lab}

die() {
	echo "hack/lab.sh: $*" >&2
	exit 1
}
[ "$(id -u)" = 0 ] || die "run as root (the lab uses network namespaces, cgroups and netfilter)"

field() { # field NAME: a top-level string or number of state.json
	sed -n "s/^  \"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" "$state/state.json" | head -1
}

running() {
	[ -f "$state/state.json" ] || return 1
	local pid
	pid=$(field pid)
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

describe() {
	local kc
	kc=$(field kubeconfig)
	echo "lab: $(field version), kube-proxy in $(field proxyMode) mode, nodes:"
	sed -n 's/^ *"name": "\(.*\)",$/\1/p' "$state/state.json" | paste -sd' ' | sed 's/^/  /'
	echo
	echo "From this host (the API server is forwarded to $(field api)):"
	echo "  export KUBECONFIG=$kc"
	echo "  kubectl get nodes -o wide"
	echo
	echo "On a node, where svctrace --local sees the node's kernel state (the API server is 192.0.2.2 there):"
	grep -o '"netns": "[^"]*"' "$state/state.json" | sed 's/"netns": "\(.*\)"/  ip netns exec \1 bash/'
	echo "  ip netns exec $(grep -o '"netns": "[^"]*node1"' "$state/state.json" | cut -d'"' -f4) kubectl-svctrace drift --local -A --node node1 --kubeconfig $(field labKubeconfig)"
	echo "Logs of every component: $(field logs)"
	echo
	echo "Images: the nodes pull nothing; load an archive into every node with"
	echo "  hack/lab.sh load-image svctrace-image.tar     (hack/image.sh writes it; hack/lab.sh images lists them)"
	echo "kube-proxy off a node (its DaemonSet's affinity excludes the label), and back:"
	echo "  kubectl label node node1 lab.svctrace.dev/no-kube-proxy=true"
	echo "  kubectl label node node1 lab.svctrace.dev/no-kube-proxy-"
}

sockets() { # the nodes' names and containerd addresses, one "NAME SOCKET" a line
	paste -d' ' <(sed -n 's/^ *"name": "\(.*\)",$/\1/p' "$state/state.json") \
		<(sed -n 's/^ *"containerd": "\(.*\)"$/\1/p' "$state/state.json")
}

load_image() {
	[ $# -eq 1 ] && [ -f "$1" ] || die "usage: hack/lab.sh load-image FILE (an image archive, as docker save or hack/image.sh writes it)"
	running || die "no lab is up"
	local name sock
	while read -r name sock; do
		[ -n "$sock" ] || die "node $name: no containerd address in $state/state.json (a lab from an older hack/lab.sh: down and up again)"
		ctr --address "$sock" --namespace k8s.io images import "$1" >/dev/null || die "node $name: ctr images import $1 failed"
		echo "loaded $1 into node $name"
	done < <(sockets)
}

images() {
	running || die "no lab is up"
	local name sock
	while read -r name sock; do
		echo "node $name:"
		ctr --address "$sock" --namespace k8s.io images ls -q | grep -v '^sha256:' | sed 's/^/  /'
	done < <(sockets)
}

up() {
	local mode=iptables version="" nodes=2
	while [ $# -gt 0 ]; do
		case $1 in
		--proxy-mode) mode=$2; shift 2 ;;
		--proxy-mode=*) mode=${1#*=}; shift ;;
		--version) version=$2; shift 2 ;;
		--version=*) version=${1#*=}; shift ;;
		--nodes) nodes=$2; shift 2 ;;
		--nodes=*) nodes=${1#*=}; shift ;;
		*) die "up: unknown argument $1 (--proxy-mode iptables|nftables, --version 1.36.3, --nodes N)" ;;
		esac
	done
	case $mode in iptables | nftables) ;; *) die "--proxy-mode is iptables or nftables, not $mode" ;; esac
	[ -z "$version" ] || version=v${version#v}
	if running; then
		describe
		die "a lab is already up (hack/lab.sh down first)"
	fi
	need=()
	for tool in iptables nft conntrack ip containerd runc nsenter /usr/lib/cni/ptp; do
		command -v "$tool" >/dev/null 2>&1 || [ -x "$tool" ] || need+=("$tool")
	done
	if [ ${#need[@]} -gt 0 ] || ! ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1; then
		echo "== installing packages (missing: ${need[*]:-apt lists})"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq iptables nftables conntrack ipset iproute2 util-linux \
			containerd runc containernetworking-plugins >/dev/null
	fi
	echo "== building the lab's binaries (cached; minutes the first time)"
	bash test/tools/build.sh "$version" kube-apiserver etcd kube-proxy kubelet kube-controller-manager kube-scheduler kubectl
	rm -rf "$state"
	mkdir -p "$state"
	# The agent's backups go to /var/lib/svctrace (a hostPath, on this host's disk: the nodes
	# share it); down removes it if the lab made it.
	[ -e /var/lib/svctrace ] || touch "$state/made-var-lib-svctrace"
	CGO_ENABLED=0 go build -o "$state/labctl" ./test/lab/cmd/labctl
	echo "== starting the lab"
	args=(serve -state "$state" -proxy-mode "$mode" -nodes "$nodes" -api "${SVCTRACE_LAB_API:-127.0.0.1:6443}")
	[ -z "$version" ] || args+=(-version "$version")
	SVCTRACE_LAB_NO_BUILD=1 setsid "$state/labctl" "${args[@]}" >"$state/labctl.log" 2>&1 </dev/null &
	local pid=$!
	# Ctrl-C while the lab comes up takes it down again.
	trap 'echo "== interrupted: taking the lab down" >&2; down; exit 130' INT TERM
	for _ in $(seq 1 600); do
		if [ -f "$state/state.json" ] && grep -q '"ready": true' "$state/state.json"; then
			trap - INT TERM
			describe
			return 0
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			tail -n 40 "$state/labctl.log" >&2
			die "the lab did not come up (log: $state/labctl.log)"
		fi
		sleep 0.5
	done
	kill -TERM "$pid" 2>/dev/null || true
	die "the lab was not Ready after 5 minutes (log: $state/labctl.log)"
}

down() {
	if ! [ -f "$state/state.json" ]; then
		echo "no lab is up ($state/state.json missing)"
		return 0
	fi
	local pid prefix
	pid=$(field pid)
	prefix=$(field prefix)
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid"
		for _ in $(seq 1 240); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.5
		done
		if kill -0 "$pid" 2>/dev/null; then
			die "labctl (pid $pid) did not stop in 2 minutes; its log: $state/labctl.log"
		fi
	fi
	# What a lab leaves when its process dies without tearing down (CleanupStale's work).
	left=()
	if [ -n "$prefix" ]; then
		ip netns list | grep -q "^$prefix" && left+=("network namespaces $prefix*")
		ls /sys/fs/cgroup/*/ 2>/dev/null | grep -q "^$prefix" && left+=("cgroups $prefix*")
		grep -q "/$prefix" /proc/self/mountinfo && left+=("mounts under */$prefix*")
		pgrep -f "/$prefix" >/dev/null && left+=("processes naming $prefix")
		ls -d "${TMPDIR:-/tmp}/$prefix"* >/dev/null 2>&1 && left+=("directories ${TMPDIR:-/tmp}/$prefix*")
	fi
	if [ ${#left[@]} -gt 0 ]; then
		die "left behind: ${left[*]} (the log: $state/labctl.log)"
	fi
	if [ -f "$state/made-var-lib-svctrace" ]; then
		rm -rf /var/lib/svctrace
	fi
	rm -rf "$state"
	echo "lab down: no namespace, process, mount, cgroup or directory left"
}

case ${1:-} in
up) shift; up "$@" ;;
down) down ;;
load-image) shift; load_image "$@" ;;
images) images ;;
status)
	if running; then describe; else echo "no lab is up"; exit 1; fi
	;;
*) die "usage: hack/lab.sh up [--proxy-mode iptables|nftables] [--version 1.36.3] [--nodes N] | status | load-image FILE | images | down" ;;
esac
