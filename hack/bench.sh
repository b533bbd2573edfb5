#!/usr/bin/env bash
# Benchmarks of the iptables data plane at node scale, reported as ratios
# against a baseline measured in the same run: parsing and walking a
# generated kube-proxy ruleset of 10,000 Services x 10 endpoints against
# 1,000 x 10.
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
