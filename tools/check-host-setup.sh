#!/usr/bin/env bash
# Prove the host set-up on a machine where nothing was set up before: in a throw-away container of the clean
# amd64 test image (Debian 12 minbase), run host-setup.sh's package step, then its --verify step, which runs every
# external command the tooling calls. A tool that the developer's machine has only from earlier work fails here.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
image=localhost/debian-amd64-ci:bookworm

podman image exists "$image" || { echo "check-host-setup: $image is missing: run make images" >&2; exit 1; }
podman run --rm --network host --volume "$repo/tools:/tooling:ro" "$image" \
  bash -c '/tooling/host-setup.sh --packages && /tooling/host-setup.sh --verify'
