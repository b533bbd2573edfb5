#!/usr/bin/env bash
# Node-scale benchmark (issue 9): on a lab node with the real kube-proxy, N Services of 10
# endpoints, each command's wall time and peak RSS beside the kernel's own dump, kube-proxy's
# own full sync and listing the objects from the API, in one run, with the goals' ratios; then
# the node agent at rest (issue 37): the real agent with deploy/agent.yaml's flags, its CPU and
# RSS over an idle window beside kube-proxy's CPU and the dump's RSS, and how soon it shows a
# rule deleted in the kernel as drift.
# TestBenchNode in test/e2e/benchnode_test.go does the work (build tag benchnode).
#
# Needs root (network namespaces, netfilter) and the lab's binaries (test/tools/build.sh;
# built on first use unless SVCTRACE_LAB_NO_BUILD=1). Exits 0 when every measurement was taken,
# whether or not the goals are met (the report says which); non-zero when one failed.
#
# Environment (defaults in brackets):
#   SVCTRACE_BENCH_SIZES      Services per run [1000,10000]
#   SVCTRACE_BENCH_MODES      kube-proxy modes [iptables,nftables]; iptables runs on the legacy backend
#   SVCTRACE_BENCH_ENDPOINTS  endpoints per Service [10]
#   SVCTRACE_BENCH_WORKERS    API requests in flight while creating the objects [8]
#   SVCTRACE_BENCH_FULL_SYNCS kube-proxy full syncs forced and averaged [2]
#   SVCTRACE_BENCH_REPEAT     runs of each command, the fastest kept [1]
#   SVCTRACE_BENCH_TIMEOUT    go test -timeout [60m]
#   SVCTRACE_BENCH_REPORT     also write the report (Markdown tables) to this file
#   SVCTRACE_BENCH_SNAPSHOT_EXT  extension of the snapshot collect writes (.snap, .yaml, .json) [none: the default format]
#   SVCTRACE_BENCH_PROFILE_DIR   also write CPU profiles of drift --local and explain here (runs of their own)
#   SVCTRACE_BENCH_IDLE       the agent's idle window, a Go duration; 0 leaves the agent out [120s]
#   SVCTRACE_BENCH_AGENT_ONLY 1: measure only the dump, kube-proxy's full sync and the agent at rest [0]
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
	echo "hack/bench-node.sh: run as root (the lab uses network namespaces and netfilter)" >&2
	exit 2
fi

# GNU time measures each command's peak RSS (see benchnode_measure_test.go).
if [ ! -x /usr/bin/time ]; then
	echo "== installing GNU time"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The version measured is the one built now: the tree may change during the run.
built="$(git describe --always --dirty 2>/dev/null || echo unknown)"
echo "== building kubectl-svctrace ($built)"
go build -o "$work/kubectl-svctrace" ./cmd/kubectl-svctrace

export SVCTRACE_BENCH_BIN="$work/kubectl-svctrace"
export SVCTRACE_BENCH_SIZES="${SVCTRACE_BENCH_SIZES:-1000,10000}"
export SVCTRACE_BENCH_MODES="${SVCTRACE_BENCH_MODES:-iptables,nftables}"
export SVCTRACE_BENCH_ENDPOINTS="${SVCTRACE_BENCH_ENDPOINTS:-10}"
report="${SVCTRACE_BENCH_REPORT:-$work/report.md}"
if [ -n "${SVCTRACE_BENCH_PROFILE_DIR:-}" ]; then
	mkdir -p "$SVCTRACE_BENCH_PROFILE_DIR"
	SVCTRACE_BENCH_PROFILE_DIR=$(cd "$SVCTRACE_BENCH_PROFILE_DIR" && pwd)
	export SVCTRACE_BENCH_PROFILE_DIR
fi
export SVCTRACE_BENCH_REPORT="$report"
# A lab problem (no binaries, no root) fails instead of skipping, so a skipped run never
# passes for a measured one.
export CI="${CI:-true}"

echo "== benchmark: sizes $SVCTRACE_BENCH_SIZES, modes $SVCTRACE_BENCH_MODES, $SVCTRACE_BENCH_ENDPOINTS endpoints per Service"
status=0
go test -tags benchnode ./test/e2e -run '^TestBenchNode$' -count=1 -v \
	-timeout "${SVCTRACE_BENCH_TIMEOUT:-60m}" 2>&1 | tee "$work/test.log" || status=$?
if [ "$status" = 0 ] && ! grep -q '^--- PASS: TestBenchNode' "$work/test.log"; then
	echo "hack/bench-node.sh: TestBenchNode did not pass" >&2
	status=1
fi

echo
echo "== svctrace $built, $(go version | cut -d' ' -f3)"
if [ -s "$report" ]; then
	cat "$report"
else
	echo "no report: the benchmark failed before it finished" >&2
fi
exit "$status"
