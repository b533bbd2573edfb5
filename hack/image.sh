#!/usr/bin/env bash
# Builds the svctrace container image (the static binary and Debian's kernel tools) without a
# Docker engine, reproducibly: the same commit and Debian package versions give the same
# digest. Needs Go and apt (Debian or Ubuntu, the image takes that release's packages).
#
#   hack/image.sh                                   # writes svctrace-image.tar
#   hack/image.sh -push registry.example/svctrace:v0.1.0
#   hack/image.sh -version v0.1.0 -o /tmp/svctrace.tar
#
# Load the archive with `docker load -i svctrace-image.tar` or
# `ctr -n k8s.io images import svctrace-image.tar`; -push uses ~/.docker/config.json.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1; then
	echo "== apt-get update (the image takes its tools from Debian packages)"
	apt-get update -qq
fi
exec go run ./hack/image "$@"
