#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs the kernel tools the
# tests drive, builds the lab's Kubernetes binaries (cached), checks
# formatting and static analysis, and runs every test, the lab included.
# Needs root (network namespaces, netfilter). Under CI=true no test skips.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
	echo "hack/test-all.sh: run as root (the lab uses network namespaces and netfilter)" >&2
	exit 2
fi

need=()
for tool in iptables nft conntrack ipset ipvsadm ip containerd runc nsenter tmux qemu-system-x86_64 depmod /etc/protocols /usr/lib/cni/ptp; do
	command -v "$tool" >/dev/null 2>&1 || [ -e "$tool" ] || need+=("$tool")
done
# Images take the kernel tools from Debian packages (apt-get download): apt needs its lists.
if ! ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1; then
	need+=("apt lists")
fi
if [ ${#need[@]} -gt 0 ]; then
	# The lab's nodes that run Pods need containerd, runc and the CNI plugins; the
	# terminal UI's end-to-end test drives the binary in tmux; the IPVS node is a qemu VM
	# whose modules kmod indexes (its kernel and busybox are downloaded, not installed).
	echo "== installing kernel and node tools (missing: ${need[*]})"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq iptables nftables conntrack ipset ipvsadm iproute2 util-linux \
		containerd runc containernetworking-plugins tmux qemu-system-x86 kmod netbase >/dev/null
fi

# Each kube-proxy release the lab proves svctrace against (test/tools/releases.txt), built in
# the background from here on: its module downloads wait on the network, not the CPU, and the
# tests that run a release wait for its build (build.sh's lock) or build it themselves.
echo "== kube-proxy of each release of test/tools/releases.txt (cached; in the background)"
releases_log=$(mktemp)
(
	set -e
	for v in $(awk '!/^#/ && NF {print $1}' test/tools/releases.txt); do
		bash test/tools/build.sh "$v" kube-proxy
	done
) >"$releases_log" 2>&1 &
releases_pid=$!

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change: $unformatted" >&2
	exit 1
fi

echo "== go mod tidy"
if ! tidy=$(go mod tidy -diff 2>&1); then
	echo "go.mod or go.sum is not tidy (run go mod tidy):" >&2
	echo "$tidy" >&2
	exit 1
fi

echo "== go vet"
go vet ./...

echo "== staticcheck"
if ! command -v staticcheck >/dev/null 2>&1 && [ ! -x "$(go env GOPATH)/bin/staticcheck" ]; then
	go install honnef.co/go/tools/cmd/staticcheck@latest
fi
"$(command -v staticcheck || echo "$(go env GOPATH)/bin/staticcheck")" ./...

echo "== lab binaries (kube-apiserver, kube-proxy, etcd, and for nodes that run Pods kubelet, kube-controller-manager, kube-scheduler, kubectl; cached)"
bash test/tools/build.sh
bash test/tools/build.sh "" kubelet kube-controller-manager kube-scheduler kubectl

echo "== benchmarks, once each (they must keep compiling and running; hack/bench.sh measures)"
go test -run '^$' -bench . -benchtime 1x -timeout 30m ./...

echo "== go test"
status=0
go test -count=1 -timeout 70m ./... || status=$?

echo "== the releases' kube-proxy builds"
if ! wait "$releases_pid"; then
	cat "$releases_log" >&2
	echo "building the releases' kube-proxy failed" >&2
	status=1
fi
grep -E '^build.sh: (built|nothing|built meanwhile)' "$releases_log" || true
rm -f "$releases_log"
exit "$status"
