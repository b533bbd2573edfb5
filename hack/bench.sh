#!/usr/bin/env bash
# Benchmarks at node scale, reported as ratios against a baseline measured
# in the same run: parsing and walking a generated kube-proxy ruleset
# (iptables) of 10,000 Services x 10 endpoints against 1,000 x 10; as
# root, the conntrack dump against conntrack -L and the nftables netlink
# read against nft -j.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(go test ./plugins/iptables/ -run XXX -bench 'Parse|Observe' -benchmem -benchtime "${BENCHTIME:-3x}" -timeout 30m)
echo "$out" | grep -E '^(goos|goarch|cpu|Benchmark)'
echo "$out" | awk '
	/^BenchmarkParse1k/   { p1 = $3 }
	/^BenchmarkParse-/    { p10 = $3 }
	/^BenchmarkObserve1k/ { o1 = $3 }
	/^BenchmarkObserve10k/{ o10 = $3 }
	END {
		printf "\nparse:   10k services %.2f s, 1k services %.3f s: ratio %.1f for 10x the rules\n", p10/1e9, p1/1e9, p10/p1
		printf "observe: 10k services %.2f s, 1k services %.3f s: ratio %.1f for 10x the frontends\n", o10/1e9, o1/1e9, o10/o1
	}'

# conntrack at scale: 100,000 entries in a network namespace of its own
# (root), read by svctrace's streaming netlink dump and by conntrack -L in
# the same run, then correlated with Services.
if [ "$(id -u)" = 0 ] && command -v conntrack >/dev/null 2>&1; then
	echo
	go test -tags bench ./conntrack/ -run TestDumpVersusConntrackCLI -count=1 -v |
		sed -n '/method (best of 3)/,/^$/p' | sed 's/^ *//'
	go test ./analysis/ -run XXX -bench Correlate100k -benchmem -benchtime 3x | grep '^Benchmark'
else
	echo "conntrack benchmark skipped: needs root and the conntrack tool"
fi

# The nftables ruleset of 1,000 and 10,000 Services, loaded into a network
# namespace of its own (root), read over netlink; x-nft-j is the read's
# time over `nft -j list ruleset` of the same namespace, in the same run.
if [ "$(id -u)" = 0 ] && command -v nft >/dev/null 2>&1; then
	echo
	go test ./plugins/nftables/ -run XXX -bench ReadKernel -benchmem -benchtime "${BENCHTIME:-3x}" -timeout 30m | grep '^Benchmark'
else
	echo "nftables netlink benchmark skipped: needs root and nft"
fi

# kube-proxy's iptables rules of 1,000 and 10,000 Services, restored into a
# network namespace of its own (root) on the legacy backend, read from the
# kernel; x-save is the read's time over iptables-legacy-save of the same
# namespace, in the same run.
if [ "$(id -u)" = 0 ] && command -v iptables-legacy-save >/dev/null 2>&1; then
	echo
	go test ./plugins/iptables/ -run XXX -bench ReadLegacy -benchmem -benchtime "${BENCHTIME:-3x}" -timeout 30m | grep '^Benchmark'
else
	echo "iptables legacy read benchmark skipped: needs root and iptables-legacy-save"
fi

# The node agent's repeated work on the same namespaces: read kube-proxy's
# rules of a generated node of 1,000 and 10,000 Services from the kernel and
# check every Service, the API objects in memory; x-save and rss-x-save are
# its time and peak RSS over iptables-legacy-save's, in the same run (the
# goals: 1.5 and 2).
if [ "$(id -u)" = 0 ] && command -v iptables-legacy-save >/dev/null 2>&1; then
	echo
	go test ./analysis/ -run XXX -bench ReadAnalyze -benchmem -benchtime "${BENCHTIME:-3x}" -timeout 30m | grep '^Benchmark'
else
	echo "read and analysis benchmark skipped: needs root and iptables-legacy-save"
fi
