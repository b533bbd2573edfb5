#!/usr/bin/env bash
# Fleet-scale benchmark (issue 37): drift --all-nodes over N nodes. A lab API server (the real
# kube-apiserver) holds N Nodes and an agent Pod on each; N real agent APIs (nodeapi, the real
# Auth against that API server, each with its own certificate and connection) run in one
# process in the control plane's namespace; the real CLI binary reads them all. The report
# gives the wall time and the API server's own counts of requests and bytes (its /metrics
# before and after), the CLI's apart from the agents' reviews, per node, beside two baselines
# measured in the same run. TestFleet in test/e2e/fleet_test.go does the work.
#
# Needs root (network namespaces) and the lab's binaries (test/tools/build.sh; built on first
# use unless SVCTRACE_LAB_NO_BUILD=1), and tmux. Exits 0 when the run passed its checks (every
# node read, the CLI's requests independent of N), non-zero otherwise.
#
# Environment (defaults in brackets):
#   SVCTRACE_FLEET_NODES    nodes [1000]
#   SVCTRACE_FLEET_REPORT   also write the report (Markdown) to this file
#   SVCTRACE_FLEET_TIMEOUT  go test -timeout [30m]
#   SVCTRACE_FLEET_PROFILE_DIR  also write a CPU profile of drift --all-nodes here (a run of its own)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
	echo "hack/bench-fleet.sh: run as root (the lab uses network namespaces)" >&2
	exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The version measured is the one built now: the tree may change during the run.
built="$(git describe --always --dirty 2>/dev/null || echo unknown)"
echo "== building kubectl-svctrace ($built)"
go build -o "$work/kubectl-svctrace" ./cmd/kubectl-svctrace

export SVCTRACE_FLEET_BIN="$work/kubectl-svctrace"
export SVCTRACE_FLEET_NODES="${SVCTRACE_FLEET_NODES:-1000}"
report="${SVCTRACE_FLEET_REPORT:-$work/report.md}"
export SVCTRACE_FLEET_REPORT="$report"
# A lab problem (no binaries, no root) fails instead of skipping, so a skipped run never
# passes for a measured one.
export CI="${CI:-true}"
if [ -n "${SVCTRACE_FLEET_PROFILE_DIR:-}" ]; then
	mkdir -p "$SVCTRACE_FLEET_PROFILE_DIR"
	SVCTRACE_FLEET_PROFILE_DIR=$(cd "$SVCTRACE_FLEET_PROFILE_DIR" && pwd)
	export SVCTRACE_FLEET_PROFILE_DIR
fi

echo "== benchmark: $SVCTRACE_FLEET_NODES nodes"
status=0
go test ./test/e2e -run '^TestFleet$' -count=1 -v -timeout "${SVCTRACE_FLEET_TIMEOUT:-30m}" >"$work/test.log" 2>&1 || status=$?
grep -E '^(=== RUN|--- |    fleet_test.go|PASS|FAIL|ok )' "$work/test.log" || true
if [ "$status" = 0 ] && ! grep -q '^--- PASS: TestFleet' "$work/test.log"; then
	echo "hack/bench-fleet.sh: TestFleet did not pass" >&2
	status=1
fi
if [ "$status" != 0 ]; then
	tail -n 80 "$work/test.log" >&2
fi

echo
echo "== svctrace $built, $(go version | cut -d' ' -f3), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
if [ -s "$report" ]; then
	cat "$report"
else
	echo "no report: the benchmark failed before it finished" >&2
fi
exit "$status"
